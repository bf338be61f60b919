"""The paper under the ink: which way round the picture is (dark ink or light), the paper's level or
its smooth surface under uneven light, and the ink left once the paper and its grain are taken out.

Shared by the one-digit preprocessing (``model_store.preprocess``) and the page reader
(``model_store.segment``), so that a page's digits are found on the same ink they are fitted from.
"""

from __future__ import annotations

import numpy as np

from .decode import NoInk
from .haze import haze_removed
from .highlights import paper_under_highlights
from .imageops import blur3, coarse_copy, median, noise_sigma, quantiles, robust_fit, upsample
from .rulings import rulings_removed
from .shadows import shadow_lifted
from .sheet import surface_removed

MIN_CONTRAST = 0.12  # ink must stand out from the background by this much (0..1) or the canvas is empty
GRAIN = 3.0  # residuals under GRAIN x the paper's noise (sigma) are grain, not ink
MIN_FLOOR = 0.03  # and so are residuals under 3% of the ink's contrast (JPEG halos, leftover shading)
FLUSH_BELOW = 0.02  # a paper surface with more of the picture's paper this far under it is not the paper
PAPER_FLOOR = 0.1  # a border patch's paper under strokes that cross it: this quantile of its pixels
UNEVEN = 0.06  # border patches differing by more than this: uneven light, subtract a local background
CLOSE_CALL = 3.0  # the dark and the light extremes this close (ratio): the polarity is measured locally ...
CLOSE_CALL_SIDE = 64  # ... on photos (pictures at least this large, not canvases and crops) ...
CLOSE_CALL_GRAIN = 0.1  # ... with less grain than a 1-bit scan's dots (sigma)


def border(x: np.ndarray) -> np.ndarray:
    b = max(1, min(x.shape) // 20)
    return np.concatenate([x[:b].ravel(), x[-b:].ravel(), x[:, :b].ravel(), x[:, -b:].ravel()])


def white_on_black(gray: np.ndarray) -> np.ndarray:
    """Ink brighter than the paper: invert when the extremes say the ink is dark. The extremes are the
    outer 1% of the pixels, but at least the 50 most extreme on large pictures: a digit written on a
    photographed page covers well under 1% of it. Where even those are paper, the darkest and the
    brightest pixel decide. Where the two extremes stand out about as far on a photo (a flash's spot
    over a small digit: the spot is the lightest thing in the picture, the ink under it gray), each is
    measured against the paper round it instead (``_local_extremes``)."""
    paper = median(border(gray))
    q = min(0.01, max(0.001, 50.0 / gray.size))
    lo, hi = quantiles(gray, (q, 1.0 - q))
    dark, light = paper - lo, hi - paper
    if max(dark, light) < MIN_CONTRAST:  # the ink is fewer pixels still (a small digit on a large page,
        dark, light = paper - float(gray.min()), float(gray.max()) - paper  # a scan): the very extremes
    if (
        max(dark, light) < CLOSE_CALL * min(dark, light)
        and min(gray.shape) >= CLOSE_CALL_SIDE
        and noise_sigma(gray) < CLOSE_CALL_GRAIN
    ):
        dark, light = _local_extremes(gray, q)
    return 1.0 - gray if dark > light else gray


def _local_extremes(gray: np.ndarray, q: float) -> tuple[float, float]:
    """How far the darkest and the lightest ``q`` of the pixels stand out of the paper round them: the
    median of the coarse copy over a square a fifth of its side (wider than a stroke, so mostly paper).
    A spot of light is as light as the paper round it there, and the ink under it still stands out."""
    coarse, f = coarse_copy(gray)
    k = max(3, (min(coarse.shape) // 5) | 1)
    windows = np.lib.stride_tricks.sliding_window_view(np.pad(coarse, k // 2, mode="edge"), (k, k))
    flat = windows.reshape(*windows.shape[:2], k * k)  # k odd: the middle of k * k is the median
    around = upsample(np.partition(flat, k * k // 2, axis=-1)[..., k * k // 2], f, gray.shape)
    dark = quantiles(np.clip(around - gray, 0.0, 1.0), (1.0 - q,))[0]
    light = quantiles(np.clip(gray - around, 0.0, 1.0), (1.0 - q,))[0]
    return dark, light


def paper_level(x: np.ndarray, flush: bool = False) -> np.ndarray | float:
    """The (dark) paper under the ink: one level when the border agrees, a smooth surface when not.

    A flat level never eats into a large or blurred digit; the local surface is kept for photos
    whose light falls off across the page (the border then shows it). ``flush``: the picture may be one
    digit cropped flush to its ink, whose strokes raise the surface. On a page of several (not
    ``flush``) a hard shadow across a number, not lifted, raises it the same way, and a flat level would
    read the shadow as ink: there the border must also show paper under its patches (``_floors_agree``)."""
    h, w = x.shape
    b = max(1, min(h, w) // 20)
    if min(h, w) < 16:
        return median(border(x))
    sides = (x[:b].T, x[-b:].T, x[:, :b], x[:, -b:])  # each: (length, b)
    levels = [median(part.ravel()) for side in sides for part in np.array_split(side, 3)]
    if max(levels) - min(levels) <= UNEVEN:
        return float(np.median(levels))
    surface = _background(x)
    # Many pixels at the border's paper level well under the surface: ink raised it, not light (a digit
    # or a number cropped flush to its ink, its strokes crossing the border); the border's clean paper
    # then. (A highlight's dip inside the picture lies deeper, and is followed later: ``highlights``.)
    paper = min(levels)
    raised = float(np.mean((x < surface - 2 * UNEVEN) & (x > paper - UNEVEN))) > FLUSH_BELOW
    if raised and (flush or _floors_agree(sides)):
        return paper
    return surface


def _floors_agree(sides: tuple[np.ndarray, ...]) -> bool:
    """The border's patches show the same paper between whatever crosses them, all but one (a stroke
    may run along a third of a side): strokes cross a patch and leave paper beside them, while a shadow
    or light falling off darkens patches through and through, and never one alone (a shadow's edge
    crosses the picture, so it darkens a corner's two patches at least)."""
    patches = [part for side in sides for part in np.array_split(side, 3)]
    floors = sorted(float(np.quantile(part, PAPER_FLOOR)) for part in patches)
    return floors[-2] - floors[0] <= UNEVEN


def _background(x: np.ndarray) -> np.ndarray:
    """Smooth estimate of unevenly lit paper: a quadratic surface fitted to tile medians, tiles
    that the ink raises above the surface dropped and the fit repeated (light falls off smoothly,
    strokes do not)."""
    h, w = x.shape
    tile = max(8, min(h, w) // 6)
    th, tw = max(1, h // tile), max(1, w // tile)
    tiles = x[: th * tile, : tw * tile].reshape(th, tile, tw, tile).transpose(0, 2, 1, 3)
    grid = np.median(tiles.reshape(th, tw, -1), axis=-1).ravel()
    yy, xx = np.mgrid[0:th, 0:tw]
    u, v = ((xx.ravel() + 0.5) * tile / w - 0.5), ((yy.ravel() + 0.5) * tile / h - 0.5)
    terms = [np.ones_like(u), u, v, u * u, u * v, v * v] if th * tw >= 12 else [np.ones_like(u), u, v]
    basis = np.stack(terms, axis=1)
    coef = robust_fit(basis, grid, ink_above=True)
    py, px = np.mgrid[0:h, 0:w].astype(np.float32)
    pu, pv = (px + 0.5) / w - 0.5, (py + 0.5) / h - 0.5
    full = [np.ones_like(pu), pu, pv, pu * pu, pu * pv, pv * pv][: basis.shape[1]]
    return sum(c * t for c, t in zip(coef, full, strict=True)).astype(np.float32)


def ink_above_paper(gray: np.ndarray) -> tuple[np.ndarray, float]:
    """Gray (any polarity, 0..1) -> (white-on-black ink with the paper subtracted, its grain's sigma),
    grainy paper averaged down first. Raises NoInk. The steps ``preprocess.to_mnist`` takes (its 28x28
    fast path aside, and its paper taken for a page's, not one digit's cropped flush), so that
    ``model_store.segment`` finds digits on the ink they are fitted from."""
    lifted = shadow_lifted(surface_removed(gray.astype(np.float32, copy=False)))
    return ink_above(white_on_black(lifted), flush=False)


def ink_above(x: np.ndarray, flush: bool = True) -> tuple[np.ndarray, float]:
    """ink_above_paper on an image already turned white-on-black (``flush``: it may be one digit
    cropped flush to its ink, see ``paper_level``); lined or squared paper's rulings out, and an eraser's
    broad faint bands (``haze``)."""
    ink = np.clip(x - paper_under_highlights(x, paper_level(x, flush)), 0.0, None)
    sigma = noise_sigma(ink)
    return denoised(haze_removed(rulings_removed(ink, max(2 * MIN_FLOOR, GRAIN * sigma))), sigma)


def denoised(x: np.ndarray, sigma: float | None = None) -> tuple[np.ndarray, float]:
    """Ink over a paper at 0 -> (the ink, grainy paper averaged down, its grain's sigma, measured
    here unless given)."""
    if float(x.max()) < MIN_CONTRAST:
        raise NoInk("no ink found: the canvas is empty or has too little contrast")
    sigma = noise_sigma(x) if sigma is None else sigma
    if sigma > 0.01 and min(x.shape) >= 32:  # grainy: average the grain down before measuring
        x = blur3(x)
        sigma /= 3.0
    return x, sigma
