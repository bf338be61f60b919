"""All image decoding and preprocessing: any digit picture -> an MNIST-style (28, 28) float32 array.

MNIST recipe: white ink on black, the digit fitted into a 20x20 box (aspect kept, antialiased) and
pasted into 28x28 so that its centre of mass sits at the centre. Values 0..1; the model's mean/std
normalisation happens later, in the batcher. Every function here is synchronous and CPU-bound:
the routes call them in a thread pool.
"""

from __future__ import annotations

import base64
import binascii
import io
import logging
import math

import numpy as np
from PIL import Image, ImageFilter, ImageOps, UnidentifiedImageError

from .errors import BadImage, InvalidInput, NoInk, PayloadTooLarge, UnsupportedMediaType

log = logging.getLogger(__name__)

SIZE = 28  # output side
BOX = 20  # the digit is fitted into BOX x BOX
CENTRE = 14.0  # MNIST centres of mass lie in [13.5, 14.5] (row/col index coordinates)
WORK_SIZE = 256  # larger images are reduced to at most this side before processing
MID_SIZE = 4 * BOX  # intermediate size of the cropped digit, where strokes are measured and thickened
MNIST_STROKE = 0.117  # median MNIST stroke width as a fraction of the 20 px box
MIN_CONTRAST = 0.12  # ink must stand out from the background by this much (0..1) or the canvas is empty

SUPPORTED_FORMATS = frozenset({"PNG", "JPEG", "MPO", "WEBP", "BMP", "DIB", "GIF"})
SUPPORTED_MEDIA_TYPES = frozenset(
    {"image/png", "image/jpeg", "image/jpg", "image/pjpeg", "image/webp", "image/bmp", "image/x-ms-bmp",
     "image/x-bmp", "image/gif"}
)  # fmt: skip


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
    """Base64 (standard alphabet, optional ``data:image/...;base64,`` prefix) -> bytes."""
    if text.startswith("data:"):
        _, sep, text = text.partition(",")
        if not sep:
            raise BadImage("data URL without a ',' before the base64 payload")
    try:
        return base64.b64decode("".join(text.split()), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise BadImage(f"image is not valid base64: {exc}") from exc


def pixels_to_array(pixels: object, where: str = "pixels") -> np.ndarray:
    """28 rows of 28 numbers 0..255, MNIST polarity, used as-is -> (28, 28) float32 0..1."""
    try:
        arr = np.asarray(pixels, dtype=np.float32)
    except (ValueError, TypeError) as exc:
        raise InvalidInput(f"{where} must be 28 rows of 28 numbers 0-255 ({exc})") from exc
    if arr.shape != (SIZE, SIZE):
        raise InvalidInput(f"{where} must be 28 rows of 28 numbers 0-255, got shape {list(arr.shape)}")
    if not np.isfinite(arr).all() or arr.min() < 0 or arr.max() > 255:
        raise InvalidInput(f"{where} values must be finite numbers in 0..255")
    arr /= 255.0
    if arr.max() < MIN_CONTRAST:
        raise NoInk(f"{where}: no ink found (the canvas is empty)")
    return arr


def decode_image(data: bytes, max_pixels: int) -> Image.Image:
    """Bytes -> a loaded Pillow image, orientation applied. Raises 400/413/415 errors."""
    if not data:
        raise BadImage("empty body: expected image bytes")
    try:
        img = Image.open(io.BytesIO(data))
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise PayloadTooLarge(f"decompression bomb refused: {exc}") from exc
    except UnidentifiedImageError as exc:
        raise BadImage("not an image: the bytes are not a PNG, JPEG, WebP, BMP or GIF") from exc
    except Exception as exc:  # corrupt headers make some plugins raise odd errors
        raise BadImage(f"could not read the image: {exc}") from exc
    if img.format not in SUPPORTED_FORMATS:
        raise UnsupportedMediaType(
            f"image format {img.format} is not supported; send PNG, JPEG, WebP, BMP or GIF"
        )
    width, height = img.size
    if width * height > max_pixels:
        raise PayloadTooLarge(
            f"image is {width}x{height} = {width * height} pixels; the limit is {max_pixels}"
        )
    if width < 1 or height < 1:
        raise BadImage("image has no pixels")
    try:
        if img.format in ("JPEG", "MPO"):
            img.draft("L", (WORK_SIZE, WORK_SIZE))  # decode JPEG at reduced scale, straight to gray
        img.load()
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise PayloadTooLarge(f"decompression bomb refused: {exc}") from exc
    except Exception as exc:
        raise BadImage(f"could not decode the image (truncated or corrupt {img.format}): {exc}") from exc
    if "exif" in img.info:  # camera pictures: apply the orientation tag
        try:
            img = ImageOps.exif_transpose(img)
        except Exception:  # a broken EXIF block should not cost the prediction
            log.debug("ignoring unreadable EXIF orientation", exc_info=True)
    return img


def _to_gray(img: Image.Image) -> np.ndarray:
    """Pillow image (any mode) -> gray float32 0..1 at most WORK_SIZE per side, alpha composited."""
    factor = math.ceil(max(img.size) / WORK_SIZE)
    if img.mode.startswith("I") or img.mode == "F":  # 16/32-bit gray
        img = img.convert("F") if img.mode == "F" else img.convert("I").convert("F")
        if factor > 1:
            img = img.reduce(factor)
        arr = np.asarray(img, dtype=np.float32)
        top = float(arr.max())
        return arr / (65535.0 if top > 255 else 255.0 if top > 1 else 1.0)
    has_alpha = img.mode in ("RGBA", "LA", "PA", "RGBa", "La") or "transparency" in img.info
    if img.mode in ("La", "LAB"):
        img = img.convert("RGBA" if has_alpha else "RGB")
    img = img.convert("LA" if has_alpha else "L")
    if factor > 1:
        img = img.reduce(factor)
    if not has_alpha:
        return np.asarray(img, dtype=np.float32) / 255.0
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


def _quantiles(x: np.ndarray, qs: tuple[float, ...]) -> list[float]:
    """Fast approximate quantiles of values in 0..1 from a 1024-bin histogram."""
    hist = np.bincount(np.clip(x.ravel() * 1023.0, 0, 1023).astype(np.int32), minlength=1024)
    cum = np.cumsum(hist) / x.size
    return [float(np.searchsorted(cum, q)) / 1023.0 for q in qs]


def _median(v: np.ndarray) -> float:
    """np.median of a 1-D array (same partition, same mean of the middle pair) without its
    ~10 µs of checks: it runs twice per request on the hot 28x28 path."""
    k = v.size // 2
    if v.size % 2:
        return float(np.partition(v, k)[k])
    part = np.partition(v, (k - 1, k))
    return float((part[k - 1] + part[k]) / 2)


def _border(x: np.ndarray) -> np.ndarray:
    b = max(1, min(x.shape) // 20)
    return np.concatenate([x[:b].ravel(), x[-b:].ravel(), x[:, :b].ravel(), x[:, -b:].ravel()])


def _white_on_black(gray: np.ndarray) -> np.ndarray:
    """Ink brighter than the paper: invert when the extremes say the ink is dark."""
    paper = _median(_border(gray))
    lo, hi = _quantiles(gray, (0.01, 0.99))
    return 1.0 - gray if (paper - lo) > (hi - paper) else gray


def _background(x: np.ndarray) -> np.ndarray:
    """Smooth estimate of the (dark) paper: tile medians, eroded over 3x3 tiles, bilinear upsampled."""
    h, w = x.shape
    if min(h, w) < 16:  # too small for tiles: flat paper
        return np.full_like(x, _median(_border(x)))
    tile = max(8, min(h, w) // 6)
    th, tw = max(1, h // tile), max(1, w // tile)
    tiles = x[: th * tile, : tw * tile].reshape(th, tile, tw, tile).transpose(0, 2, 1, 3)
    grid = np.median(tiles.reshape(th, tw, -1), axis=-1).astype(np.float32)
    padded = np.pad(grid, 1, mode="edge")  # min over the 3x3 neighbourhood: strokes never raise it
    grid = np.min([padded[i : i + th, j : j + tw] for i in range(3) for j in range(3)], axis=0)
    return np.asarray(Image.fromarray(grid, "F").resize((w, h), Image.Resampling.BILINEAR))


def _blur3(x: np.ndarray) -> np.ndarray:
    """3x3 box blur (separable), edges replicated: takes the grain out of photographed paper."""
    p = np.pad(x, 1, mode="edge")
    rows = p[:-2] + p[1:-1] + p[2:]
    return (rows[:, :-2] + rows[:, 1:-1] + rows[:, 2:]) / 9.0


def _resize(x: np.ndarray, width: int, height: int) -> np.ndarray:
    img = Image.fromarray(np.ascontiguousarray(x, dtype=np.float32), "F")
    return np.clip(np.asarray(img.resize((width, height), Image.Resampling.LANCZOS)), 0.0, 1.0)


def _thicken(x: np.ndarray) -> np.ndarray:
    """Dilate thin strokes (pen on paper) towards MNIST's stroke width; x is at MID_SIZE scale."""
    mask = x > 0.5
    area = int(mask.sum())
    if area == 0:
        return x
    m = mask.astype(np.int8)
    perimeter = int(np.abs(np.diff(m, axis=0)).sum() + np.abs(np.diff(m, axis=1)).sum()) / 1.27
    width = 2.0 * area / max(perimeter, 1.0)
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
    idx = np.flatnonzero(profile > 0)
    breaks = np.flatnonzero(np.diff(idx) > 1)
    starts = np.concatenate([idx[:1], idx[breaks + 1]])
    ends = np.concatenate([idx[breaks], idx[-1:]])
    mass = np.array([profile[a : b + 1].sum() for a, b in zip(starts, ends, strict=True)])
    keep = np.flatnonzero(mass >= min_share * mass.sum())
    if keep.size == 0:
        keep = np.array([int(mass.argmax())])
    return int(starts[keep[0]]), int(ends[keep[-1]])


def _crop_to_ink(x: np.ndarray) -> np.ndarray:
    """Crop to the digit's ink, ignoring isolated specks (rows, then columns, then rows again)."""
    r0, r1 = _main_span(x.sum(axis=1))
    x = x[r0 : r1 + 1]
    c0, c1 = _main_span(x.sum(axis=0))
    x = x[:, c0 : c1 + 1]
    r0, r1 = _main_span(x.sum(axis=1))
    return x[r0 : r1 + 1]


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


def to_mnist(gray: np.ndarray) -> np.ndarray:
    """Gray image (any polarity, 0..1) -> MNIST-style (28, 28) float32. Raises NoInk (422)."""
    x = _white_on_black(gray.astype(np.float32, copy=False))
    if x.shape == (SIZE, SIZE) and _median(_border(x)) < 0.05:
        if float(x.max()) < MIN_CONTRAST:
            raise NoInk("no ink found: the canvas is empty")
        fast = _is_mnist_like(x)
        if fast is not None:
            return np.clip(fast, 0.0, 1.0).astype(np.float32, copy=False)
    x = np.clip(x - _background(x), 0.0, None)
    peak = float(x.max())
    if peak < MIN_CONTRAST:
        raise NoInk("no ink found: the canvas is empty or has too little contrast")
    x /= peak
    median, q75 = _quantiles(x, (0.5, 0.75))
    noise = max(q75 - median, 0.0)  # spread of the paper's texture (the ink is a minority)
    if noise > 0.02 and min(x.shape) >= 32:
        x = _blur3(x)
    t = float(np.clip(median + 0.05 + 4.0 * noise, 0.05, 0.5))
    x = np.clip((x - t) / (1.0 - t), 0.0, 1.0)
    if not x.any():
        raise NoInk("no ink found: the canvas is empty")
    crop = _crop_to_ink(x)
    h, w = crop.shape
    if max(h, w) > MID_SIZE:  # measure and thicken strokes at a fixed scale
        s = MID_SIZE / max(h, w)
        crop = _thicken(_resize(crop, max(1, round(w * s)), max(1, round(h * s))))
        h, w = crop.shape
    s = BOX / max(h, w)
    patch = _resize(crop, max(1, round(w * s)), max(1, round(h * s)))
    top = float(patch.max())
    if top <= 0.0:
        raise NoInk("no ink found: the canvas is empty")
    return _centre(patch / top)


def preprocess_bytes(data: bytes, max_pixels: int) -> np.ndarray:
    """Encoded image bytes -> MNIST-style (28, 28) float32 0..1."""
    return to_mnist(_to_gray(decode_image(data, max_pixels)))
