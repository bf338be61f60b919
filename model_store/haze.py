"""Broad faint bands an eraser leaves near the writing (a board's chalk haze, a whiteboard's ghosting):
taken out of the ink map before the digit is located.

On the ink map (white-on-black, the paper at 0) such a band is ink to every later step: fainter than the
writing, but wide enough to stretch the digit's box and to be read as strokes. What tells it apart is
its width: a grey opening by a square wider than any stroke takes the writing away and leaves the bands
(and a stroke written over one, at the band's level). A band is a region of what the opening leaves
that stays faint (under FAINT of the writing's level; a band a quarter of the way to the ink does) and is
mostly bare: no writing on it, neither on the coarse copy (no stronger there than the opening) nor in
the picture's own pixels (a number written small averages down to a smooth faint row on the coarse
copy, but its strokes reach the writing's level). What the opening leaves of the writing itself is
neither: a marker's bold stroke reaches the writing's level, and where strokes meet, the picture is much
stronger than the opening. The step is taken only where one region is an eraser's swipe, large and long
(MIN_CELLS, LONG), or swipes that overlap, merged into one larger region (MERGED_*) whose haze adds up
past FAINT: a photo's soft shading (a cheek, a wall, a shadow) leaves smaller and rounder regions, and
taken out, a photo that is no digit looks more like one. Then all the opening leaves under MERGED_TOP
goes, down to its faintest ramps, but what it leaves of the writing; pictures without a swipe come back
as they are, the same array.
"""

from __future__ import annotations

import numpy as np

from .components import label_components
from .imageops import coarse_copy, dilate3, opened, upsample

WIDE = 5  # coarse cells (a copy about 40 px a side): a square this wide fits in no stroke, in a band
FAINT = 0.4  # of the writing's level: a band stays under this; a blurred stroke's core reaches it
MIN_BAND = 0.1  # of the writing's level: fainter still is the paper's leftover shading, left be
BARE = 0.5  # of a band's cells at least have no writing on them
MIN_CELLS = 150  # and a band (an eraser's swipe, not what a photo's shading leaves) covers this many cells
LONG = 2.0  # and is this many times as long as wide at least
MERGED_CELLS = 400  # or: swipes that overlap, merged into one region this large (and LONG), ...
MERGED_TOP = 0.7  # ... where their haze adds up past FAINT but stays under this of the writing's level
MERGED_BARE = 0.7  # ... and with this share of its cells bare at least
EDGE = 2  # coarse cells: the soft edge of what the opening leaves of the writing, kept with it


def haze_removed(ink: np.ndarray) -> np.ndarray:
    """``ink`` (white-on-black over a paper at 0) with its broad faint bands subtracted; ``ink`` itself
    when it has none."""
    coarse, f = coarse_copy(ink)
    if min(coarse.shape) < 4 * WIDE:
        return ink  # a small crop: nothing is wider than its strokes
    peak = float(ink.max())  # the writing's level: on the coarse copy a narrow stroke's is averaged down
    broad = opened(coarse, WIDE)
    if np.count_nonzero((broad >= MIN_BAND * peak) & (broad < MERGED_TOP * peak)) < MIN_CELLS:
        return ink  # no room for a swipe: its cells are all under MERGED_TOP
    labels, n = label_components(broad >= MIN_BAND * peak)
    index, flat = np.arange(1, n + 1), labels.ravel()
    size = np.bincount(flat, minlength=n + 1)[1:]
    faint = np.bincount(flat, weights=(broad >= FAINT * peak).ravel(), minlength=n + 1)[1:] == 0
    under = np.bincount(flat, weights=(broad >= MERGED_TOP * peak).ravel(), minlength=n + 1)[1:] == 0
    if not ((faint & (size >= MIN_CELLS)) | (under & (size >= MERGED_CELLS))).any():
        return ink
    # A cell is bare where neither the coarse copy stands above the opening nor a fine stroke above a
    # band's level: small writing, averaged down on the coarse copy, can look as smooth as a band there.
    bare_cells = (coarse - broad < MIN_BAND * peak) & (_cell_max(ink, f, coarse.shape) < FAINT * peak)
    bare = np.bincount(flat, weights=bare_cells.ravel(), minlength=n + 1)[1:] / size  # share of cells
    band = faint & (bare >= BARE)
    merged = under & (bare >= MERGED_BARE) & (size >= MERGED_CELLS)
    swipes = [k for k in index[(band & (size >= MIN_CELLS)) | merged] if _long(labels == k)]
    if not swipes:
        return ink
    # The board was wiped: all the opening leaves under MERGED_TOP goes, down to its faintest ramps (a
    # band's rim under MIN_BAND is still ink to the steps after this one), but what it leaves of the
    # writing, with its edge: regions that reach MERGED_TOP or are not mostly bare.
    kept = np.isin(labels, index[~(under & (bare >= BARE))])
    for _ in range(EDGE):
        kept = dilate3(kept)
    haze = np.where(kept | (broad >= MERGED_TOP * peak), 0.0, broad).astype(np.float32)
    return np.clip(ink - upsample(haze, f, ink.shape), 0.0, None)


def _long(mask: np.ndarray) -> bool:
    """Whether the region ``mask``'s box is LONG times as long as wide."""
    rows, cols = np.flatnonzero(mask.any(axis=1)), np.flatnonzero(mask.any(axis=0))
    h, w = rows[-1] - rows[0] + 1, cols[-1] - cols[0] + 1
    return max(h, w) >= LONG * min(h, w)


def _cell_max(x: np.ndarray, f: int, shape: tuple[int, int]) -> np.ndarray:
    """The largest value of ``x`` in each f x f cell of its coarse copy (of ``shape``)."""
    h, w = shape
    if f == 1:
        return x[:h, :w]
    rows = x[: h * f, : w * f].reshape(h, f, w * f).max(axis=1)  # as coarse_copy: contiguous reductions
    return rows.reshape(h, w, f).max(axis=2)
