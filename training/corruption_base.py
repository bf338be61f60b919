"""What every corrupted upload (``training.corruptions``) is made of: the MNIST digit as ink coverage at
a size, laid on a page, moved, grown or thinned, convolved, and encoded as the bytes a user sends."""

from __future__ import annotations

import io
from collections.abc import Callable

import numpy as np
from PIL import Image

Corruption = Callable[[np.ndarray, np.random.Generator], bytes]


def ink_at(u8: np.ndarray, side: int) -> np.ndarray:
    """The 28x28 digit upscaled to side x side: ink coverage 0..1 (bicubic, like a smooth pen)."""
    img = Image.fromarray(np.ascontiguousarray(u8, dtype=np.uint8)).resize((side, side), Image.BICUBIC)
    return np.asarray(img, dtype=np.float32) / 255.0


def random_side(rng: np.random.Generator) -> int:
    return int(rng.integers(64, 201))


def on_page(ink: np.ndarray, paper: float = 0.96, pen: float = 0.08) -> np.ndarray:
    """Ink coverage -> gray page 0..1: paper where there is no ink, pen where it is full."""
    return paper + (pen - paper) * np.clip(ink, 0.0, 1.0)


def to_u8(x: np.ndarray) -> np.ndarray:
    return np.clip(np.round(x * 255.0), 0, 255).astype(np.uint8)


def encoded(x: np.ndarray | Image.Image, fmt: str = "PNG", **save: object) -> bytes:
    img = x if isinstance(x, Image.Image) else Image.fromarray(to_u8(x))
    if fmt == "PNG":
        save.setdefault("compress_level", 1)  # the pixels are the same; generating is faster
    buf = io.BytesIO()
    img.save(buf, fmt, **save)
    return buf.getvalue()


def convolved(x: np.ndarray, kernel: np.ndarray) -> np.ndarray:
    """Convolve a page with a (small, normalised) kernel by FFT, edges replicated."""
    kh, kw = kernel.shape
    p = np.pad(x, ((kh, kh), (kw, kw)), mode="edge")
    k = np.zeros_like(p)
    k[:kh, :kw] = kernel
    k = np.roll(k, (-(kh // 2), -(kw // 2)), (0, 1))
    out = np.fft.irfft2(np.fft.rfft2(p) * np.fft.rfft2(k), s=p.shape)
    return out[kh:-kh, kw:-kw]


def morphed(ink: np.ndarray, size: int, grow: bool) -> np.ndarray:
    """Grey dilation (grow) or erosion by a size x size square, separably (max/min of shifts)."""
    size = max(3, size | 1)  # odd
    pick, r = (np.maximum if grow else np.minimum), size // 2
    for axis in (0, 1):
        p = np.pad(ink, [(r, r) if a == axis else (0, 0) for a in (0, 1)], mode="edge")
        n = ink.shape[axis]
        ink = pick.reduce([np.take(p, range(i, i + n), axis=axis) for i in range(size)])
    return ink


def affine_mapped(ink: np.ndarray, matrix: tuple[float, float, float, float]) -> np.ndarray:
    """Apply a 2x2 linear map about the image centre (ink outside the canvas is lost, as on paper)."""
    a, b, c, d = matrix
    h, w = ink.shape
    inv = np.linalg.inv(np.array([[a, b], [c, d]]))
    cx, cy = w / 2, h / 2
    off = np.array([cx, cy]) - inv @ np.array([cx, cy])
    coeffs = (inv[0, 0], inv[0, 1], off[0], inv[1, 0], inv[1, 1], off[1])
    return np.asarray(Image.fromarray(ink, "F").transform((w, h), Image.AFFINE, coeffs, Image.BICUBIC))


def on_canvas(ink: np.ndarray, width: int, height: int, rng: np.random.Generator) -> np.ndarray:
    """Ink pasted at a random place of a larger empty canvas."""
    h, w = ink.shape
    out = np.zeros((height, width), np.float32)
    top, left = int(rng.integers(0, height - h + 1)), int(rng.integers(0, width - w + 1))
    out[top : top + h, left : left + w] = ink
    return out
