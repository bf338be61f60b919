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

from .calibration import Calibration, energy_score, load_calibration, mahalanobis_score
from .checkpoint import ModelCard
from .vit import ViT

log = logging.getLogger(__name__)

# What each digit score is, for people reading an answer (API docs, the page).
SCORE_DESCRIPTIONS = {
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
        self.method_description = SCORE_DESCRIPTIONS[calib.method]
        self.register_buffer("temperature", torch.tensor(float(calib.temperature)), persistent=False)
        # Two distinct empty tensors: one shared tensor would break TorchScript tracing.
        self.register_buffer("whitened_means", calib.whitened_means if calib.whitened_means is not None
                             else torch.zeros(0), persistent=False)  # fmt: skip
        self.register_buffer("whitening", calib.whitening if calib.whitening is not None else torch.zeros(0),
                             persistent=False)  # fmt: skip
        # Score at or above which a picture counts as a digit; None: this checkpoint has no statistics.
        self.digit_threshold: float | None = calib.threshold
        self._is_vit = isinstance(model, ViT)

    def normalize(self, x: torch.Tensor) -> torch.Tensor:
        return (x - self.mean) / self.std

    def features_and_logits(
        self, x: torch.Tensor, return_attention: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor, list[torch.Tensor]]:
        """Normalised pixels -> features (B, D) the digit score is measured on, logits, attention."""
        if self._is_vit:
            tokens, attentions = self.model.forward_features(x, return_attention)
            return tokens[:, 0], self.model.forward_head(tokens), attentions
        features = self.model.forward_features(x)
        return features, self.model.forward_head(features), []

    def head(self, features: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
        """Features and logits -> (B, C + 1): calibrated probabilities and the digit score."""
        probs = torch.softmax(logits.float() / self.temperature, dim=-1)
        if self.method == "mahalanobis":
            score = mahalanobis_score(features, self.whitened_means, self.whitening)
        elif self.method == "energy":
            score = energy_score(logits)
        else:
            score = probs.max(dim=-1).values
        return torch.cat([probs, score[:, None]], dim=-1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        features, logits, _ = self.features_and_logits(self.normalize(x))
        return self.head(features, logits)

    def forward_with_attention(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """ViTs only: (B, C + 1) as ``forward`` and the attention weights (B, L, H, T, T)."""
        features, logits, attentions = self.features_and_logits(self.normalize(x), return_attention=True)
        return self.head(features, logits), torch.stack(attentions, dim=1)


def resolve_device(setting: str = "auto") -> torch.device:
    """``auto`` -> cuda when available, else cpu; ``cuda``/``cuda:N`` without CUDA is an error."""
    if setting == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(setting)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(f"device {setting!r} asked for, but CUDA is not available on this machine")
    return device
