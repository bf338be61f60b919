"""Corrupted uploads of what the digit is written on and how it is sent: ruled notebook paper, a form's
box or line, chalk on a board, a drawing app's transparent export, a 1-bit scan, a whole page scanned, a
crop flush to the ink (``training.corruptions``)."""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageFilter

from .corruption_base import encoded, ink_at, morphed, on_canvas, on_page, random_side, to_u8


def _rulings(coord: np.ndarray, gap: float, width: float, rng: np.random.Generator) -> np.ndarray:
    """``ruling_lines`` at a random offset."""
    return ruling_lines(coord - rng.uniform(0, gap), gap, width)


def ruling_lines(coord: np.ndarray, gap: float, width: float) -> np.ndarray:
    """1 on printed lines ``gap`` apart where ``coord`` is a multiple of it (``width`` px wide,
    anti-aliased), 0 between."""
    m = coord % gap
    return np.clip(width / 2 + 0.5 - np.minimum(m, gap - m), 0.0, 1.0)


def _pen_digit(u8: np.ndarray, rng: np.random.Generator) -> tuple[int, np.ndarray]:
    """The digit as a ball-point pen writes it: its side, and its ink at that side, as MNIST's stroke or
    up to 1.5 (MNIST) px finer."""
    side = random_side(rng)
    ink, finer = ink_at(u8, side), int(rng.uniform(0.0, 1.5) * side / 28)
    return side, morphed(ink, finer, grow=False) if finer >= 3 else ink


def _written_on(rgb: np.ndarray, ink: np.ndarray, rng: np.random.Generator) -> bytes:
    """The pen's ink (blue or black) over a colour page, a little sensor noise, JPEG."""
    pen = np.array([[0.1, 0.15, 0.6], [0.12, 0.12, 0.12]])[int(rng.integers(2))]
    rgb = rgb + (pen - rgb) * ink[..., None] + rng.normal(0, 0.01, rgb.shape)
    return encoded(Image.fromarray(to_u8(rgb), "RGB"), "JPEG", quality=int(rng.integers(70, 93)))


def ruled_paper(u8: np.ndarray, rng: np.random.Generator) -> bytes:
    """A school notebook: the digit written with a pen (as MNIST's or up to 1.5 px finer) on lined or
    squared paper, 1.7-3.3 rulings tall, the rulings light blue, gray or blue, tilted up to 2 degrees,
    sometimes a red margin line; photographed with paper around the digit (JPEG)."""
    side, ink = _pen_digit(u8, rng)
    size = int(side * rng.uniform(1.2, 1.8))
    ink = on_canvas(ink, size, size, rng)
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32)
    gap, width = rng.uniform(0.3, 0.6) * side * 20 / 28, max(1.0, rng.uniform(0.008, 0.02) * side)
    tilt = np.tan(np.radians(rng.uniform(-2, 2)))
    rule = _rulings(yy + tilt * xx, gap, width, rng)
    if rng.random() < 0.4:  # squared paper
        rule = np.maximum(rule, _rulings(xx - tilt * yy, gap, width, rng))
    colour = np.array([[0.55, 0.7, 0.92], [0.7, 0.7, 0.7], [0.35, 0.45, 0.75]])[int(rng.integers(3))]
    paper = rng.uniform(0.9, 1.0, 3)
    rgb = paper + (colour - paper) * (rule * rng.uniform(0.6, 1.0))[..., None]
    if rng.random() < 0.15:  # the margin line
        margin = np.clip(width / 2 + 0.5 - np.abs(xx - rng.uniform(0.05, 0.95) * size), 0.0, 1.0)
        rgb += (np.array([0.85, 0.3, 0.3]) - rgb) * margin[..., None]
    return _written_on(rgb, ink, rng)


def _segment(
    xx: np.ndarray, yy: np.ndarray, a: tuple[float, float], b: tuple[float, float], width: float
) -> np.ndarray:
    """1 on a straight line from a to b ``width`` px wide (anti-aliased, round ends), 0 off it."""
    (ax, ay), (bx, by) = a, b
    dx, dy = bx - ax, by - ay
    t = np.clip(((xx - ax) * dx + (yy - ay) * dy) / max(dx * dx + dy * dy, 1e-9), 0.0, 1.0)
    dist = np.hypot(xx - ax - t * dx, yy - ay - t * dy)
    return np.clip(width / 2 + 0.5 - dist, 0.0, 1.0)


def form_field(u8: np.ndarray, rng: np.random.Generator) -> bytes:
    """A form: the digit written with a pen (as MNIST's or up to 1.5 px finer) in a printed box (half
    the forms), on a comb field's line with ticks at its ends (one in six) or on an answer line or
    underlined by its writer (the rest); the lines printed thin or drawn as thick as a pen, black, gray,
    blue or an OCR form's light drop-out colour, tilted up to 2 degrees, the box 10-60% of the digit's
    height beyond it on each side; scanned or photographed with the form around it (JPEG)."""
    side, ink = _pen_digit(u8, rng)
    rows, cols = np.flatnonzero(ink.max(axis=1) > 0.3), np.flatnonzero(ink.max(axis=0) > 0.3)
    top, bottom, left, right = rows[0], rows[-1], cols[0], cols[-1]
    tall = bottom - top + 1
    kind = rng.random()
    if kind < 0.5:  # a box
        y0, y1 = top - rng.uniform(0.1, 0.6) * tall, bottom + rng.uniform(0.1, 0.6) * tall
        x0, x1 = left - rng.uniform(0.1, 0.6) * tall, right + rng.uniform(0.1, 0.6) * tall
        ends = [((x0, y0), (x1, y0)), ((x1, y0), (x1, y1)), ((x1, y1), (x0, y1)), ((x0, y1), (x0, y0))]
    else:  # a line under the digit, a comb field's with ticks
        y = bottom + rng.uniform(0.03, 0.2) * tall
        reach = (right - left + 1) * rng.uniform(0.1, 0.5)
        x0, x1 = left - reach * rng.uniform(0.5, 1.5), right + reach * rng.uniform(0.5, 1.5)
        y0 = y1 = y
        ends = [((x0, y), (x1, y))]
        if kind < 0.67:
            tick = rng.uniform(0.15, 0.4) * tall
            ends += [((x0, y), (x0, y - tick)), ((x1, y), (x1, y - tick))]
    # The form around the field: paper beyond the lines (and the digit) on every side.
    pad = [int(rng.uniform(0.1, 0.5) * side) for _ in range(4)]
    oy, ox = pad[0] - int(min(0, y0)), pad[1] - int(min(0, x0))
    height = oy + int(max(side, y1)) + pad[2]
    width = ox + int(max(side, x1)) + pad[3]
    canvas = np.zeros((height, width), np.float32)
    canvas[oy : oy + side, ox : ox + side] = ink
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    tilt = np.tan(np.radians(rng.uniform(-2, 2)))
    cx, cy = ox + side / 2, oy + side / 2
    line = max(1.0, rng.uniform(0.005, 0.06) * side)
    rule = np.zeros_like(canvas)
    for (ax, ay), (bx, by) in ends:  # tilted about the digit's centre
        a = (cx + ax - side / 2 - tilt * (ay - side / 2), cy + ay - side / 2 + tilt * (ax - side / 2))
        b = (cx + bx - side / 2 - tilt * (by - side / 2), cy + by - side / 2 + tilt * (bx - side / 2))
        rule = np.maximum(rule, _segment(xx, yy, a, b, line))
    colours = [[0.1, 0.1, 0.1], [0.55, 0.55, 0.55], [0.2, 0.3, 0.7], [0.6, 0.75, 0.95], [0.95, 0.6, 0.6]]
    colour = np.array(colours[int(rng.integers(len(colours)))])
    paper = rng.uniform(0.9, 1.0, 3)
    rgb = paper + (colour - paper) * rule[..., None]
    return _written_on(rgb, canvas, rng)


def inverted(u8: np.ndarray, rng: np.random.Generator) -> bytes:
    """Chalk on a blackboard: light strokes on a dark, slightly noisy board."""
    side = random_side(rng)
    board = rng.uniform(0.1, 0.3)
    page = on_page(ink_at(u8, side), board, rng.uniform(0.8, 1.0)) + rng.normal(0, 0.02, (side, side))
    return encoded(page)


def transparent(u8: np.ndarray, rng: np.random.Generator) -> bytes:
    """A drawing app's export: strokes (black or white) as alpha on a transparent canvas."""
    side = random_side(rng)
    rgba = np.zeros((side, side, 4), np.uint8)
    rgba[..., :3] = 255 if rng.random() < 0.5 else 0
    rgba[..., 3] = to_u8(ink_at(u8, side))
    return encoded(Image.fromarray(rgba, "RGBA"))


BAYER4 = (np.array([[0, 8, 2, 10], [12, 4, 14, 6], [3, 11, 1, 9], [15, 7, 13, 5]]) + 0.5) / 16


def dithered(u8: np.ndarray, rng: np.random.Generator) -> bytes:
    """A 1-bit scan, a fax or a two-colour GIF: gray paper and ink drawn with black and white dots, by
    error diffusion (Floyd-Steinberg, as Pillow and most scanner drivers do; half of them scanned soft
    first) or an ordered 4x4 Bayer screen; 40-400 px, paper 0.8-1.0, ink 0-0.45."""
    side = int(rng.integers(40, 401))
    page = on_page(ink_at(u8, side), paper=rng.uniform(0.8, 1.0), pen=rng.uniform(0.0, 0.45))
    if rng.random() < 0.5:
        img = Image.fromarray(to_u8(page))
        if rng.random() < 0.5:
            img = img.filter(ImageFilter.GaussianBlur(rng.uniform(0.5, 2.0)))
        return encoded(img.convert("1"))
    screen = np.tile(BAYER4, (side // 4 + 1, side // 4 + 1))[:side, :side]
    return encoded((page > screen).astype(np.float32))


def page_format(rng: np.random.Generator) -> tuple[float, int, int]:
    """A page as an office scanner or a fax sends it: A5 or A4, portrait, at 150-300 dpi: (dpi, width,
    height) in pixels."""
    dpi = rng.uniform(150, 300)
    width, height = (round(dpi * cm / 2.54) for cm in ((14.8, 21.0) if rng.random() < 0.5 else (21.0, 29.7)))
    return dpi, width, height


def scanned(
    size: tuple[int, int], ink: np.ndarray, top: int, left: int, rng: np.random.Generator
) -> tuple[np.ndarray, bool]:
    """Ink coverage laid on a page of ``size`` (width, height) at (top, left), paper 0.9-1.0 and pen 0-0.3
    -> (the page 0..1, whether it is scanned to 1 bit): one scan of three is (the caller thresholds it),
    the others carry the scanner's grain."""
    width, height = size
    paper, pen = rng.uniform(0.9, 1.0), rng.uniform(0.0, 0.3)
    page = np.full((height, width), paper, np.float32)
    h, w = ink.shape
    page[top : top + h, left : left + w] += (pen - paper) * np.clip(ink, 0.0, 1.0)
    if rng.random() < 1 / 3:
        return page, True
    return page + rng.normal(0.0, 0.01, page.shape).astype(np.float32), False


def page_scan(u8: np.ndarray, rng: np.random.Generator) -> bytes:
    """A whole page scanned with one digit written on it (``page_format``, ``scanned``), the digit
    0.6-1.5 cm tall anywhere in the page's middle 80%: gray PNG, or a 1-bit Group 4 TIFF."""
    dpi, width, height = page_format(rng)
    tall = dpi * rng.uniform(0.6, 1.5) / 2.54  # the digit's 20-px box, in the page's pixels
    side = max(8, round(tall * 28 / 20))
    ink = ink_at(u8, side)
    top = int(rng.integers(height // 10, height - height // 10 - side))
    left = int(rng.integers(width // 10, width - width // 10 - side))
    page, one_bit = scanned((width, height), ink, top, left, rng)
    if one_bit:
        return encoded(Image.fromarray(to_u8(page)).point(lambda v: 255 if v > 128 else 0, "1"), "TIFF",
                       compression="group4")  # fmt: skip
    return encoded(page)


def flush_box(
    ink: np.ndarray, rng: np.random.Generator, scale: float | None = None
) -> tuple[int, int, int, int]:
    """(left, top, right, bottom) of a crop flush to the ink (coverage > 0.2), as people crop before
    sending: each edge on the outermost ink or up to 2% of ``scale`` (default: the frame's longer side;
    a number's: its height, not its length) inside or outside it, clipped to the frame."""
    rows, cols = np.flatnonzero(ink.max(axis=1) > 0.2), np.flatnonzero(ink.max(axis=0) > 0.2)
    h, w = ink.shape
    jitter = rng.uniform(-0.02, 0.02, 4) * (max(h, w) if scale is None else scale)
    r0, r1 = round(rows[0] + jitter[0]), round(rows[-1] + 1 - jitter[1])
    c0, c1 = round(cols[0] + jitter[2]), round(cols[-1] + 1 - jitter[3])
    return max(0, c0), max(0, r0), min(w, max(c1, c0 + 1)), min(h, max(r1, r0 + 1))


def tight_crop(u8: np.ndarray, rng: np.random.Generator) -> bytes:
    """The picture cropped flush to the ink (``flush_box``), as people crop before sending, the crop's
    longer side 10-240 px (a thumbnail to a photo; half of them under 64), paper a little off white (one
    in four light ink on a dark ground instead), PNG or JPEG. The digit's strokes touch the frame on most
    sides, so the frame is no longer all paper."""
    side = 4 * 28  # drawn large, then reduced: the crop's edges fall between MNIST pixels
    ink = ink_at(u8, side)
    box = flush_box(ink, rng)
    paper = rng.uniform(0.85, 1.0)
    page = on_page(ink, paper, rng.uniform(0.0, 0.25))
    page = Image.fromarray(to_u8(1.0 - page if rng.random() < 0.25 else page))
    crop = page.crop(box)
    long = int(rng.integers(10, 64)) if rng.random() < 0.5 else int(rng.integers(64, 241))
    f = long / max(crop.size)
    crop = crop.resize((max(1, round(crop.width * f)), max(1, round(crop.height * f))), Image.LANCZOS)
    if rng.random() < 0.5:
        return encoded(crop.convert("RGB"), "JPEG", quality=int(rng.integers(70, 96)))
    return encoded(crop)
