"""Bytes -> gray pixels: decoding, format and size checks, alpha, EXIF and dithering, and the errors they
raise.

model_store knows nothing of HTTP: each ``ImageError`` subclass names the status a server should
answer (the app maps them to its own errors). Every function here is synchronous and CPU-bound.
"""

from __future__ import annotations

import base64
import binascii
import io
import logging
import math
from collections.abc import Callable
from typing import TypeVar

import numpy as np
from PIL import Image, ImageFilter, ImageOps, UnidentifiedImageError

log = logging.getLogger(__name__)
T = TypeVar("T")

URL_SAFE = str.maketrans("-_", "+/")  # base64url (RFC 4648, section 5) -> the standard alphabet

FULL_SIZE = "vit_digits_full_size"  # decode_image's notes in Image.info: the picture's size, ...
IN_COLOUR = "vit_digits_in_colour"  # ... whether it has colours (a JPEG may be decoded to gray), ...
BY_COLOUR = "vit_digits_by_colour"  # ... and whether to_gray reads it by its colours, not its luminance
GRAY_MODES = frozenset({"1", "L", "LA", "La", "I", "I;16", "I;16B", "I;16L", "I;16N", "F"})
WORK_SIZE = 256  # larger images are reduced to at most this side before processing
OPAQUE = 253  # alpha (of 255) from which a pixel counts as covered: above 0.99, as alpha compositing takes it
# A picture in two levels draws gray with dots (a dithered 1-bit scan, a fax, a two-colour GIF) when at
# least DOT_SHARE of its pixels are lone dots; it is blurred back to gray over DOT_RADIUS of the dots'
# mean spacing (1 / sqrt(share)), within DOT_RADIUS_PX.
DOT_SHARE = 0.005
DOT_RADIUS = 0.4
DOT_RADIUS_PX = (1.0, 6.0)


class ImageError(ValueError):
    """A picture (or pixel list) that cannot become a digit; the message is meant for the client.
    model_store knows nothing of HTTP: each subclass names the status a server should answer."""


class NotAnImage(ImageError):
    """Not an image, corrupt or truncated (HTTP 400)."""


class UnsupportedFormat(ImageError):
    """A real image in a format the models are not served from (HTTP 415)."""


class ImageTooLarge(ImageError):
    """Too many pixels, or a decompression bomb (HTTP 413)."""


class NoInk(ImageError):
    """An empty canvas: nothing stands out from the paper (HTTP 422)."""


class InvalidPixels(ImageError):
    """A pixel list that is not 28 rows of 28 numbers 0..255 (HTTP 422)."""


# HEIC is what iPhones (and many Android phones) photograph in; AVIF is Pillow's own, HEIF comes from
# pillow-heif, which applies the picture's rotation while decoding (and resets its EXIF orientation).
# It is a project dependency, but other environments import model_store too (../shared/peers): without
# it, HEIC is an unsupported format there, not an import error.
try:
    from pillow_heif import register_heif_opener
except ImportError:
    HEIC = False
else:
    register_heif_opener()
    HEIC = True
# TIFF is what scanners and fax software write (1-bit Group 3/4 too); of a multi-page file, or an
# animated GIF, the first page is read.
SUPPORTED_FORMATS = frozenset(
    {"PNG", "JPEG", "MPO", "WEBP", "BMP", "DIB", "GIF", "TIFF", "AVIF"} | ({"HEIF"} if HEIC else set())
)
SUPPORTED_MEDIA_TYPES = frozenset(
    {"image/png", "image/jpeg", "image/jpg", "image/pjpeg", "image/webp", "image/bmp", "image/x-ms-bmp",
     "image/x-bmp", "image/gif", "image/tiff", "image/tiff-fx", "image/heic", "image/heif", "image/avif"}
)  # fmt: skip
# for error messages
FORMAT_NAMES = f"PNG, JPEG, WebP, BMP, GIF, TIFF, {'HEIC or AVIF' if HEIC else 'or AVIF'}"


_pillow_limit = 0


def configure(max_image_pixels: int) -> None:
    """Pillow's own bomb guard (DecompressionBombError above 2x its limit) set from the settings.
    Each decode also checks its own limit (``decode_image``), so several apps in one process (tests)
    share the largest limit here without loosening anyone's check."""
    global _pillow_limit
    _pillow_limit = max(_pillow_limit, max_image_pixels)
    Image.MAX_IMAGE_PIXELS = _pillow_limit


# ---------------------------------------------------------------------------------------------- input


def decode_base64(text: str) -> bytes:
    """Base64 -> bytes: the standard alphabet or the URL-safe one (``-`` and ``_``, as browsers' and
    JWT libraries' encoders give it), padded or not, line breaks allowed, an optional
    ``data:image/...;base64,`` prefix. Anything else is refused: the bytes must still be a picture."""
    if text.startswith("data:"):
        _, sep, text = text.partition(",")
        if not sep:
            raise NotAnImage("data URL without a ',' before the base64 payload")
    compact = "".join(text.split()).translate(URL_SAFE)
    try:
        return base64.b64decode(compact + "=" * (-len(compact) % 4), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise NotAnImage(f"image is not valid base64: {exc}") from exc


def decode_image(
    data: bytes, max_pixels: int, draft: tuple[int, int] | None = (WORK_SIZE, WORK_SIZE), colour: bool = False
) -> Image.Image:
    """Bytes -> a loaded Pillow image, orientation applied; ``draft``: a JPEG is decoded at the smallest
    of its scales (1/8 to 1) at least that size (the picture then comes back smaller than it is; None:
    at its own size); ``colour``: ``to_gray`` reads it
    by its colours (a JPEG is decoded straight to gray otherwise). Raises NotAnImage, ImageTooLarge or
    UnsupportedFormat."""
    if not data:
        raise NotAnImage("empty body: expected image bytes")
    try:
        img = Image.open(io.BytesIO(data))
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise ImageTooLarge(f"image has more pixels than the limit of {max_pixels}") from exc
    except UnidentifiedImageError as exc:
        raise NotAnImage(f"not an image: the bytes are not a {FORMAT_NAMES}") from exc
    except Exception as exc:  # corrupt headers make some plugins raise odd errors
        raise NotAnImage(f"could not read the image: {exc}") from exc
    if img.format not in SUPPORTED_FORMATS:
        raise UnsupportedFormat(f"image format {img.format} is not supported; send {FORMAT_NAMES}")
    width, height = img.size
    if width * height > max_pixels:
        raise ImageTooLarge(f"image is {width}x{height} = {width * height} pixels; the limit is {max_pixels}")
    if width < 1 or height < 1:
        raise NotAnImage("image has no pixels")
    in_colour = img.mode not in GRAY_MODES
    try:
        if img.format in ("JPEG", "MPO"):  # straight to gray (a third of the memory), at reduced scale
            img.draft("RGB" if colour and in_colour else "L", draft or img.size)
        img.load()
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise ImageTooLarge(f"decompression bomb refused: over the limit of {max_pixels} pixels") from exc
    except Exception as exc:
        raise NotAnImage(f"could not decode the image (truncated or corrupt {img.format}): {exc}") from exc
    if "exif" in img.info:  # camera pictures: apply the orientation tag
        try:
            img = ImageOps.exif_transpose(img)
        except Exception:  # a broken EXIF block should not cost the prediction
            log.debug("ignoring unreadable EXIF orientation", exc_info=True)
    turned = (img.width > img.height) != (width > height)  # the orientation tag turned it a quarter
    img.info[FULL_SIZE] = (height, width) if turned else (width, height)
    img.info[IN_COLOUR] = in_colour
    img.info[BY_COLOUR] = colour and in_colour
    return img


def by_luminance_then_colour(data: bytes, max_pixels: int, read: Callable[[Image.Image], T]) -> T:
    """``read(picture)`` of the picture ``data`` decodes to, read by its luminance; where nothing stands
    out in it (NoInk) but the picture has colours, again read by its colours (noted in the picture, so
    its crops and the full-size decode of a JPEG are too): ink as light as its paper (yellow on white).
    A JPEG decoded straight to gray is decoded again."""
    img = decode_image(data, max_pixels)
    try:
        return read(img)
    except NoInk:
        if not img.info[IN_COLOUR]:
            raise
    if img.mode in GRAY_MODES:
        return read(decode_image(data, max_pixels, colour=True))
    img.info[BY_COLOUR] = True
    return read(img)


def decoded_whole(data: bytes, max_pixels: int, img: Image.Image) -> Image.Image:
    """The picture ``img`` was decoded from ``data`` at its own size: a JPEG decoded at a reduced scale
    is decoded again (by its colours if ``img`` is read so); ``img`` itself otherwise."""
    return _at_scale(data, max_pixels, img, 1)


def _at_scale(data: bytes, max_pixels: int, img: Image.Image, scale: int) -> Image.Image:
    """``img`` as decoded from ``data`` at 1/``scale`` (1, 2, 4 or 8) of its size or finer: a JPEG
    decoded coarser is decoded again."""
    if img.format not in ("JPEG", "MPO") or _scale(img) <= scale:
        return img
    least = min(full_size(img)) // scale  # the draft box is square: sized by the shorter side
    return decode_image(data, max_pixels, (least, least), bool(img.info.get(BY_COLOUR)))


def _scale(img: Image.Image) -> int:
    """How many times smaller than its picture ``img`` was decoded (a JPEG's scale: 1, 2, 4 or 8)."""
    return round(max(full_size(img)) / max(img.size))


def full_size(img: Image.Image) -> tuple[int, int]:
    """Width and height of the picture ``img`` was decoded from, upright (a reduced JPEG's are larger)."""
    return img.info.get(FULL_SIZE, img.size)


def _deep_to_unit(arr: np.ndarray) -> np.ndarray:
    """16/32-bit gray -> 0..1: by the range its top suggests (1, 255 or 65535); values outside
    0..65535 (a float or 32-bit picture of other units) by its own minimum and maximum."""
    if not np.isfinite(arr).all():
        raise NotAnImage("the image has pixel values that are not finite numbers (NaN or infinity)")
    low, top = float(arr.min()), float(arr.max())
    if low < 0 or top > 65535:
        wide = (arr.astype(np.float64) - low) / (top - low) if top > low else np.zeros(arr.shape)
        return wide.astype(np.float32)  # in float64: top - low may pass float32's range
    return arr / (65535.0 if top > 255 else 255.0 if top > 1 else 1.0)


def to_gray(img: Image.Image) -> np.ndarray:
    """Pillow image (any mode) -> gray float32 0..1 at most WORK_SIZE per side, alpha composited: its
    luminance, or for an opaque picture noted to be read by its colours (``by_luminance_then_colour``)
    how far each pixel's colour is from the paper's (``colour_distance``)."""
    factor = math.ceil(max(img.size) / WORK_SIZE)
    if img.mode.startswith("I") or img.mode == "F":  # 16/32-bit gray
        img = img.convert("F") if img.mode == "F" else img.convert("I").convert("F")
        if factor > 1:
            img = img.reduce(factor)
        return _deep_to_unit(np.asarray(img, dtype=np.float32))
    has_alpha = _has_alpha(img)
    if img.info.get(BY_COLOUR) and img.mode not in GRAY_MODES and (not has_alpha or _opaque(img)):
        rgb = img.convert("RGB")
        return colour_distance(np.asarray(rgb.reduce(factor) if factor > 1 else rgb))
    if img.mode in ("La", "LAB"):
        img = img.convert("RGBA" if has_alpha else "RGB")
    img = img.convert("LA" if has_alpha else "L")
    if factor > 1:
        img = img.reduce(factor)
    if not has_alpha:
        return _dots_to_gray(np.asarray(img)).astype(np.float32) / 255.0
    la = np.asarray(img, dtype=np.float32) / 255.0
    gray, alpha = la[..., 0], la[..., 1]
    if alpha.min() > 0.99:
        return gray
    weight = float(alpha.sum())
    if weight < 1e-3:
        raise NoInk("the image is fully transparent: no ink found")
    # Transparent pixels take the colour opposite to the strokes': dark strokes go onto white.
    ink_level = float((gray * alpha).sum()) / weight
    background = 1.0 if ink_level < 0.5 else 0.0
    return gray * alpha + background * (1.0 - alpha)


def luminance(data: bytes, max_pixels: int, img: Image.Image, side: int) -> np.ndarray | None:
    """The luminance (0..255, int16) of the opaque 8-bit picture ``img`` was decoded from ``data`` at
    most ``side`` px a side, reduced by averaging as ``to_gray`` reduces, by the same whole factor
    whatever the format (a JPEG decoded at a reduced scale is decoded again at the coarsest of its
    scales that factor is a multiple of): a finer copy than the working one, where a line a pixel wide
    still shows. None for a picture with transparent pixels or more than 8 bits a channel."""
    if img.mode.startswith("I") or img.mode == "F":
        return None
    if _has_alpha(img) and not _opaque(img):
        return None
    factor = math.ceil(max(full_size(img)) / side)
    scale = next(s for s in (8, 4, 2, 1) if factor % s == 0)
    img = _at_scale(data, max_pixels, img, scale)
    factor //= _scale(img)
    gray = img.convert("RGB").convert("L") if img.mode in ("La", "LAB", "RGBa", "PA") else img.convert("L")
    return np.asarray(gray.reduce(factor) if factor > 1 else gray).astype(np.int16)


def _has_alpha(img: Image.Image) -> bool:
    """Whether the picture has an alpha channel or a transparent colour."""
    return img.mode in ("RGBA", "LA", "PA", "RGBa", "La") or "transparency" in img.info


def _opaque(img: Image.Image) -> bool:
    """Whether a picture with an alpha channel covers every pixel (a canvas exported as RGBA)."""
    return img.convert("RGBA").getchannel("A").getextrema()[0] >= OPAQUE


def colour_distance(rgb: np.ndarray) -> np.ndarray:
    """(h, w, 3) uint8 -> gray float32 0..1: white less how far each pixel's hue is from the paper's
    (the median along the frame): its difference from the paper's colour less the part all channels
    share, in the channel where that is largest. Ink as light as its paper (yellow on white, blue on
    black, red on green) stands out by its colour alone, and light falling off across a page, which
    darkens every channel alike, does not; nor do faint gray marks."""
    x = rgb.astype(np.float32) / 255.0
    paper = np.median(np.concatenate([x[0], x[-1], x[:, 0], x[:, -1]]), axis=0)
    d = x - paper
    return (1.0 - np.abs(d - d.mean(axis=-1, keepdims=True)).max(axis=-1)).astype(np.float32)


def _dots_to_gray(gray: np.ndarray) -> np.ndarray:
    """A uint8 gray picture in two levels that draws its grays with dots (dithered) -> the grays it
    draws: blurred over about the dots' spacing. Any other picture, a drawing in two colours too, comes
    back as it is. Left dotted, a dithered page's paper is speckled with ink: of the robustness suite's
    dithered digits, 7-12% were called "not a digit" and 6-7% misread."""
    sample = gray[::8, ::8]  # a third level shows at once in almost every picture: a few us
    lo, hi = sample.min(), sample.max()
    if np.count_nonzero((sample != lo) & (sample != hi)):
        return gray
    img = Image.fromarray(gray)
    if img.getcolors(2) is None:  # more than two levels after all
        return gray
    dark = gray < (int(gray.min()) + int(gray.max()) + 1) // 2
    share = max(_lone_share(dark), _lone_share(~dark))
    if share < DOT_SHARE:  # strokes and paper, not dots
        return gray
    lo_px, hi_px = DOT_RADIUS_PX
    radius = min(max(DOT_RADIUS / math.sqrt(share), lo_px), hi_px)
    return np.asarray(img.filter(ImageFilter.GaussianBlur(radius)))


def _lone_share(on: np.ndarray) -> float:
    """The share of all pixels that are on with none of their 8 neighbours on."""
    h, w = on.shape
    padded = np.pad(on, 1)
    neighbour = np.zeros_like(on)
    for dy in range(3):
        for dx in range(3):
            if dy != 1 or dx != 1:
                neighbour |= padded[dy : dy + h, dx : dx + w]
    return float(np.count_nonzero(on & ~neighbour)) / on.size
