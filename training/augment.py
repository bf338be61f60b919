"""Batched, on-device augmentation: random affine warps and stroke-width changes.

Running on the GPU (or CPU) tensor batch keeps training free of a Python data-loading bottleneck.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F


@dataclass
class AugmentConfig:
    degrees: float = 12.0
    translate: float = 0.1  # fraction of the image side
    scale: tuple[float, float] = (0.85, 1.15)
    shear: float = 10.0  # degrees
    morph_prob: float = 0.1  # chance each of thickening / thinning the strokes

    @property
    def enabled(self) -> bool:
        return bool(self.degrees or self.translate or self.shear or self.scale != (1.0, 1.0)
                    or self.morph_prob)  # fmt: skip


def random_affine(x: torch.Tensor, cfg: AugmentConfig, gen: torch.Generator) -> torch.Tensor:
    """Warp each image of (B, C, H, W) in 0..1 by its own random rotation/shear/scale/shift."""
    b = x.shape[0]

    def uniform(lo: float, hi: float) -> torch.Tensor:
        return torch.rand(b, generator=gen, device=gen.device) * (hi - lo) + lo

    angle = uniform(-cfg.degrees, cfg.degrees) * math.pi / 180
    shear = uniform(-cfg.shear, cfg.shear) * math.pi / 180
    scale = uniform(*cfg.scale)
    tx, ty = uniform(-cfg.translate, cfg.translate) * 2, uniform(-cfg.translate, cfg.translate) * 2
    cos, sin, tan = torch.cos(angle), torch.sin(angle), torch.tan(shear)
    # affine_grid maps output coords to input coords, so build the inverse transform:
    # rotation @ shear, divided by the scale.
    a = torch.stack([cos, -sin + cos * tan, sin, cos + sin * tan], dim=1).view(b, 2, 2)
    a = a / scale.view(b, 1, 1)
    theta = torch.cat([a, torch.stack([tx, ty], dim=1).view(b, 2, 1)], dim=2).to(x.dtype)
    grid = F.affine_grid(theta, list(x.shape), align_corners=False)
    return F.grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False)


def random_stroke_width(x: torch.Tensor, prob: float, gen: torch.Generator) -> torch.Tensor:
    """Thicken (grey dilation) or thin (half-strength grey erosion) a random subset of images.

    Full erosion would wipe out MNIST's 2-3 px strokes, so thinning blends it with the input.
    """
    if prob <= 0:
        return x
    r = torch.rand(x.shape[0], 1, 1, 1, generator=gen, device=gen.device)
    thick = F.max_pool2d(x, 3, stride=1, padding=1)
    thin = 0.5 * (x - F.max_pool2d(-x, 3, stride=1, padding=1))
    x = torch.where(r < prob, thick, x)
    return torch.where((r >= prob) & (r < 2 * prob), thin, x)


def augment(x: torch.Tensor, cfg: AugmentConfig, gen: torch.Generator) -> torch.Tensor:
    if not cfg.enabled:
        return x
    x = random_stroke_width(x, cfg.morph_prob, gen)
    return random_affine(x, cfg, gen).clamp_(0, 1)
