"""What a stored model looks like to a server: one module from 0..1 pixels to calibrated answers.

``ServingHead(model, card, path)`` wraps a loaded model so that a server needs nothing else:

    x (B, 1, H, W) float32 in 0..1, white ink on black  ->  (B, C + 1) float32
        [:, :C]  calibrated class probabilities (softmax of logits / temperature)
        [:, C]   digit score: higher = looks more like a digit (see ``digit_threshold``)

Normalisation, temperature and the "is it a digit" statistics live here, read from the checkpoint
directory, so that the server, the benchmarks and the training evaluation all use the same numbers.
A checkpoint without calibration data is served uncalibrated (temperature 1) with no threshold.
"""

from __future__ import annotations

import logging
from pathlib import Path

import torch
from torch import nn

from .calibration import Calibration, digit_score, load_calibration
from .checkpoint import CheckpointError, ModelCard
from .digit_detector import DETECTOR_KEYS, layer_summaries

log = logging.getLogger(__name__)

BLANK = 0.5 / 255  # an input whose pixels all stay at or under this (0..1) shows nothing
BLANK_SCORE = -1.0e4  # its digit score: far under any checkpoint's threshold

# What each digit score is, for people reading an answer (API docs, the page).
SCORE_DESCRIPTIONS = {
    "detector": "the logit of a small network on the model's layer activations, fitted on training "
    "digits against generated non-digits (letters, symbols, shapes, scribbles, noise, several digits, "
    "smudges, shaded object silhouettes)",
    "mahalanobis": "minus the Mahalanobis distance of the model's features to the nearest digit class "
    "(standard deviations; Lee et al. 2018)",
    "energy": "logsumexp of the logits (Liu et al. 2020)",
    "max_softmax": "the top calibrated probability",
}


class ServingHead(nn.Module):
    def __init__(self, model: nn.Module, card: ModelCard, path: str | Path | None = None) -> None:
        super().__init__()
        self.model = model
        self.mean = float(card.preprocessing.mean)
        self.std = float(card.preprocessing.std)
        self.num_classes = len(card.labels)
        calib = load_calibration(path, card) if path is not None else None
        if calib is None and path is not None:  # no path: the caller asked for the raw model
            log.warning(
                "%s has no calibration data: served uncalibrated (temperature 1) and without an "
                "is-a-digit threshold; run `python -m training calibrate %s` to add it",
                card.name,
                card.name,
            )
        calib = calib or Calibration()
        self.calibration = calib
        # Fixed per checkpoint, so forward has no data-dependent branch (traceable, CUDA-graphable).
        self.method = calib.method
        self._summarise = calib.method == "detector"  # only the detector reads the hidden layers
        self.method_description = SCORE_DESCRIPTIONS[calib.method]
        self.register_buffer("temperature", torch.tensor(float(calib.temperature)), persistent=False)
        # Two distinct empty tensors: one shared tensor would break TorchScript tracing.
        self.register_buffer("whitened_means", calib.whitened_means if calib.whitened_means is not None
                             else torch.zeros(0), persistent=False)  # fmt: skip
        self.register_buffer("whitening", calib.whitening if calib.whitening is not None else torch.zeros(0),
                             persistent=False)  # fmt: skip
        for key in DETECTOR_KEYS:  # "detector.w1" -> buffer detector_w1
            tensor = calib.detector[key] if calib.detector is not None else torch.zeros(0)
            self.register_buffer(key.replace(".", "_"), tensor.float().clone(), persistent=False)
        # Score at or above which a picture counts as a digit; None: this checkpoint has no statistics.
        self.digit_threshold: float | None = calib.threshold
        if self.method == "detector":
            self._check_detector_width(card.name)

    def _check_detector_width(self, name: str) -> None:
        width = self.detector_w1.shape[1]
        p = next(self.model.parameters())
        with torch.no_grad():
            summary = layer_summaries(self.model, torch.zeros(1, *self._input_shape(), device=p.device))[2]
        if summary.shape[1] != width:
            raise CheckpointError(
                f"{name}: the digit detector expects {width} layer summaries, the model "
                f"gives {summary.shape[1]}; rerun `python -m training calibrate {name}`"
            )

    def _input_shape(self) -> tuple[int, int, int]:
        cfg = self.model.cfg
        return (cfg.in_channels, cfg.image_size, cfg.image_size)

    def normalize(self, x: torch.Tensor) -> torch.Tensor:
        return (x - self.mean) / self.std

    def layers(
        self, x: torch.Tensor, return_attention: bool = False, summarise: bool = True
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, list[torch.Tensor]]:
        """Normalised pixels -> penultimate features (B, D), logits, layer summaries (B, S), attention
        (``summarise=False``: summaries (B, 0), the hidden layers not read)."""
        return layer_summaries(self.model, x, return_attention, summarise)

    def head(self, features: torch.Tensor, logits: torch.Tensor, summary: torch.Tensor) -> torch.Tensor:
        """Features, logits, layer summaries -> (B, C + 1): calibrated probabilities and the digit score."""
        probs = torch.softmax(logits.float() / self.temperature, dim=-1)
        score = digit_score(
            self.method, features=features, logits=logits, summaries=summary, probs=probs,
            whitened_means=self.whitened_means, whitening=self.whitening,
            detector=(self.detector_w1, self.detector_b1, self.detector_w2, self.detector_b2),
        )  # fmt: skip
        return torch.cat([probs, score[:, None]], dim=-1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        features, logits, summary, _ = self.layers(self.normalize(x), summarise=self._summarise)
        return self._blank_is_no_digit(self.head(features, logits, summary), x)

    def forward_with_attention(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """ViTs only: (B, C + 1) as ``forward`` and the attention weights (B, L, H, T, T)."""
        features, logits, summary, attentions = self.layers(
            self.normalize(x), return_attention=True, summarise=self._summarise
        )
        out = self._blank_is_no_digit(self.head(features, logits, summary), x)
        return out, torch.stack(attentions, dim=1)

    @staticmethod
    def _blank_is_no_digit(out: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """A blank input (no pixel above BLANK: a tensor sent as it is, which no preprocessing refused as
        empty) gets BLANK_SCORE, far under any threshold: the detector was never fitted on nothing."""
        blank = x.flatten(1).amax(dim=1) <= BLANK
        score = torch.where(blank, torch.full_like(out[:, -1], BLANK_SCORE), out[:, -1])
        return torch.cat([out[:, :-1], score[:, None]], dim=-1)


def resolve_device(setting: str = "auto") -> torch.device:
    """``auto`` -> cuda when available, else cpu; ``cuda``/``cuda:N`` without CUDA is an error."""
    if setting == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(setting)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(f"device {setting!r} asked for, but CUDA is not available on this machine")
    return device
