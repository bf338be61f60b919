"""Convolutional baselines for 28x28 digits."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal

import torch
from torch import nn


@dataclass(frozen=True)
class CNNConfig:
    # "baseline": the classic Keras/PyTorch MNIST example,
    #   conv 32 -> conv 64 -> max-pool -> dropout -> fc 128 -> dropout -> fc 10.
    # "bn": two VGG-style blocks with batch norm (conv-bn-relu x2, pool) -> fc 256 -> fc 10.
    variant: Literal["baseline", "bn"] = "baseline"
    image_size: int = 28
    in_channels: int = 1
    num_classes: int = 10
    width: int = 32  # channels of the first conv; the second stage doubles it
    hidden: int = 128
    dropout: float = 0.25
    head_dropout: float = 0.5

    def __post_init__(self) -> None:
        if self.variant not in ("baseline", "bn"):
            raise ValueError(f"CNN variant must be 'baseline' or 'bn', not {self.variant!r}")
        if self.variant == "bn" and self.image_size % 4:
            raise ValueError("the 'bn' variant pools twice: image_size must be divisible by 4")

    def to_dict(self) -> dict:
        return {"arch": "cnn", **asdict(self)}


def _conv_bn(c_in: int, c_out: int) -> list[nn.Module]:
    return [nn.Conv2d(c_in, c_out, 3, padding=1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU()]


class CNN(nn.Module):
    def __init__(self, cfg: CNNConfig):
        super().__init__()
        self.cfg = cfg
        w = cfg.width
        if cfg.variant == "baseline":
            self.features = nn.Sequential(
                nn.Conv2d(cfg.in_channels, w, 3), nn.ReLU(),  # 28 -> 26
                nn.Conv2d(w, 2 * w, 3), nn.ReLU(),  # 26 -> 24
                nn.MaxPool2d(2),  # 24 -> 12
                nn.Dropout(cfg.dropout),
            )  # fmt: skip
            side = (cfg.image_size - 4) // 2
        else:
            self.features = nn.Sequential(
                *_conv_bn(cfg.in_channels, w), *_conv_bn(w, w), nn.MaxPool2d(2),
                *_conv_bn(w, 2 * w), *_conv_bn(2 * w, 2 * w), nn.MaxPool2d(2),
                nn.Dropout(cfg.dropout),
            )  # fmt: skip
            side = cfg.image_size // 4
        self.classifier = nn.Sequential(
            nn.Flatten(),
            nn.Linear(2 * w * side * side, cfg.hidden),
            nn.ReLU(),
            nn.Dropout(cfg.head_dropout),
            nn.Linear(cfg.hidden, cfg.num_classes),
        )

    def get_num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def forward_features(
        self, images: torch.Tensor, hidden: list[torch.Tensor] | None = None
    ) -> torch.Tensor:
        """(B, C, H, W) -> the hidden layer before the last linear (B, hidden), as ViT's CLS token.
        ``hidden``, when given, receives the output of every ReLU of the convolutional trunk
        (B, C_i, H_i, W_i), for readers of the intermediate layers (``model_store.digit_detector``)."""
        if hidden is None:
            return self.classifier[:-1](self.features(images))
        x = images
        for layer in self.features:
            x = layer(x)
            if isinstance(layer, nn.ReLU):
                hidden.append(x)
        return self.classifier[:-1](x)

    def forward_head(self, features: torch.Tensor) -> torch.Tensor:
        return self.classifier[-1](features)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.forward_head(self.forward_features(images))


__all__ = ["CNN", "CNNConfig"]
