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
from PIL import Image

from .components import component_boxes, euler_number, grown, label_components, loops_round_writing
from .decode import (
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
    decoded_whole,
    full_size,
    to_gray,
)
from .displays import MIN_BARS, bars_joined, digits_of_display
from .edge_bands import without_edge_bands
from .guides import guides_removed
from .imageops import coarse_copy, dilate3, median, noise_sigma
from .mnist_box import BOX, MID_SIZE, SIZE, centred, ink_box, mnist_like, resize, stroke_width, thicken
from .paper import (
    GRAIN,
    MIN_CONTRAST,
    MIN_FLOOR,
    border,
    denoised,
    ink_above,
    ink_above_paper,
    white_on_black,
)
from .rulings import runs
from .screen_pad import pad_only
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
    "holds_bool",
    "ink_above_paper",
    "ink_to_mnist",
    "pixels_to_array",
    "preprocess_bytes",
    "to_gray",
    "stroke_width",
    "to_mnist",
]

# A picture under SMALL_SIDE px (a thumbnail, a digit cropped flush and small) is enlarged to it first:
# its paper and grain cannot be measured at a few pixels, where strokes are most of the picture.
SMALL_SIDE = 64
# A digit under ZOOM_INK px in a picture reduced ZOOM_GAIN times or more is cut out of the picture anew:
# it is fitted into BOX px, and from fewer its strokes have lost their shape. (A canvas of 280 px, reduced
# twice, is never: its digits are large, and looking costs it 0.5 ms.)
ZOOM_INK, ZOOM_GAIN = BOX, 3
BOX_LEVEL = 0.2  # the digit's extent: where the smoothed ink reaches this share of its peak
GUIDE_LEVEL = 0.1  # a box or underline is traced on the crop where its ink (peak 1) is above this
LOOP_CROSSINGS = 3  # a loop round a digit: its middle row and column cross ink this often or more
LOOP_MIN_SIDE = 24  # smaller crops are taken as they are


def holds_bool(values: object) -> bool:
    """Whether nested lists of numbers hold a boolean (numpy takes True for 1 beside numbers)."""
    if type(values) is bool:
        return True
    if not isinstance(values, list):
        return False
    if values and not isinstance(values[0], list):  # a row: checked in one pass
        return any(type(v) is bool for v in values)
    return any(holds_bool(v) for v in values)


def pixels_to_array(pixels: object, where: str = "pixels") -> np.ndarray:
    """28 rows of 28 numbers 0..255, MNIST polarity, used as-is -> (28, 28) float32 0..1. Numbers none
    above 1 are taken as 0..1 already (a torchvision tensor's, or the ``input`` the service answers
    with): on the 0..255 scale such a picture would be an empty canvas."""
    try:
        arr = np.asarray(pixels)
    except (ValueError, TypeError) as exc:
        raise InvalidPixels(f"{where} must be 28 rows of 28 numbers 0-255 ({exc})") from exc
    if arr.dtype.kind not in "iuf" or holds_bool(pixels):  # a string or a boolean is no number
        raise InvalidPixels(
            f"{where} must be 28 rows of 28 numbers 0-255, each a number (not a string, a boolean or null)"
        )
    arr = arr.astype(np.float32)
    if arr.shape != (SIZE, SIZE):
        raise InvalidPixels(f"{where} must be 28 rows of 28 numbers 0-255, got shape {list(arr.shape)}")
    if not np.isfinite(arr).all() or arr.min() < 0 or arr.max() > 255:
        raise InvalidPixels(f"{where} values must be finite numbers in 0..255")
    if arr.max() > 1.0:
        arr /= 255.0
    if arr.max() < MIN_CONTRAST:
        raise NoInk(f"{where}: no ink found (the canvas is empty)")
    return arr


def to_mnist(gray: np.ndarray, enlarge: bool = False) -> np.ndarray:
    """Gray image (any polarity, 0..1) -> MNIST-style (28, 28) float32. Raises NoInk. An uploaded picture
    (a photo that may show the table around the sheet) goes through ``preprocess_bytes`` instead, which
    also ``enlarge``s one under SMALL_SIDE px first (a crop of a page, cut by ``segment``, is not)."""
    lifted = shadow_lifted(gray.astype(np.float32, copy=False))
    return _fitted(white_on_black(lifted), ink_above, upload=True, enlarge=enlarge)


def ink_to_mnist(ink: np.ndarray) -> np.ndarray:
    """White-on-black ink over a paper already at 0 (a crop of ``model_store.segment``'s ink map, a
    zero margin around it) -> MNIST-style (28, 28) float32: ``to_mnist`` without its polarity and
    paper steps, which find nothing to do there (a quarter of its time), nor the loop step (the page's
    loops are dropped before it is cut). Raises NoInk."""
    return _fitted(ink.astype(np.float32, copy=False), denoised, upload=False)


def _fitted(
    x: np.ndarray, ink: Callable[[np.ndarray], tuple[np.ndarray, float]], upload: bool, enlarge: bool = False
) -> np.ndarray:
    """White-on-black picture -> MNIST-style (28, 28); ``ink`` takes the paper out (and its grain);
    ``upload``: a whole upload's, not a crop ``segment`` cut (it drops loops round the writing and joins
    a display page's bars itself): a loop drawn round the digit is taken out too and a display digit's
    bars are joined; ``enlarge``: a picture under SMALL_SIDE px is enlarged to it first."""
    if x.shape == (SIZE, SIZE) and median(border(x)) < 0.05:
        if float(x.max()) < MIN_CONTRAST:
            raise NoInk("no ink found: the canvas is empty")
        fast = mnist_like(x)
        if fast is not None:
            return np.clip(fast, 0.0, 1.0).astype(np.float32, copy=False)
    if enlarge and max(x.shape) < SMALL_SIDE:  # a thumbnail: looked at enlarged, as a person would
        k = math.ceil(SMALL_SIDE / max(x.shape))
        x = resize(x, x.shape[1] * k, x.shape[0] * k, Image.Resampling.BICUBIC)
    x, sigma = ink(x)
    if upload:
        x = without_edge_bands(x, BOX_LEVEL)
    coarse, f = coarse_copy(x)
    peak = float(coarse.max())
    # Only isolated bright pixels: noise, not strokes. A faint coarse peak still counts when it stands
    # far out of the coarse copy's own grain: a thin pen line on a large, clean photo.
    if peak < MIN_CONTRAST / 2 and peak < 8 * noise_sigma(coarse):
        raise NoInk("no ink found: the canvas is empty or has too little contrast")
    r0, r1, c0, c1 = ink_box(coarse, max(BOX_LEVEL * peak, GRAIN * sigma / f))
    if f > 1:  # the coarse box is f px coarse: refine it at full resolution, within one coarse pixel
        r0, c0 = max(0, (r0 - 1) * f), max(0, (c0 - 1) * f)
        region = x[r0 : (r1 + 2) * f, c0 : (c1 + 2) * f]
        q0, q1, p0, p1 = ink_box(region, max(BOX_LEVEL * peak, GRAIN * sigma))
        r0, r1, c0, c1 = r0 + q0, r0 + q1, c0 + p0, c0 + p1
    crop = x[r0 : r1 + 1, c0 : c1 + 1] / peak
    h, w = crop.shape
    shrink = max(h, w) / MID_SIZE
    if shrink > 1:  # measure and thicken strokes at a fixed scale; the resize averages grain too
        crop = resize(crop, max(1, round(w / shrink)), max(1, round(h / shrink)))
    t = max(MIN_FLOOR, GRAIN * sigma / peak / max(shrink, 1.0))
    crop = _without_guides(np.clip((crop - t) / (1.0 - t), 0.0, 1.0), loops=upload)
    if upload:
        crop = _display_joined(crop)
    if shrink > 1:
        crop = thicken(crop)
    h, w = crop.shape
    s = BOX / max(h, w)
    patch = resize(crop, max(1, round(w * s)), max(1, round(h * s)))
    top = float(patch.max())
    if top <= 0.0:
        raise NoInk("no ink found: the canvas is empty")
    return centred(patch / top)


def _display_joined(crop: np.ndarray) -> np.ndarray:
    """A display digit's crop with its bars joined (``displays.bars_joined``), as ``/read`` reads one; any
    other crop as it is. Its marks must be a display's bars (``digits_of_display``), MIN_BARS of them
    apart at least: a pen's digit, one or two strokes (its components less its loops), is let go before
    anything is labelled."""
    on = crop > GUIDE_LEVEL
    if euler_number(on) < MIN_BARS:
        return crop
    labels, n = label_components(on)
    if digits_of_display(on, labels, n) is None:
        return crop
    return bars_joined(crop, crop.shape[0])


def _without_guides(crop: np.ndarray, loops: bool) -> np.ndarray:
    """A digit's crop without the box or underline it was written in, or (``loops``) a loop drawn round
    it, cut to the writing left."""
    clean = guides_removed(crop, GUIDE_LEVEL)
    if loops:
        clean = _loop_removed(clean)
    if clean is crop:
        return crop
    r0, r1, c0, c1 = ink_box(clean, GUIDE_LEVEL)
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
    # A web page's pad outlined on its card (or a small canvas), then the surface.
    gray = surface_removed(pad_only(data, max_pixels, img, seen))
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
    # What the surface step painted in the cut is painted there too: found anew, a digit that fills the
    # cut would be taken for a sheet.
    cut = painted_as(cut_out(data, max_pixels, img, box, gray.shape)[0], box, seen, gray)
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
        coarse, f = coarse_copy(without_edge_bands(x, BOX_LEVEL))
        peak = float(coarse.max())
        r0, r1, c0, c1 = ink_box(coarse, max(BOX_LEVEL * peak, GRAIN * sigma / f), line=lines)
    except NoInk:
        return None
    r0, r1, c0, c1 = r0 * f, (r1 + 1) * f, c0 * f, (c1 + 1) * f
    size = r1 - r0 if lines else max(r1 - r0, c1 - c0)
    if size > ZOOM_INK:
        return None
    m = max(size, 8)
    return max(0, r0 - m), min(h, r1 + m), max(0, c0 - m), min(w, c1 + m)


def painted_as(
    cut: np.ndarray, box: tuple[int, int, int, int], seen: np.ndarray, gray: np.ndarray
) -> np.ndarray:
    """``cut`` (``cut_out`` of ``box``, rows r0:r1 and columns c0:c1 of the working copy ``seen``) with
    what a step painted over in ``seen`` to make ``gray`` painted over in it too, at ``gray``'s levels."""
    r0, r1, c0, c1 = box
    painted = dilate3(gray[r0:r1, c0:c1] != seen[r0:r1, c0:c1])
    if not painted.any():
        return cut
    size = (cut.shape[1], cut.shape[0])
    mask = np.asarray(Image.fromarray(painted).resize(size, Image.Resampling.NEAREST))
    level = np.asarray(Image.fromarray(gray[r0:r1, c0:c1], "F").resize(size, Image.Resampling.BILINEAR))
    return np.where(mask, level, cut).astype(np.float32)


def cut_out(
    data: bytes, max_pixels: int, img: Image.Image, box: tuple[int, int, int, int], shape: tuple[int, int]
) -> tuple[np.ndarray, tuple[float, float], tuple[int, int]]:
    """``small_writing``'s ``box`` in a reduced copy (``shape``) of the picture ``img`` was decoded into,
    cut out of the picture at full resolution (a JPEG decoded again, whole, read by its colours if it
    was), gray as ``to_gray`` makes it; the picture's pixels per pixel of it (x, y), and where its top
    left corner lies in the picture."""
    img = decoded_whole(data, max_pixels, img)
    (r0, r1, c0, c1), (h, w) = box, shape
    sy, sx = img.size[1] / h, img.size[0] / w
    left, top = round(c0 * sx), round(r0 * sy)
    cut = img.crop((left, top, round(c1 * sx), round(r1 * sy)))
    gray = to_gray(cut)
    return gray, (cut.width / gray.shape[1], cut.height / gray.shape[0]), (left, top)
