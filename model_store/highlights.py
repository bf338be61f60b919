"""A highlight on glossy paper (a print, a laminated card, a whiteboard photographed under a lamp or
with the flash): there the paper is followed locally, not by the one level or the smooth surface that
``preprocess`` fits to the rest of the picture.

A highlight adds light to the paper and to the ink on it alike (a reflection off the surface), so the
ink stands out from the paper around it by as much as before: subtracting the local paper gets it back.
A flat level leaves the ink under the spot faint, and a quadratic surface cannot bend round a spot a
tenth of the picture across: pulled down by it, the fit left the paper round the spot reading as ink
(a gray box in the crop, the digit squeezed into a corner of it).

On the white-on-black picture ``preprocess`` works on (ink light, paper dark) a highlight is a dip. The
local paper is a grey opening of the coarse copy by a square wider than a pen stroke: ridges narrower
than the square (strokes) vanish, while dips of any width (a valley is what an opening keeps) stay as
they are. It is used only where the picture shows such a dip, deeper than the fitted paper and than the
paper along the picture's border: a stroke wider than the square (a marker filling a small canvas)
would be taken for paper, and pictures without a highlight keep the steps they were measured with.
"""

from __future__ import annotations

import numpy as np

from .imageops import coarse_copy, frame, median, noise_sigma, opened, upsample

MIN_SIDE = 32  # smaller pictures are canvases and crops
OPENING_SHARE = 5  # the opening's square is this many times smaller than the coarse copy's shorter side
MIN_DEPTH = 0.04  # the highlight is lighter than the paper by at least this much (0..1) ...
DEPTH_GRAIN = 6.0  # ... and by this many times the coarse copy's grain (an opening's minima reach ~2x below)
MIN_AREA = 0.005  # ... over at least this share of the picture


def paper_under_highlights(x: np.ndarray, paper: np.ndarray | float) -> np.ndarray | float:
    """The paper under the ink of the white-on-black picture ``x``: ``paper`` (the level or surface
    found for it) as it is, or the local paper (a little above it, by the depth a highlight must have,
    so that no grain reads as ink) when a highlight lies on the picture."""
    if min(x.shape) < MIN_SIDE:
        return paper
    coarse, f = coarse_copy(x)
    h, w = coarse.shape
    level = paper[f // 2 :: f, f // 2 :: f][:h, :w] if isinstance(paper, np.ndarray) else paper
    # The usual case, decided on the coarse copy itself: an opening only lowers a cell to what lies within
    # its square, so where no cell is lighter than the paper by MIN_DEPTH, the opening's cells are not.
    if not (coarse < np.minimum(level, median(coarse[frame((h, w), 2)])) - MIN_DEPTH).any():
        return paper
    local = opened(coarse, max(3, (min(h, w) // OPENING_SHARE) | 1))
    border = median(local[frame(local.shape, 2)])
    full = upsample(local, f, x.shape)
    lighter = (full < paper - MIN_DEPTH) & (full < border - MIN_DEPTH)
    if lighter.mean() < MIN_AREA:  # decided before the grain is measured
        return paper
    # The coarse copy's grain: f x f pixels averaged, then 3 x 3 of those.
    depth = max(MIN_DEPTH, DEPTH_GRAIN * noise_sigma(x) / (3 * f))
    lighter = (full < paper - depth) & (full < border - depth)
    if lighter.mean() < MIN_AREA:
        return paper
    return full + depth
