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

from .components import component_boxes, label_components
from .imageops import blocks_reduced, coarse_copy, dilate3, opened, upsample

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
    flat = labels.ravel()

    def per_region(weights: np.ndarray) -> np.ndarray:
        return np.bincount(flat, weights=weights.ravel(), minlength=n + 1)[1:]

    size = per_region(np.ones_like(broad))
    faint = per_region(broad >= FAINT * peak) == 0
    under = per_region(broad >= MERGED_TOP * peak) == 0
    if not ((faint & (size >= MIN_CELLS)) | (under & (size >= MERGED_CELLS))).any():
        return ink
    # A cell is bare where neither the coarse copy stands above the opening nor a fine stroke above a
    # band's level: small writing, averaged down on the coarse copy, can look as smooth as a band there.
    fine = blocks_reduced(ink, f, np.maximum) if f > 1 else ink
    bare = per_region((coarse - broad < MIN_BAND * peak) & (fine < FAINT * peak)) / size  # share of cells
    band = faint & (bare >= BARE)
    merged = under & (bare >= MERGED_BARE) & (size >= MERGED_CELLS)
    if not (_long(labels, n) & ((band & (size >= MIN_CELLS)) | merged)).any():
        return ink  # no region is an eraser's swipe
    # The board was wiped: all the opening leaves under MERGED_TOP goes, down to its faintest ramps (a
    # band's rim under MIN_BAND is still ink to the steps after this one), but what it leaves of the
    # writing, with its edge: regions that reach MERGED_TOP or are not mostly bare.
    kept = np.isin(labels, np.flatnonzero(~(under & (bare >= BARE))) + 1)
    for _ in range(EDGE):
        kept = dilate3(kept)
    haze = np.where(kept | (broad >= MERGED_TOP * peak), 0.0, broad).astype(np.float32)
    return np.clip(ink - upsample(haze, f, ink.shape), 0.0, None)


def _long(labels: np.ndarray, n: int) -> np.ndarray:
    """Per region 1..n: whether its box is LONG times as long as wide."""
    x0, y0, x1, y1 = component_boxes(labels, n)[0].T
    w, h = x1 - x0, y1 - y0
    return np.maximum(w, h) >= LONG * np.minimum(w, h)
