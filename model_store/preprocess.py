"""Any digit picture -> an MNIST-style (28, 28) float32 array; decoding is ``model_store.decode``.

MNIST recipe: white ink on black, the digit fitted into a 20x20 box (aspect kept, antialiased) and
pasted into 28x28 so that its centre of mass sits at the centre. Values 0..1; the model's mean/std
normalisation happens later, in the ServingHead. Training scores models through this same code
(``python -m training robustness``), so it is part of the training<->serving contract.

The rule for soft pictures (blurred, faint, low-resolution, thick pen): never threshold away ink a
person can see. The surface a photographed sheet lies on is painted over (``sheet``), a hard shadow
across the page is divided out (``shadows``), the paper is subtracted (followed locally under a
highlight on glossy paper: ``highlights``) and only its measured grain is cut; the digit's box is found
on a smoothed mask, but the pixels inside it keep their gray levels all the way to 28x28.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from PIL import Image, ImageFilter

from .components import component_boxes, grown, label_components, loops_round_writing
from .decode import (
    BY_COLOUR,
    FORMAT_NAMES,
    SUPPORTED_FORMATS,
    SUPPORTED_MEDIA_TYPES,
    ImageError,
    ImageTooLarge,
    InvalidPixels,
    NoInk,
    NotAnImage,
    UnsupportedFormat,
    by_luminance_then_colour,
    configure,
    decode_base64,
    decode_image,
    full_size,
    to_gray,
)
from .guides import guides_removed
from .highlights import paper_under_highlights
from .imageops import (
    blur3,
    coarse_copy,
    dilate3,
    median,
    noise_sigma,
    quantiles,
    robust_fit,
    upsample,
)
from .rulings import rulings_removed, runs
from .shadows import shadow_lifted
from .sheet import surface_removed

__all__ = [
    "FORMAT_NAMES",
    "SUPPORTED_FORMATS",
    "SUPPORTED_MEDIA_TYPES",
    "ImageError",
    "ImageTooLarge",
    "InvalidPixels",
    "NoInk",
    "NotAnImage",
    "UnsupportedFormat",
    "configure",
    "decode_base64",
    "decode_image",
    "ink_above_paper",
    "ink_to_mnist",
    "pixels_to_array",
    "preprocess_bytes",
    "to_gray",
    "stroke_width",
    "to_mnist",
]

SIZE = 28  # output side
BOX = 20  # the digit is fitted into BOX x BOX
CENTRE = 14.0  # MNIST centres of mass lie in [13.5, 14.5] (row/col index coordinates)
MID_SIZE = 4 * BOX  # intermediate size of the cropped digit, where strokes are measured and thickened
MNIST_STROKE = 0.117  # median MNIST stroke width as a fraction of the 20 px box
# A picture under SMALL_SIDE px (a thumbnail, a digit cropped flush and small) is enlarged to it first:
# its paper and grain cannot be measured at a few pixels, where strokes are most of the picture.
SMALL_SIDE = 64
MIN_CONTRAST = 0.12  # ink must stand out from the background by this much (0..1) or the canvas is empty
# A digit under ZOOM_INK px in a picture reduced ZOOM_GAIN times or more is cut out of the picture anew:
# it is fitted into BOX px, and from fewer its strokes have lost their shape. (A canvas of 280 px, reduced
# twice, is never: its digits are large, and looking costs it 0.5 ms.)
ZOOM_INK, ZOOM_GAIN = BOX, 3
BOX_LEVEL = 0.2  # the digit's extent: where the smoothed ink reaches this share of its peak
GRAIN = 3.0  # residuals under GRAIN x the paper's noise (sigma) are grain, not ink
MIN_FLOOR = 0.03  # and so are residuals under 3% of the ink's contrast (JPEG halos, leftover shading)
FLUSH_BELOW = 0.02  # a paper surface with more of the picture's paper this far under it is not the paper
PAPER_FLOOR = 0.1  # a border patch's paper under strokes that cross it: this quantile of its pixels
UNEVEN = 0.06  # border patches differing by more than this: uneven light, subtract a local background
GUIDE_LEVEL = 0.1  # a box or underline is traced on the crop where its ink (peak 1) is above this
LOOP_CROSSINGS = 3  # a loop round a digit: its middle row and column cross ink this often or more
LOOP_MIN_SIDE = 24  # smaller crops are taken as they are
CLOSE_CALL = 3.0  # the dark and the light extremes this close (ratio): the polarity is measured locally ...
CLOSE_CALL_SIDE = 64  # ... on photos (pictures at least this large, not canvases and crops) ...
CLOSE_CALL_GRAIN = 0.1  # ... with less grain than a 1-bit scan's dots (sigma)


def pixels_to_array(pixels: object, where: str = "pixels") -> np.ndarray:
    """28 rows of 28 numbers 0..255, MNIST polarity, used as-is -> (28, 28) float32 0..1."""
    try:
        arr = np.asarray(pixels, dtype=np.float32)
    except (ValueError, TypeError) as exc:
        raise InvalidPixels(f"{where} must be 28 rows of 28 numbers 0-255 ({exc})") from exc
    if arr.shape != (SIZE, SIZE):
        raise InvalidPixels(f"{where} must be 28 rows of 28 numbers 0-255, got shape {list(arr.shape)}")
    if not np.isfinite(arr).all() or arr.min() < 0 or arr.max() > 255:
        raise InvalidPixels(f"{where} values must be finite numbers in 0..255")
    arr /= 255.0
    if arr.max() < MIN_CONTRAST:
        raise NoInk(f"{where}: no ink found (the canvas is empty)")
    return arr


def _border(x: np.ndarray) -> np.ndarray:
    b = max(1, min(x.shape) // 20)
    return np.concatenate([x[:b].ravel(), x[-b:].ravel(), x[:, :b].ravel(), x[:, -b:].ravel()])


def _white_on_black(gray: np.ndarray) -> np.ndarray:
    """Ink brighter than the paper: invert when the extremes say the ink is dark. The extremes are the
    outer 1% of the pixels, but at least the 50 most extreme on large pictures: a digit written on a
    photographed page covers well under 1% of it. Where even those are paper, the darkest and the
    brightest pixel decide. Where the two extremes stand out about as far on a photo (a flash's spot
    over a small digit: the spot is the lightest thing in the picture, the ink under it gray), each is
    measured against the paper round it instead (``_local_extremes``)."""
    paper = median(_border(gray))
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


def _paper(x: np.ndarray, flush: bool = False) -> np.ndarray | float:
    """The (dark) paper under the ink: one level when the border agrees, a smooth surface when not.

    A flat level never eats into a large or blurred digit; the local surface is kept for photos
    whose light falls off across the page (the border then shows it). ``flush``: the picture may be one
    digit cropped flush to its ink, whose strokes raise the surface. On a page of several (not
    ``flush``) a hard shadow across a number, not lifted, raises it the same way, and a flat level would
    read the shadow as ink: there the border must also show paper under its patches (``_floors_agree``)."""
    h, w = x.shape
    b = max(1, min(h, w) // 20)
    if min(h, w) < 16:
        return median(_border(x))
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


def _resize(
    x: np.ndarray, width: int, height: int, how: Image.Resampling = Image.Resampling.LANCZOS
) -> np.ndarray:
    img = Image.fromarray(np.ascontiguousarray(x, dtype=np.float32), "F")
    return np.clip(np.asarray(img.resize((width, height), how)), 0.0, 1.0)


def stroke_width(mask: np.ndarray) -> float:
    """Mean stroke width of a binary mask: twice the area over the perimeter (pixel edges / 1.27,
    which corrects a staircase outline towards the true curve length)."""
    m = mask.astype(np.int8)
    perimeter = (np.abs(np.diff(m, axis=0)).sum() + np.abs(np.diff(m, axis=1)).sum()) / 1.27
    return 2.0 * float(m.sum()) / max(float(perimeter), 1.0)


def _thicken(x: np.ndarray) -> np.ndarray:
    """Dilate thin strokes (pen on paper) towards MNIST's stroke width; x is at MID_SIZE scale."""
    mask = x > 0.5
    if not mask.any():
        return x
    width = stroke_width(mask)
    target = MNIST_STROKE * max(x.shape)
    if width >= 0.5 * target:
        return x
    k = 2 * int(round((target - width) / 2)) + 1
    if k < 3:
        return x
    padded = np.pad(x, k // 2)  # room for the grown strokes
    return np.asarray(Image.fromarray(padded, "F").filter(ImageFilter.MaxFilter(k)))


def _main_span(profile: np.ndarray, min_share: float = 0.06) -> tuple[int, int]:
    """First..last index of the runs of non-zero profile that hold >= min_share of the ink.

    Runs are separated by empty rows (or columns); a small isolated run is a speck of dust, a
    slip of the pen or a page mark, and must not stretch the box the digit is scaled into.
    Detached parts of real digits (the flag of a 5, the bar of a 7) hold well over 10%.
    """
    starts, ends = runs(profile > 0)
    cum = np.concatenate([[0.0], np.cumsum(profile, dtype=np.float64)])
    mass = cum[ends + 1] - cum[starts]
    keep = np.flatnonzero(mass >= min_share * mass.sum())
    if keep.size == 0:
        keep = np.array([int(mass.argmax())])
    return int(starts[keep[0]]), int(ends[keep[-1]])


def _ink_box(x: np.ndarray, level: float) -> tuple[int, int, int, int]:
    """Rows r0..r1 and columns c0..c1 of the ink above ``level``, isolated specks ignored
    (rows, then columns, then rows again)."""
    ink = np.where(x > level, x, 0.0)
    if not ink.any():  # nothing stands out of the grain
        raise NoInk("no ink found: the canvas is empty or too noisy")
    r0, r1 = _main_span(ink.sum(axis=1))
    c0, c1 = _main_span(ink[r0 : r1 + 1].sum(axis=0))
    s0, s1 = _main_span(ink[r0 : r1 + 1, c0 : c1 + 1].sum(axis=1))
    return r0 + s0, r0 + s1, c0, c1


def _centre(patch: np.ndarray) -> np.ndarray:
    """Paste a patch (<= BOX x BOX) into 28x28 with its centre of mass at CENTRE (integer shift)."""
    h, w = patch.shape
    total = float(patch.sum())
    rows = np.arange(h, dtype=np.float32)
    cols = np.arange(w, dtype=np.float32)
    com_r = float(patch.sum(axis=1) @ rows) / total
    com_c = float(patch.sum(axis=0) @ cols) / total
    top = int(np.clip(math.floor(CENTRE - com_r + 0.5), 0, SIZE - h))
    left = int(np.clip(math.floor(CENTRE - com_c + 0.5), 0, SIZE - w))
    out = np.zeros((SIZE, SIZE), dtype=np.float32)
    out[top : top + h, left : left + w] = patch
    return out


def _is_mnist_like(x: np.ndarray) -> np.ndarray | None:
    """A 28x28 white-on-black digit in a <= 20 px box is used as-is, only shifted if off-centre."""
    ink = x > 0.5 / 255.0
    rows, cols = np.flatnonzero(ink.any(axis=1)), np.flatnonzero(ink.any(axis=0))
    if rows.size == 0 or rows[-1] - rows[0] >= BOX or cols[-1] - cols[0] >= BOX:
        return None
    total = float(x.sum())
    idx = np.arange(SIZE, dtype=np.float32)
    com_r = float(x.sum(axis=1) @ idx) / total
    com_c = float(x.sum(axis=0) @ idx) / total
    if abs(com_r - CENTRE) <= 0.5 + 1e-4 and abs(com_c - CENTRE) <= 0.5 + 1e-4:
        return x
    patch = x[rows[0] : rows[-1] + 1, cols[0] : cols[-1] + 1]
    return _centre(patch)


def ink_above_paper(gray: np.ndarray) -> tuple[np.ndarray, float]:
    """Gray (any polarity, 0..1) -> (white-on-black ink with the paper subtracted, its grain's sigma),
    grainy paper averaged down first. Raises NoInk. The steps ``to_mnist`` takes (its 28x28 fast
    path aside, and its paper taken for a page's, not one digit's cropped flush), public so that
    ``model_store.segment`` finds digits on the ink they are fitted from."""
    lifted = shadow_lifted(surface_removed(gray.astype(np.float32, copy=False)))
    return _ink_above_paper(_white_on_black(lifted), flush=False)


def _ink_above_paper(x: np.ndarray, flush: bool = True) -> tuple[np.ndarray, float]:
    """ink_above_paper on an image already turned white-on-black (``flush``: it may be one digit
    cropped flush to its ink, see ``_paper``); lined or squared paper's rulings out."""
    ink = np.clip(x - paper_under_highlights(x, _paper(x, flush)), 0.0, None)
    sigma = noise_sigma(ink)
    return _denoised(rulings_removed(ink, max(2 * MIN_FLOOR, GRAIN * sigma)), sigma)


def _denoised(x: np.ndarray, sigma: float | None = None) -> tuple[np.ndarray, float]:
    """Ink over a paper at 0 -> (the ink, grainy paper averaged down, its grain's sigma, measured
    here unless given)."""
    if float(x.max()) < MIN_CONTRAST:
        raise NoInk("no ink found: the canvas is empty or has too little contrast")
    sigma = noise_sigma(x) if sigma is None else sigma
    if sigma > 0.01 and min(x.shape) >= 32:  # grainy: average the grain down before measuring
        x = blur3(x)
        sigma /= 3.0
    return x, sigma


def to_mnist(gray: np.ndarray, enlarge: bool = False) -> np.ndarray:
    """Gray image (any polarity, 0..1) -> MNIST-style (28, 28) float32. Raises NoInk. An uploaded picture
    (a photo that may show the table around the sheet) goes through ``preprocess_bytes`` instead, which
    also ``enlarge``s one under SMALL_SIDE px first (a crop of a page, cut by ``segment``, is not)."""
    lifted = shadow_lifted(gray.astype(np.float32, copy=False))
    return _fitted(_white_on_black(lifted), _ink_above_paper, loops=True, enlarge=enlarge)


def ink_to_mnist(ink: np.ndarray) -> np.ndarray:
    """White-on-black ink over a paper already at 0 (a crop of ``model_store.segment``'s ink map, a
    zero margin around it) -> MNIST-style (28, 28) float32: ``to_mnist`` without its polarity and
    paper steps, which find nothing to do there (a quarter of its time), nor the loop step (the page's
    loops are dropped before it is cut). Raises NoInk."""
    return _fitted(ink.astype(np.float32, copy=False), _denoised, loops=False)


def _fitted(
    x: np.ndarray, ink: Callable[[np.ndarray], tuple[np.ndarray, float]], loops: bool, enlarge: bool = False
) -> np.ndarray:
    """White-on-black picture -> MNIST-style (28, 28); ``ink`` takes the paper out (and its grain);
    ``loops``: a loop drawn round the digit is taken out too; ``enlarge``: a picture under SMALL_SIDE
    px is enlarged to it first."""
    if x.shape == (SIZE, SIZE) and median(_border(x)) < 0.05:
        if float(x.max()) < MIN_CONTRAST:
            raise NoInk("no ink found: the canvas is empty")
        fast = _is_mnist_like(x)
        if fast is not None:
            return np.clip(fast, 0.0, 1.0).astype(np.float32, copy=False)
    if enlarge and max(x.shape) < SMALL_SIDE:  # a thumbnail: looked at enlarged, as a person would
        k = math.ceil(SMALL_SIDE / max(x.shape))
        x = _resize(x, x.shape[1] * k, x.shape[0] * k, Image.Resampling.BICUBIC)
    x, sigma = ink(x)
    coarse, f = coarse_copy(x)
    peak = float(coarse.max())
    # Only isolated bright pixels: noise, not strokes. A faint coarse peak still counts when it stands
    # far out of the coarse copy's own grain: a thin pen line on a large, clean photo.
    if peak < MIN_CONTRAST / 2 and peak < 8 * noise_sigma(coarse):
        raise NoInk("no ink found: the canvas is empty or has too little contrast")
    r0, r1, c0, c1 = _ink_box(coarse, max(BOX_LEVEL * peak, GRAIN * sigma / f))
    if f > 1:  # the coarse box is f px coarse: refine it at full resolution, within one coarse pixel
        r0, c0 = max(0, (r0 - 1) * f), max(0, (c0 - 1) * f)
        region = x[r0 : (r1 + 2) * f, c0 : (c1 + 2) * f]
        q0, q1, p0, p1 = _ink_box(region, max(BOX_LEVEL * peak, GRAIN * sigma))
        r0, r1, c0, c1 = r0 + q0, r0 + q1, c0 + p0, c0 + p1
    crop = x[r0 : r1 + 1, c0 : c1 + 1] / peak
    h, w = crop.shape
    shrink = max(h, w) / MID_SIZE
    if shrink > 1:  # measure and thicken strokes at a fixed scale; the resize averages grain too
        crop = _resize(crop, max(1, round(w / shrink)), max(1, round(h / shrink)))
    t = max(MIN_FLOOR, GRAIN * sigma / peak / max(shrink, 1.0))
    crop = _without_guides(np.clip((crop - t) / (1.0 - t), 0.0, 1.0), loops)
    if shrink > 1:
        crop = _thicken(crop)
    h, w = crop.shape
    s = BOX / max(h, w)
    patch = _resize(crop, max(1, round(w * s)), max(1, round(h * s)))
    top = float(patch.max())
    if top <= 0.0:
        raise NoInk("no ink found: the canvas is empty")
    return _centre(patch / top)


def _without_guides(crop: np.ndarray, loops: bool) -> np.ndarray:
    """A digit's crop without the box or underline it was written in, or (``loops``) a loop drawn round
    it, cut to the writing left."""
    clean = guides_removed(crop, GUIDE_LEVEL)
    if loops:
        clean = _loop_removed(clean)
    if clean is crop:
        return crop
    r0, r1, c0, c1 = _ink_box(clean, GUIDE_LEVEL)
    return clean[r0 : r1 + 1, c0 : c1 + 1]


def _loop_removed(crop: np.ndarray) -> np.ndarray:
    """The crop without a loop drawn round the digit (a circled answer:
    ``components.loops_round_writing``), its antialiased edge too; the crop itself when it has none.
    Only a crop whose middle row and middle column both cross ink LOOP_CROSSINGS times or more (the
    loop's two sides and the digit between) is labelled: few digits do, and labelling costs ~0.1 ms."""
    on = crop > GUIDE_LEVEL
    h, w = on.shape
    crossings = min(runs(on[h // 2])[0].size, runs(on[:, w // 2])[0].size)  # runs of ink crossed
    if min(h, w) < LOOP_MIN_SIDE or crossings < LOOP_CROSSINGS:
        return crop
    labels, n = label_components(on)
    loops = np.flatnonzero(loops_round_writing(*component_boxes(labels, n))) + 1
    if loops.size == 0:
        return crop
    loop = np.isin(labels, loops)
    return np.where(grown(loop) & ~(on & ~loop), 0.0, crop)


def preprocess_bytes(data: bytes, max_pixels: int) -> np.ndarray:
    """Encoded image bytes -> MNIST-style (28, 28) float32 0..1. The surface around a photographed
    sheet is painted over here, on the whole picture, not in ``to_mnist``: the digit crops ``segment``
    cuts from a page (white ink on a black margin) must not be taken for a sheet on a table."""
    return by_luminance_then_colour(data, max_pixels, lambda img: _upload(data, max_pixels, img))


def _upload(data: bytes, max_pixels: int, img: Image.Image) -> np.ndarray:
    """``preprocess_bytes`` of the picture ``img`` (decoded from ``data``)."""
    seen = to_gray(img)
    gray = surface_removed(seen)
    try:
        return _digit(data, max_pixels, img, seen, gray)
    except NoInk:
        if gray is seen:
            raise
        # What was painted over as the table held the writing: a shadow across the page, not a table.
        return _digit(data, max_pixels, img, seen, seen)


def _digit(data: bytes, max_pixels: int, img: Image.Image, seen: np.ndarray, gray: np.ndarray) -> np.ndarray:
    """``_upload`` once the surface step has made ``gray`` of the picture ``seen``."""
    box = small_writing(gray, max(full_size(img)))
    if box is None:
        return to_mnist(gray, enlarge=True)
    cut = cut_out(data, max_pixels, img, box, gray.shape)[0]
    # What the surface step painted in the cut is painted there too: found anew, a digit that fills the
    # cut would be taken for a sheet.
    r0, r1, c0, c1 = box
    painted = dilate3(gray[r0:r1, c0:c1] != seen[r0:r1, c0:c1])
    if painted.any():
        size = (cut.shape[1], cut.shape[0])
        mask = np.asarray(Image.fromarray(painted).resize(size, Image.Resampling.NEAREST))
        level = np.asarray(Image.fromarray(gray[r0:r1, c0:c1], "F").resize(size, Image.Resampling.BILINEAR))
        cut = np.where(mask, level, cut).astype(np.float32)
    return to_mnist(cut, enlarge=True)


def small_writing(gray: np.ndarray, side: int, lines: bool = False) -> tuple[int, int, int, int] | None:
    """Rows r0:r1 and columns c0:c1 of ``gray`` round its ink, with a margin of paper, when the
    picture (``side``: its longest side) was reduced to ``gray`` at least ZOOM_GAIN times and its ink
    spans at most ZOOM_INK px there (``lines``: is at most that tall, as one line of a number is): cut
    out of the picture itself (``cut_out``), the writing keeps the resolution the reduction took (a 1 cm
    digit on an A4 page at 300 dpi is 8 px tall in ``gray``, and strokes under a pixel wide lose their
    contrast). The margin, as wide as the ink is tall, keeps what stands round it (a form's box, a line;
    a minus before a number) for the steps after to see. Else None."""
    h, w = gray.shape
    if side < ZOOM_GAIN * max(h, w):
        return None
    try:
        x, sigma = ink_above_paper(gray)
        coarse, f = coarse_copy(x)
        peak = float(coarse.max())
        r0, r1, c0, c1 = _ink_box(coarse, max(BOX_LEVEL * peak, GRAIN * sigma / f))
    except NoInk:
        return None
    r0, r1, c0, c1 = r0 * f, (r1 + 1) * f, c0 * f, (c1 + 1) * f
    size = r1 - r0 if lines else max(r1 - r0, c1 - c0)
    if size > ZOOM_INK:
        return None
    m = max(size, 8)
    return max(0, r0 - m), min(h, r1 + m), max(0, c0 - m), min(w, c1 + m)


def cut_out(
    data: bytes, max_pixels: int, img: Image.Image, box: tuple[int, int, int, int], shape: tuple[int, int]
) -> tuple[np.ndarray, tuple[float, float], tuple[int, int]]:
    """``small_writing``'s ``box`` in a reduced copy (``shape``) of the picture ``img`` was decoded into,
    cut out of the picture at full resolution (a JPEG decoded again, whole, read by its colours if it
    was), gray as ``to_gray`` makes it; the picture's pixels per pixel of it (x, y), and where its top
    left corner lies in the picture."""
    if img.format in ("JPEG", "MPO"):  # decoded at a reduced scale
        img = decode_image(data, max_pixels, reduced=False, colour=bool(img.info.get(BY_COLOUR)))
    (r0, r1, c0, c1), (h, w) = box, shape
    sy, sx = img.size[1] / h, img.size[0] / w
    left, top = round(c0 * sx), round(r0 * sy)
    cut = img.crop((left, top, round(c1 * sx), round(r1 * sy)))
    gray = to_gray(cut)
    return gray, (cut.width / gray.shape[1], cut.height / gray.shape[0]), (left, top)
