"""A hard shadow across a photographed page (the phone's, the hand's): lifted before anything else.

The paper steps after this one expect one level of paper, or light that falls off smoothly (a plane
or a quadratic fit). A shadow with a sharp edge is neither: the shadowed part of the page reads as a
big block of ink, and when it covers most of the picture the polarity is decided the wrong way round.

What the shadow looks like: the page's light (a grey closing wide enough to close over the pen's
strokes) takes two levels, the lit page and the shadow, and changes from one to the other over a short
distance; both are mostly bare paper, the shadow enters from the frame's edge, and something darker
than the shadow is written on the page. Light strokes on a dark board (chalk) are told apart by an
opening, which takes them away but leaves a lit page. Lifting it: each pixel is divided by the light
it was lit by (the lit page's level; the shadow's in the shadow; on the shadow's edge its own level
between the two, the penumbra being paper), so the ink keeps its contrast on both sides.
"""

from __future__ import annotations

import numpy as np

from .imageops import (
    COARSE_SIDE,
    blur3,
    closed,
    coarse_copy,
    dilate3,
    erode3,
    frame,
    median,
    opened,
    quantiles,
    reached,
    square,
    upsample,
)

MIN_SIDE = 64  # smaller pictures are canvases and crops, not photos of a page
LIGHT_WINDOW = 4  # the closing's square is this many times smaller than the coarse copy's shorter side
EDGE_WINDOW = 12  # ... and the shadow's edge is crossed within a square this many times smaller
MIN_DEPTH = 0.2  # the shadow takes at least this share of the lit page's light
MIN_SHADE = 0.15  # and leaves at least this much (a black region is an object, not a shadow)
SHARP = 0.6  # this share of the change happens within the edge window (light falling off does not)
MIN_SHARE = 0.1  # the shadow and the lit page each cover at least this share of the picture
BARE = 0.6  # both are mostly paper: pixels this close to the light's level
INK_BELOW = 0.5  # writing: darker than the shadow by this share of the lit-shadow contrast ...
MIN_INK = 0.002  # ... on at least this share of the picture


def shadow_lifted(gray: np.ndarray) -> np.ndarray:
    """Gray (0..1, any polarity) -> the same picture with a hard shadow across the page lifted (the
    page at the lit level), or ``gray`` itself when it shows none."""
    if min(gray.shape) < MIN_SIDE or not _edge_may_be_shaded(gray):
        return gray
    coarse, f = coarse_copy(gray)
    levels = _shadow_levels(coarse, gray)
    if levels is None:
        return gray
    return _divided(gray, coarse, f, *levels)


def _edge_may_be_shaded(gray: np.ndarray) -> bool:
    """A shadow crosses MIN_SHARE of the frame's edge, at least halfway from the lit level down by
    MIN_DEPTH: where that much of the edge is not even nearly that dark (most pictures: a page and its
    writing), nothing needs the closing. Strips as wide as the coarse copy's cells; a looser bound."""
    b = max(1, min(gray.shape) // COARSE_SIDE)
    edge = np.concatenate([gray[:b].mean(0), gray[-b:].mean(0), gray[:, :b].mean(1), gray[:, -b:].mean(1)])
    return quantiles(edge, (MIN_SHARE,))[0] < (1.0 - MIN_DEPTH / 4) * float(gray.max())


def _shadow_levels(coarse: np.ndarray, gray: np.ndarray) -> tuple[float, float] | None:
    """(the lit page's level, the shadow's) when the coarse copy shows a hard shadow, else None."""
    k = max(3, (min(coarse.shape) // LIGHT_WINDOW) | 1)
    light = closed(coarse, k)
    lo, hi = quantiles(light, (0.02, 0.98))
    if hi - lo < MIN_DEPTH * hi or lo < MIN_SHADE:
        return None
    # The shadow falls from beyond the frame: what is below the middle level and joined to its edge (a
    # dark blob inside, a bold loop the closing kept, is not).
    below = light < (lo + hi) / 2
    rim = frame(below.shape)
    shaded = reached(rim, below)
    if not MIN_SHARE <= shaded.mean() <= 1 - MIN_SHARE or shaded[rim].mean() < MIN_SHARE:
        return None
    edge_k = max(3, (min(coarse.shape) // EDGE_WINDOW) | 1)
    step = square(light, edge_k, np.maximum) - square(light, edge_k, np.minimum)
    if step[dilate3(shaded) & ~shaded].max() < SHARP * (hi - lo):
        return None  # light falling off across the page: the paper fit handles it
    bare = coarse > light - 0.1 * (hi - lo) - 0.05
    if bare[shaded].mean() < BARE or bare[~shaded].mean() < BARE:
        return None  # a solid object, or writing as bold as the window
    if median(opened(coarse, k)[~shaded]) < (lo + hi) / 2:
        return None  # the light part is strokes (chalk on a board), not a lit page
    lit, shade = median(light[~shaded]), median(light[shaded])
    if (gray < shade - INK_BELOW * (lit - shade)).mean() < MIN_INK:
        return None  # nothing written darker than the shadow: a garment, a shape
    return lit, shade


def _divided(gray: np.ndarray, coarse: np.ndarray, f: int, lit: float, shade: float) -> np.ndarray:
    """Each pixel divided by the light it was lit by, the page brought to ``lit``. The shadow at full
    resolution is the coarse cells below the middle level, the strokes in the light opened away: its
    core lit by ``shade``, its edge by each pixel's own level (the penumbra is paper), the rest by
    ``lit``."""
    region = dilate3(erode3(coarse < (lit + shade) / 2, pad=True))
    near = upsample(dilate3(dilate3(region)), f, gray.shape)
    core = upsample(erode3(erode3(region, pad=True), pad=True), f, gray.shape)
    by = np.where(near, np.clip(blur3(gray), shade, lit), lit)
    by = np.where(core, shade, by)
    return (np.clip(gray / np.maximum(by, 1e-3), 0.0, 1.0) * lit).astype(np.float32)
