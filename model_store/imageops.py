"""Small numpy operations on gray pictures and boolean masks, shared by the preprocessing's steps
(``preprocess``, ``sheet``, ``shadows``, ``highlights``): fast quantiles and medians, 3x3 neighbourhoods, a
coarse copy, running minima and maxima over wide windows, the grain's level, a least-squares fit that
drops what the ink pulls off it."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from PIL import Image

DIRECT_K = 7  # running min / max over at most this many values: shifted copies, not scans
COARSE_SIDE = 40  # the digit is located on a copy reduced to about this side (noise averaged out)


def quantiles(x: np.ndarray, qs: tuple[float, ...]) -> list[float]:
    """Fast approximate quantiles of values in 0..1 from a 1024-bin histogram."""
    hist = np.bincount(np.clip(x.ravel() * 1023.0, 0, 1023).astype(np.int32), minlength=1024)
    cum = np.cumsum(hist) / x.size
    return [float(np.searchsorted(cum, q)) / 1023.0 for q in qs]


def median(v: np.ndarray) -> float:
    """np.median of a 1-D array (same partition, same mean of the middle pair) without its
    ~10 µs of checks: it runs twice per request on the hot 28x28 path."""
    k = v.size // 2
    if v.size % 2:
        return float(np.partition(v, k)[k])
    part = np.partition(v, (k - 1, k))
    return float((part[k - 1] + part[k]) / 2)


def shifts(x: np.ndarray, pad: bool = False) -> list[np.ndarray]:
    """x and its 8 neighbours' values, one array each (outside the picture: ``pad``)."""
    p = np.pad(x, 1, constant_values=pad)
    h, w = x.shape
    return [p[dy : dy + h, dx : dx + w] for dy in range(3) for dx in range(3)]


def frame(shape: tuple[int, ...], width: int = 1) -> np.ndarray:
    """A boolean mask of the picture's outer ``width`` rows and columns."""
    mask = np.ones(shape, bool)
    mask[width:-width, width:-width] = False
    return mask


def dilate3(mask: np.ndarray) -> np.ndarray:
    """3x3 dilation of a boolean mask (nothing outside the picture), as two 3-wide passes in place."""
    rows = mask.copy()
    rows[1:] |= mask[:-1]
    rows[:-1] |= mask[1:]
    out = rows.copy()
    out[:, 1:] |= rows[:, :-1]
    out[:, :-1] |= rows[:, 1:]
    return out


def erode3(mask: np.ndarray, pad: bool) -> np.ndarray:
    """3x3 erosion of a boolean mask; outside the picture counts as ``pad`` (True: the frame's edge
    erodes nothing)."""
    out = ~dilate3(~mask)
    if not pad:
        out[0], out[-1], out[:, 0], out[:, -1] = False, False, False, False
    return out


def reached(seed: np.ndarray, within: np.ndarray) -> np.ndarray:
    """The cells of ``within`` connected to ``seed`` (8-neighbours): a flood fill, by dilations."""
    region = seed & within
    while True:
        grown = dilate3(region) & within
        if np.array_equal(grown, region):
            return region
        region = grown


def upsample(x: np.ndarray, f: int, shape: tuple[int, ...]) -> np.ndarray:
    """A coarse map (mask or levels) back at full resolution: f times larger, edges extended to shape."""
    h, w = x.shape
    if x.dtype == bool:
        big = np.repeat(np.repeat(x, f, axis=0), f, axis=1)
    else:
        big = np.asarray(
            Image.fromarray(x.astype(np.float32), "F").resize((w * f, h * f), Image.Resampling.BILINEAR)
        )
    return np.pad(big, ((0, shape[0] - h * f), (0, shape[1] - w * f)), mode="edge")


def blur3(x: np.ndarray) -> np.ndarray:
    """3x3 box blur (separable), edges replicated: takes the grain out of photographed paper."""
    p = np.pad(x, 1, mode="edge")
    rows = p[:-2] + p[1:-1] + p[2:]
    return (rows[:, :-2] + rows[:, 1:-1] + rows[:, 2:]) / 9.0


def coarse_copy(x: np.ndarray) -> tuple[np.ndarray, int]:
    """x reduced by an integer factor to about COARSE_SIDE, then 3x3 blurred: specks of noise fade,
    strokes stay. Returns the copy and the factor."""
    f = max(1, min(x.shape) // COARSE_SIDE)
    if f > 1:
        x = blocks_reduced(x, f, np.add) * (1.0 / (f * f))
    return (blur3(x) if min(x.shape) >= 16 else x), f


def blocks_reduced(x: np.ndarray, f: int, op: np.ufunc) -> np.ndarray:
    """``op`` (np.add, np.maximum) over each f x f block of x, a part block at the end dropped: the shape
    of ``coarse_copy``'s copy. Rows reduced in blocks, then columns: contiguous reductions, 4-6x faster
    than one reduction over axes (1, 3)."""
    h, w = x.shape[0] // f, x.shape[1] // f
    rows = op.reduce(x[: h * f, : w * f].reshape(h, f, w * f), axis=1)
    return op.reduce(rows.reshape(h, w, f), axis=2)


def running(x: np.ndarray, k: int, axis: int, op: Callable) -> np.ndarray:
    """``op`` (np.minimum or np.maximum) over the k values (k odd) centred on each one along ``axis``,
    edges replicated: van Herk / Gil-Werman, a prefix and a suffix scan per block of k, so the cost does
    not grow with k."""
    r = k // 2
    x = np.moveaxis(x, axis, -1)
    n = x.shape[-1]
    if k <= DIRECT_K:  # a few shifted copies: the scans' setup costs more than they save
        p = np.concatenate([x[..., :1]] * r + [x] + [x[..., -1:]] * r, axis=-1)  # np.pad's "edge", cheaper
        out = p[..., :n]
        for j in range(1, k):
            out = op(out, p[..., j : j + n])
        return np.moveaxis(out, -1, axis)
    extra = -(n + 2 * r) % k
    p = np.pad(x, [(0, 0)] * (x.ndim - 1) + [(r, r + extra)], mode="edge")
    blocks = p.reshape(*p.shape[:-1], -1, k)
    forward = op.accumulate(blocks, axis=-1).reshape(p.shape)
    backward = op.accumulate(blocks[..., ::-1], axis=-1)[..., ::-1].reshape(p.shape)
    return np.moveaxis(op(backward[..., :n], forward[..., k - 1 : k - 1 + n]), -1, axis)


def square(x: np.ndarray, k: int, op: Callable) -> np.ndarray:
    """``op`` over the k x k square centred on each pixel."""
    return running(running(x, k, 0, op), k, 1, op)


def closed(x: np.ndarray, k: int) -> np.ndarray:
    """Grey closing by a k x k square: dark features narrower than k filled with their surroundings."""
    return square(square(x, k, np.maximum), k, np.minimum)


def opened(x: np.ndarray, k: int) -> np.ndarray:
    """Grey opening by a k x k square: light features narrower than k filled with their surroundings."""
    return square(square(x, k, np.minimum), k, np.maximum)


def noise_sigma(x: np.ndarray) -> float:
    """Standard deviation of the paper's grain, from the median |Laplacian| (edges are a minority)."""
    if min(x.shape) < 8:
        return 0.0
    # 4-neighbour Laplacian on every second row: half the work, the same median
    lap = 4 * x[1:-1:2, 1:-1] - x[:-2:2, 1:-1] - x[2::2, 1:-1] - x[1:-1:2, :-2] - x[1:-1:2, 2:]
    med = 4.0 * quantiles(np.abs(lap) * 0.25, (0.5,))[0]  # histogram quantile wants 0..1
    return med / (0.6745 * math.sqrt(20.0))  # Var(lap) = 20 sigma^2 for independent noise


def robust_fit(basis: np.ndarray, values: np.ndarray, ink_above: bool) -> np.ndarray:
    """Least-squares coefficients of ``values`` over the columns of ``basis``, fitted again (up to four
    times) without the points the ink pulls off the fit: above it when ``ink_above``, else below."""
    sign = 1.0 if ink_above else -1.0
    keep = np.ones(values.size, bool)
    for _ in range(4):
        coef = np.linalg.lstsq(basis[keep], values[keep], rcond=None)[0]
        resid = sign * (values - basis @ coef)
        new_keep = resid < 0.02 + 1.5 * float(np.median(np.abs(resid[keep])))
        if new_keep.sum() < basis.shape[1] or np.array_equal(new_keep, keep):
            break
        keep = new_keep
    return coef
