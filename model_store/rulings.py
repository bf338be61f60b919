"""Lined and squared paper: the printed rulings taken out of an ink map, the writing over them kept.

A digit written with a ball-point pen on a school notebook's squared paper shows rulings about as
dark and as wide as its strokes; left in, they stretch the digit's box across the frame and the model
reads a grid. A ruling is told from a stroke by what no handwriting does: it is straight, runs across
the whole picture, and comes with others of its kind at a regular spacing. So the lines of one
direction are taken out only when at least ``MIN_RULINGS`` of them, evenly spaced, cross the picture
edge to edge (a single long line may be a tightly cropped 1 or a 7's bar, and is left alone).
"""

from __future__ import annotations

import math

import numpy as np

MAX_TILT_DEG = 3.0  # a photographed page is rarely straighter; rulings are searched within +-this
TILT_STEP_DEG = 0.5  # at worst a quarter degree off: 1 px of drift over 229 px, which a 3-row band absorbs
TILTS = np.arange(-MAX_TILT_DEG, MAX_TILT_DEG + 1e-9, TILT_STEP_DEG)
MIN_COVER = 0.85  # a ruling is ink along at least this share of the picture's width
MIN_RULINGS = 3  # and comes with at least two others, evenly spaced
SPACING_TOLERANCE = 0.2  # each within this share of the spacing from the grid
MAX_WIDTH = 0.04  # rulings are thin: at most this share of the picture's height (and >= 3 px)
MIN_SIDE = 48  # smaller pictures are taken as they are
STROKE_OVER_RULING = 1.5  # a pixel this many times a ruling's own level is a stroke on it


def rulings_removed(ink: np.ndarray, level: float) -> np.ndarray:
    """White-on-black ink over a paper at 0 -> the same without ruled or squared paper's lines.
    ``level``: what counts as ink along a line (above the paper's grain). Returns ``ink`` itself when
    it shows no rulings."""
    out = _lines_removed(ink, level)
    across = out.T
    done = _lines_removed(across, level)
    return out if done is across else done.T


def _lines_removed(x: np.ndarray, level: float) -> np.ndarray:
    """Horizontal (within MAX_TILT_DEG) rulings of x taken out; x itself when it has none."""
    h, w = x.shape
    on = x > level
    # Cheap first: a ruling puts ink in every column; a digit with paper beside it leaves columns empty.
    if min(h, w) < MIN_SIDE or on.any(axis=0).mean() < MIN_COVER:
        return x
    shift, cover, reach = straightest_rows(on)
    runs = _evenly_spaced(cover >= MIN_COVER, max(3, int(MAX_WIDTH * h)))
    if not runs:
        return x
    out = x.copy()
    for first, last in runs:
        _paint_over(x, out, shift, first - reach, last - reach)
    return out


def straightest_rows(on: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """The tilt (within +-MAX_TILT_DEG) along which the rows of a mask are straightest: a line's own.
    Returns (shift, cover, reach): sheared row r (of -reach..h+reach) meets column c at picture row
    r + shift[c], and cover[r + reach] is the share of the columns it crosses that have ink in it
    (or a row beside it: a line drifting a pixel off the tilt searched still counts)."""
    h, w = on.shape
    band = on.copy()
    band[1:] |= on[:-1]
    band[:-1] |= on[1:]
    ys, xs = np.nonzero(band)
    reach = int(math.ceil(math.tan(math.radians(MAX_TILT_DEG)) * w / 2)) + 1
    lines = np.arange(-reach, h + reach)  # sheared rows: row r meets column c at picture row r + shift[c]
    best: tuple[float, np.ndarray, np.ndarray] | None = None  # (score, shift, cover) of the best tilt
    for deg in TILTS:
        shift = np.round(math.tan(math.radians(deg)) * (np.arange(w) - w / 2)).astype(np.intp)
        # Each column has at most one pixel on each sheared row: counting pixels counts columns.
        hits = np.bincount(ys - shift[xs] + reach, minlength=lines.size)
        ordered = np.sort(shift)  # columns whose pixel of row r lies inside the picture
        inside = np.searchsorted(ordered, h - lines, "left") - np.searchsorted(ordered, -lines, "left")
        cover = np.where(inside >= w / 2, hits / np.maximum(inside, 1), 0.0)
        score = float(cover[cover >= MIN_COVER].sum())  # straightest at the lines' own tilt
        if best is None or score > best[0]:
            best = (score, shift, cover)
    assert best is not None
    return best[1], best[2], reach


def _paint_over(x: np.ndarray, out: np.ndarray, shift: np.ndarray, first: int, last: int) -> None:
    """One ruling (sheared rows first..last: its ink and a row each side) painted over in ``out`` with
    what lies just beyond it, interpolated across: paper where it runs alone, the stroke where one
    crosses it. Pixels well above the ruling's own level (its median along it) are ink on it: kept."""
    h, w = x.shape
    cols = np.arange(w)
    above, below = first - 1, last + 1
    ok = (above + shift >= 0) & (below + shift < h)
    if not ok.any():
        return
    c = cols[ok]
    strip = np.stack([x[r + shift[ok], c] for r in range(first, last + 1)])
    level = float(np.median(strip.max(axis=0)))
    top, bottom = x[above + shift[ok], c], x[below + shift[ok], c]
    for r in range(first, last + 1):
        t = (r - above) / (below - above)
        ys = r + shift[ok]
        values = x[ys, c]
        out[ys, c] = np.where(values > STROKE_OVER_RULING * level, values, (1 - t) * top + t * bottom)


def _evenly_spaced(is_line: np.ndarray, max_width: int) -> list[tuple[int, int]]:
    """(first, last) rows of the thin runs of ``is_line`` that sit on one regular grid, when at least
    MIN_RULINGS do; none otherwise. A run off the grid (a stroke along a ruling's direction) is left
    out, and so is a ruling merged with such a stroke into a run too thick to be printed."""
    starts, ends = runs(is_line)
    thin = (ends - starts + 1) <= max_width
    starts, ends = starts[thin], ends[thin]
    if starts.size < MIN_RULINGS:
        return []
    centres = (starts + ends) / 2
    gap = float(np.median(np.diff(centres)))
    if gap < 2 * float((ends - starts + 1).max()):  # lines, with paper between them
        return []
    best = np.zeros(0, bool)
    for anchor in centres:  # the grid through each run in turn; keep the one most runs sit on
        steps = (centres - anchor) / gap
        on_grid = np.abs(steps - np.round(steps)) <= SPACING_TOLERANCE
        if on_grid.sum() > best.sum():
            best = on_grid
    if best.sum() < MIN_RULINGS:
        return []
    return [(int(a), int(b)) for a, b in zip(starts[best], ends[best], strict=True)]


def runs(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The runs of True in a 1-D mask: (first index, last index) arrays, one entry per run."""
    idx = np.flatnonzero(mask)
    breaks = np.flatnonzero(np.diff(idx) > 1)
    return np.concatenate([idx[:1], idx[breaks + 1]]), np.concatenate([idx[breaks], idx[-1:]])
