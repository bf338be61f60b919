"""Calibration data kept beside a checkpoint's weights: temperature and the "is it a digit" statistics.

Two files in the checkpoint directory, each verified by the sha256 that the card records in
``card.calibration["files"]`` (as the weights are by ``weights_sha256``):

    calibration.json   temperature, digit-score method and threshold, and the measurements behind them
    ood.safetensors    tensors of the digit score: the detector MLP's weights, or whitened class means
                       and the whitening matrix

Digit scores (higher = more digit-like), all pure tensor functions of one forward pass:

    detector      the logit of a two-layer MLP on summaries of every layer (``digit_detector.py``),
                  fitted on training digits against generated outliers (Hendrycks et al. 2019's outlier
                  exposure, applied to a head on frozen features)
    mahalanobis   minus the Mahalanobis distance of the features to the nearest class mean, under one
                  covariance shared by the classes (Lee et al. 2018), fitted on training features
    energy        T * logsumexp(logits / T) (Liu et al. 2020), T = 1
    max_softmax   the top calibrated probability (Hendrycks & Gimpel 2017): the fallback
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file

from .card import CARD_FILE, CheckpointError, ModelCard, read_card, sha256_file
from .digit_detector import DETECTOR_KEYS, detector_score

CALIBRATION_FILE = "calibration.json"
OOD_FILE = "ood.safetensors"
METHODS = ("detector", "mahalanobis", "energy", "max_softmax")


@dataclass
class Calibration:
    temperature: float = 1.0
    method: str = "max_softmax"  # one of METHODS
    threshold: float | None = None  # is_digit = score >= threshold; None: no statistics
    # mahalanobis only: class means and the whitening W (P = W^T W, P the shared precision matrix),
    # kept whitened so that serving is two matmuls: d_c = |W f - W mu_c|^2.
    whitened_means: torch.Tensor | None = None  # (C, D)
    whitening: torch.Tensor | None = None  # (D, D)
    # detector only: the MLP, standardisation folded in (keys: digit_detector.DETECTOR_KEYS)
    detector: dict[str, torch.Tensor] | None = None
    metrics: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"unknown digit-score method {self.method!r}; choose from {METHODS}")
        if not (self.temperature > 0):
            raise ValueError(f"temperature must be > 0, got {self.temperature}")
        if self.method == "mahalanobis" and (self.whitened_means is None or self.whitening is None):
            raise ValueError("the mahalanobis score needs whitened_means and whitening")
        if self.method == "detector" and (self.detector is None or set(self.detector) != set(DETECTOR_KEYS)):
            raise ValueError(f"the detector score needs the tensors {DETECTOR_KEYS}")

    def to_json(self) -> dict[str, Any]:
        return {
            "temperature": self.temperature,
            "method": self.method,
            "threshold": self.threshold,
            "metrics": self.metrics,
        }


def whitening_from_covariance(cov: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """W with W^T W = (cov + eps I)^-1, from the eigendecomposition (cov is symmetric PSD)."""
    cov = cov.double()
    cov = (cov + cov.T) / 2 + eps * cov.diagonal().mean() * torch.eye(len(cov), dtype=cov.dtype)
    vals, vecs = torch.linalg.eigh(cov)
    return (vecs / vals.clamp_min(1e-12).sqrt()).T.float()  # (D, D): rows are scaled eigenvectors


def fit_mahalanobis(
    features: torch.Tensor, labels: torch.Tensor, num_classes: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Class means and one shared covariance (Lee et al. 2018) -> (whitened_means (C, D), W (D, D))."""
    features = features.double()
    means = torch.stack([features[labels == c].mean(0) for c in range(num_classes)])  # (C, D)
    centred = features - means[labels]
    cov = centred.T @ centred / len(features)
    w = whitening_from_covariance(cov)
    return means.float() @ w.T, w


def mahalanobis_score(
    features: torch.Tensor, whitened_means: torch.Tensor, whitening: torch.Tensor
) -> torch.Tensor:
    """(B, D) -> (B,): minus the distance to the nearest class mean, in standard deviations."""
    z = features.float() @ whitening.T  # (B, D)
    # Differences, not |z|^2 - 2 z.m + |m|^2: that expansion cancels badly far from the means.
    d2 = (z[:, None, :] - whitened_means[None]).pow(2).sum(-1)  # (B, C)
    return -d2.min(dim=-1).values.sqrt()


def energy_score(logits: torch.Tensor) -> torch.Tensor:
    return torch.logsumexp(logits.float(), dim=-1)


def digit_score(
    method: str,
    *,
    features: torch.Tensor,
    logits: torch.Tensor,
    summaries: torch.Tensor,
    probs: torch.Tensor,
    whitened_means: torch.Tensor | None = None,
    whitening: torch.Tensor | None = None,
    detector: tuple[torch.Tensor, ...] | None = None,
) -> torch.Tensor:
    """(B,) digit score of ``method`` from one forward pass: penultimate features (B, D), logits and
    calibrated probabilities (B, C), layer summaries (B, S); the method's own tensors (the detector's
    in ``DETECTOR_KEYS`` order). The one dispatch, for serving and for fitting the threshold."""
    if method == "detector":
        return detector_score(summaries, *detector)
    if method == "mahalanobis":
        return mahalanobis_score(features, whitened_means, whitening)
    if method == "energy":
        return energy_score(logits)
    return probs.max(dim=-1).values


# ---------------------------------------------------------------------------------------- files


def save_calibration(
    directory: str | os.PathLike, calib: Calibration, command: str, card: ModelCard | None = None
) -> ModelCard:
    """Write both files, record their sha256, a summary and ``command`` in the card; returns the card.

    Each file is written to a temp name and renamed, and the card last: a reader sees either the old
    calibration or the new one, never a card that points at half-written files.
    """
    directory = Path(directory)
    card = card or read_card(directory)
    tensors = {k: v.contiguous() for k, v in (calib.detector or {}).items()}
    if calib.whitened_means is not None and calib.whitening is not None:
        tensors["whitened_means"] = calib.whitened_means.contiguous()
        tensors["whitening"] = calib.whitening.contiguous()
    files = {CALIBRATION_FILE: None, OOD_FILE: None} if tensors else {CALIBRATION_FILE: None}
    for name in files:
        tmp = directory / f".{name}.tmp"
        if name == OOD_FILE:
            save_file(tensors, str(tmp), metadata={"method": calib.method})
        else:
            tmp.write_text(json.dumps(calib.to_json(), indent=2) + "\n")
        tmp.chmod(0o644)
        files[name] = sha256_file(tmp)
        tmp.replace(directory / name)
    if not tensors:
        (directory / OOD_FILE).unlink(missing_ok=True)
    card.calibration = {
        "files": files,
        "temperature": calib.temperature,
        "method": calib.method,
        "threshold": calib.threshold,
        "command": command,
    }
    tmp = directory / f".{CARD_FILE}.tmp"
    tmp.write_text(json.dumps(card.to_dict(), indent=2) + "\n")
    tmp.chmod(0o644)
    tmp.replace(directory / CARD_FILE)
    return card


def load_calibration(directory: str | os.PathLike, card: ModelCard) -> Calibration | None:
    """The checkpoint's calibration, verified against the card; None when it has none (old card).

    A card that lists files which are missing or do not match their sha256 is refused, like weights.
    """
    if not card.calibration:
        return None
    directory = Path(directory)
    files = card.calibration.get("files")
    if not isinstance(files, dict) or CALIBRATION_FILE not in files:
        raise CheckpointError(f"{directory}: card.calibration has no files entry for {CALIBRATION_FILE}")
    for name, expected in files.items():
        if name not in (CALIBRATION_FILE, OOD_FILE):
            raise CheckpointError(f"{directory}: card.calibration lists an unknown file {name!r}")
        path = directory / name
        if not path.is_file():
            raise CheckpointError(f"{path}: calibration file not found")
        actual = sha256_file(path)
        if actual != expected:
            raise CheckpointError(
                f"{path}: sha256 mismatch (card says {expected}, file is {actual}); "
                "refusing to load tampered or corrupted calibration"
            )
    try:
        data = json.loads((directory / CALIBRATION_FILE).read_text())
        tensors = load_file(str(directory / OOD_FILE)) if OOD_FILE in files else {}
        return Calibration(
            temperature=float(data["temperature"]),
            method=data["method"],
            threshold=None if data.get("threshold") is None else float(data["threshold"]),
            whitened_means=tensors.get("whitened_means"),
            whitening=tensors.get("whitening"),
            detector={k: tensors[k] for k in DETECTOR_KEYS if k in tensors} or None,
            metrics=data.get("metrics", {}),
        )
    except (KeyError, TypeError, ValueError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"{directory}: calibration data is malformed: {exc}") from exc


__all__ = [
    "CALIBRATION_FILE",
    "METHODS",
    "OOD_FILE",
    "Calibration",
    "energy_score",
    "fit_mahalanobis",
    "load_calibration",
    "mahalanobis_score",
    "save_calibration",
    "whitening_from_covariance",
]
