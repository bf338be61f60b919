"""Attention heat-map overlays as PNG: a patch-grid map upsampled and blended over the input."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image

# Samples of matplotlib's "inferno" (perceptually uniform, dark -> bright), linearly interpolated.
_INFERNO = np.array(
    [[0, 0, 4], [31, 12, 72], [85, 15, 109], [136, 34, 106], [186, 54, 85], [227, 89, 51],
     [249, 140, 10], [249, 201, 50], [252, 255, 164]],
    dtype=np.float32,
)  # fmt: skip


def colormap(values: np.ndarray) -> np.ndarray:
    """Values in 0..1 (any shape) -> RGB uint8 (shape + (3,))."""
    v = np.clip(values, 0.0, 1.0) * (len(_INFERNO) - 1)
    lo = np.floor(v).astype(np.int64)
    hi = np.minimum(lo + 1, len(_INFERNO) - 1)
    frac = (v - lo)[..., None]
    return (_INFERNO[lo] * (1.0 - frac) + _INFERNO[hi] * frac).round().astype(np.uint8)


def overlay_png(image: np.ndarray, heat: np.ndarray, scale: int = 8, opacity: float = 0.6) -> bytes:
    """``image`` (28, 28) 0..1 and ``heat`` (grid*grid,) -> PNG bytes of side 28*scale."""
    grid = int(round(len(heat) ** 0.5))
    side = image.shape[0] * scale
    h = np.asarray(heat, dtype=np.float32).reshape(grid, grid)
    top = float(h.max())
    h = h / top if top > 0 else h
    up = np.asarray(Image.fromarray(h, "F").resize((side, side), Image.Resampling.BILINEAR))
    base = np.asarray(
        Image.fromarray(image.astype(np.float32), "F").resize((side, side), Image.Resampling.NEAREST)
    )
    gray = np.repeat(np.clip(base, 0.0, 1.0)[..., None] * 255.0, 3, axis=-1)
    rgb = (1.0 - opacity) * gray + opacity * colormap(up).astype(np.float32)
    buf = io.BytesIO()
    Image.fromarray(rgb.round().clip(0, 255).astype(np.uint8), "RGB").save(buf, "PNG", compress_level=1)
    return buf.getvalue()
