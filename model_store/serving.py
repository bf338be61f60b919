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

from pathlib import Path

import torch
from torch import nn

from .checkpoint import ModelCard


class ServingHead(nn.Module):
    def __init__(self, model: nn.Module, card: ModelCard, path: str | Path | None = None) -> None:
        super().__init__()
        self.model = model
        self.mean = float(card.preprocessing.mean)
        self.std = float(card.preprocessing.std)
        self.num_classes = len(card.labels)
        self.register_buffer("temperature", torch.ones(()), persistent=False)
        # Score at or above which a picture counts as a digit; None: this checkpoint has no statistics.
        self.digit_threshold: float | None = None

    def normalize(self, x: torch.Tensor) -> torch.Tensor:
        return (x - self.mean) / self.std

    def head(self, logits: torch.Tensor) -> torch.Tensor:
        """Logits (B, C) -> (B, C + 1): calibrated probabilities and the digit score."""
        probs = torch.softmax(logits.float() / self.temperature, dim=-1)
        score = probs.max(dim=-1, keepdim=True).values
        return torch.cat([probs, score], dim=-1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.model(self.normalize(x)))

    def forward_with_attention(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """ViTs only: (B, C + 1) as ``forward`` and the attention weights (B, L, H, T, T)."""
        logits, attn = self.model.forward_with_attention(self.normalize(x))
        return self.head(logits), attn


def resolve_device(setting: str = "auto") -> torch.device:
    """``auto`` -> cuda when available, else cpu; ``cuda``/``cuda:N`` without CUDA is an error."""
    if setting == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(setting)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(f"device {setting!r} asked for, but CUDA is not available on this machine")
    return device
