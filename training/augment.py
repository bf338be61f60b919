"""Batched, on-device augmentation: random affine warps with optional elastic distortion, stroke-width
changes and optional random erasing.

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
    elastic_alpha: float = 0.0  # elastic distortion strength in pixels (Simard et al. 2003: 34); 0 = off
    elastic_sigma: float = 4.0  # smoothness of the displacement field, Gaussian sigma in pixels
    erase_prob: float = 0.0  # chance of blanking one random rectangle (2-12% of the image)

    @property
    def enabled(self) -> bool:
        return bool(self.degrees or self.translate or self.shear or self.scale != (1.0, 1.0)
                    or self.morph_prob or self.elastic_alpha or self.erase_prob)  # fmt: skip

    @property
    def warps(self) -> bool:
        return bool(self.degrees or self.translate or self.shear or self.scale != (1.0, 1.0)
                    or self.elastic_alpha)  # fmt: skip


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
    grid = F.affine_grid(theta, list(x.shape), align_corners=False)  # (B, H, W, 2), x then y
    if cfg.elastic_alpha:
        grid = grid + elastic_displacement(x.shape, cfg.elastic_alpha, cfg.elastic_sigma, gen).to(grid.dtype)
    return F.grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False)


def gaussian_kernel1d(sigma: float, device: torch.device) -> torch.Tensor:
    radius = max(1, math.ceil(3 * sigma))
    t = torch.arange(-radius, radius + 1, dtype=torch.float32, device=device)
    k = torch.exp(-0.5 * (t / sigma) ** 2)
    return k / k.sum()


def elastic_displacement(
    shape: torch.Size | tuple[int, ...], alpha: float, sigma: float, gen: torch.Generator
) -> torch.Tensor:
    """Simard et al. (2003) elastic field: uniform(-1, 1) per-pixel displacements, smoothed with a Gaussian
    of ``sigma`` pixels and scaled by ``alpha`` pixels; returned in grid_sample units, (B, H, W, 2)."""
    b, _, h, w = shape
    field = torch.rand(b, 2, h, w, generator=gen, device=gen.device) * 2 - 1  # (B, 2, H, W): dx, dy
    k = gaussian_kernel1d(sigma, field.device)
    r = (len(k) - 1) // 2
    field = F.conv2d(field, k.view(1, 1, 1, -1).expand(2, 1, 1, -1), padding=(0, r), groups=2)  # along x
    field = F.conv2d(field, k.view(1, 1, -1, 1).expand(2, 1, -1, 1), padding=(r, 0), groups=2)  # along y
    # pixels -> normalised [-1, 1] coordinates (align_corners=False: 2 / size per pixel)
    field = field * alpha * torch.tensor([2 / w, 2 / h], device=field.device).view(1, 2, 1, 1)
    return field.permute(0, 2, 3, 1)


def random_erase(x: torch.Tensor, prob: float, gen: torch.Generator,
                 area: tuple[float, float] = (0.02, 0.12)) -> torch.Tensor:  # fmt: skip
    """Blank (to 0, the background) one random rectangle in a random ``prob`` share of the images
    (Zhong et al. 2017), its area a uniform ``area`` fraction of the image, aspect ratio 1/3..3."""
    if prob <= 0:
        return x
    b, _, h, w = x.shape

    def uniform(lo: float, hi: float) -> torch.Tensor:
        return torch.rand(b, generator=gen, device=gen.device) * (hi - lo) + lo

    apply = uniform(0, 1) < prob
    frac = uniform(*area)
    aspect = torch.exp(uniform(math.log(1 / 3), math.log(3)))
    eh = (torch.sqrt(frac * aspect) * h).clamp(1, h)
    ew = (torch.sqrt(frac / aspect) * w).clamp(1, w)
    top = uniform(0, 1) * (h - eh)
    left = uniform(0, 1) * (w - ew)
    rows = torch.arange(h, device=x.device).view(1, h, 1)
    cols = torch.arange(w, device=x.device).view(1, 1, w)
    inside = ((rows >= top.view(b, 1, 1)) & (rows < (top + eh).view(b, 1, 1))
              & (cols >= left.view(b, 1, 1)) & (cols < (left + ew).view(b, 1, 1)))  # fmt: skip
    mask = inside & apply.view(b, 1, 1)  # (B, H, W)
    return x.masked_fill(mask.unsqueeze(1), 0.0)


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
    if cfg.warps:
        x = random_affine(x, cfg, gen)
    return random_erase(x, cfg.erase_prob, gen).clamp_(0, 1)
