"""Corrupted uploads for the robustness suite: one MNIST digit -> the bytes a user might send.

In the spirit of MNIST-C (Mu & Gilmer, 2019), plus what people produce with phones, scanners and
pencils. Every generator takes a 28x28 uint8 MNIST digit (white on black) and a seeded
``numpy.random.Generator`` and returns an encoded image: the digit drawn as dark ink on light paper
(unless the corruption is about polarity or colour) at a realistic size, as PNG or JPEG. Strengths
are in MNIST pixels (the digit's 20-px box) so that they mean the same at every rendered size.
Nothing is stored: the suite is regenerated from the test set and a seed.
"""

from __future__ import annotations

import io
from collections.abc import Callable

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

Corruption = Callable[[np.ndarray, np.random.Generator], bytes]


# ---------------------------------------------------------------------------------------- helpers


def _ink(u8: np.ndarray, side: int) -> np.ndarray:
    """The 28x28 digit upscaled to side x side: ink coverage 0..1 (bicubic, like a smooth pen)."""
    img = Image.fromarray(np.ascontiguousarray(u8, dtype=np.uint8)).resize((side, side), Image.BICUBIC)
    return np.asarray(img, dtype=np.float32) / 255.0


def _side(rng: np.random.Generator) -> int:
    return int(rng.integers(64, 201))


def _page(ink: np.ndarray, paper: float = 0.96, pen: float = 0.08) -> np.ndarray:
    """Ink coverage -> gray page 0..1: paper where there is no ink, pen where it is full."""
    return paper + (pen - paper) * np.clip(ink, 0.0, 1.0)


def _u8(x: np.ndarray) -> np.ndarray:
    return np.clip(np.round(x * 255.0), 0, 255).astype(np.uint8)


def _encode(x: np.ndarray | Image.Image, fmt: str = "PNG", **save: object) -> bytes:
    img = x if isinstance(x, Image.Image) else Image.fromarray(_u8(x))
    if fmt == "PNG":
        save.setdefault("compress_level", 1)  # the pixels are the same; generating is faster
    buf = io.BytesIO()
    img.save(buf, fmt, **save)
    return buf.getvalue()


def _filter(x: np.ndarray, kernel: np.ndarray) -> np.ndarray:
    """Convolve a page with a (small, normalised) kernel by FFT, edges replicated."""
    kh, kw = kernel.shape
    p = np.pad(x, ((kh, kh), (kw, kw)), mode="edge")
    k = np.zeros_like(p)
    k[:kh, :kw] = kernel
    k = np.roll(k, (-(kh // 2), -(kw // 2)), (0, 1))
    out = np.fft.irfft2(np.fft.rfft2(p) * np.fft.rfft2(k), s=p.shape)
    return out[kh:-kh, kw:-kw]


def _morph(ink: np.ndarray, size: int, grow: bool) -> np.ndarray:
    """Grey dilation (grow) or erosion by a size x size square, separably (max/min of shifts)."""
    size = max(3, size | 1)  # odd
    pick, r = (np.maximum if grow else np.minimum), size // 2
    for axis in (0, 1):
        p = np.pad(ink, [(r, r) if a == axis else (0, 0) for a in (0, 1)], mode="edge")
        n = ink.shape[axis]
        ink = pick.reduce([np.take(p, range(i, i + n), axis=axis) for i in range(size)])
    return ink


def _affine(ink: np.ndarray, matrix: tuple[float, float, float, float]) -> np.ndarray:
    """Apply a 2x2 linear map about the image centre (ink outside the canvas is lost, as on paper)."""
    a, b, c, d = matrix
    h, w = ink.shape
    inv = np.linalg.inv(np.array([[a, b], [c, d]]))
    cx, cy = w / 2, h / 2
    off = np.array([cx, cy]) - inv @ np.array([cx, cy])
    coeffs = (inv[0, 0], inv[0, 1], off[0], inv[1, 0], inv[1, 1], off[1])
    return np.asarray(Image.fromarray(ink, "F").transform((w, h), Image.AFFINE, coeffs, Image.BICUBIC))


def _on_canvas(ink: np.ndarray, width: int, height: int, rng: np.random.Generator) -> np.ndarray:
    """Ink pasted at a random place of a larger empty canvas."""
    h, w = ink.shape
    out = np.zeros((height, width), np.float32)
    top, left = int(rng.integers(0, height - h + 1)), int(rng.integers(0, width - w + 1))
    out[top : top + h, left : left + w] = ink
    return out


# ----------------------------------------------------------------------------------- corruptions


def clean(u8: np.ndarray, rng: np.random.Generator) -> bytes:
    return _encode(_page(_ink(u8, _side(rng))))


def gaussian_blur(u8: np.ndarray, rng: np.random.Generator) -> bytes:
    side = _side(rng)
    sigma = rng.uniform(0.8, 1.6) * side / 28  # out of focus: strokes smeared over ~3-6 MNIST px
    page = Image.fromarray(_u8(_page(_ink(u8, side)))).filter(ImageFilter.GaussianBlur(sigma))
    return _encode(page)


def motion_blur(u8: np.ndarray, rng: np.random.Generator) -> bytes:
    side = _side(rng)
    length = rng.uniform(2.0, 4.0) * side / 28
    n = max(3, int(length) | 1)
    kernel = np.zeros((n, n), np.float32)
    kernel[n // 2, :] = 1.0  # a horizontal streak, then turned to a random angle
    kernel = np.asarray(Image.fromarray(kernel, "F").rotate(rng.uniform(0, 180), Image.BILINEAR))
    return _encode(_filter(_page(_ink(u8, side)), kernel / kernel.sum()))


def defocus_blur(u8: np.ndarray, rng: np.random.Generator) -> bytes:
    side = _side(rng)
    r = rng.uniform(1.0, 2.0) * side / 28  # the disk of a lens out of focus
    n = int(np.ceil(r))
    yy, xx = np.mgrid[-n : n + 1, -n : n + 1]
    disk = (yy**2 + xx**2 <= r**2).astype(np.float32)
    return _encode(_filter(_page(_ink(u8, side)), disk / disk.sum()))


def _low_res(box: int) -> Corruption:
    """The digit's 20-px box captured at ``box`` px (scanned or photographed small), then enlarged."""

    def low_res(u8: np.ndarray, rng: np.random.Generator) -> bytes:
        small = max(4, round(28 * box / 20))
        page = Image.fromarray(_u8(_page(u8 / 255.0))).resize((small, small), Image.BOX)
        up = [Image.NEAREST, Image.BILINEAR, Image.BICUBIC][int(rng.integers(3))]
        side = _side(rng)
        return _encode(page.resize((side, side), up))

    low_res.__name__ = f"low_res_{box}"
    return low_res


def soft_scan(u8: np.ndarray, rng: np.random.Generator) -> bytes:
    """Everything at once, as in the field: grey ink captured small (9-14 px box), enlarged, soft
    focus, JPEG."""
    small = max(4, round(28 * rng.uniform(9, 14) / 20))
    page = _page(u8 / 255.0, rng.uniform(0.75, 0.95), rng.uniform(0.3, 0.55))
    img = Image.fromarray(_u8(page)).resize((small, small), Image.BOX)
    side = _side(rng)
    img = img.resize((side, side), Image.BICUBIC).filter(
        ImageFilter.GaussianBlur(rng.uniform(0.3, 1.0) * side / 28)
    )
    return _encode(img.convert("RGB"), "JPEG", quality=int(rng.integers(40, 90)))


def low_contrast(u8: np.ndarray, rng: np.random.Generator) -> bytes:
    paper = rng.uniform(0.55, 0.95)
    pen = paper - rng.uniform(0.15, 0.3)  # gray ink on gray paper
    return _encode(_page(_ink(u8, _side(rng)), paper, pen))


def faint_pencil(u8: np.ndarray, rng: np.random.Generator) -> bytes:
    """Light, grainy graphite: thin gray strokes whose darkness varies along the line."""
    side = _side(rng)
    ink = _morph(_ink(u8, side), int(side / 28), grow=False)
    grain = np.clip(rng.normal(1.0, 0.35, ink.shape), 0.2, 1.6).astype(np.float32)
    page = _page(ink * grain, 0.93, 0.93 - rng.uniform(0.2, 0.4)) + rng.normal(0, 0.015, ink.shape)
    return _encode(page)


def gaussian_noise(u8: np.ndarray, rng: np.random.Generator) -> bytes:
    side = _side(rng)
    return _encode(_page(_ink(u8, side)) + rng.normal(0, rng.uniform(0.08, 0.2), (side, side)))


def impulse_noise(u8: np.ndarray, rng: np.random.Generator) -> bytes:
    side = _side(rng)
    page = _page(_ink(u8, side))
    hit = rng.random((side, side)) < rng.uniform(0.01, 0.04)  # salt and pepper
    page[hit] = rng.integers(0, 2, int(hit.sum()))
    return _encode(page)


def jpeg(u8: np.ndarray, rng: np.random.Generator) -> bytes:
    page = Image.fromarray(_u8(_page(_ink(u8, _side(rng))))).convert("RGB")
    return _encode(page, "JPEG", quality=int(rng.integers(5, 21)))


def thick_stroke(u8: np.ndarray, rng: np.random.Generator) -> bytes:
    side = _side(rng)
    grow = int(rng.uniform(1.5, 3.0) * side / 28)  # a marker: strokes 1.5-3 MNIST px wider
    return _encode(_page(_morph(_ink(u8, side), grow, grow=True)))


def thin_stroke(u8: np.ndarray, rng: np.random.Generator) -> bytes:
    side = _side(rng)
    shrink = int(rng.uniform(0.8, 1.5) * side / 28)  # a fine pen
    return _encode(_page(_morph(_ink(u8, side), shrink, grow=False)))


def rotate(u8: np.ndarray, rng: np.random.Generator) -> bytes:
    angle = np.deg2rad(rng.uniform(15, 25) * rng.choice([-1, 1]))
    cos, sin = np.cos(angle), np.sin(angle)
    return _encode(_page(_affine(_ink(u8, _side(rng)), (cos, -sin, sin, cos))))


def shear(u8: np.ndarray, rng: np.random.Generator) -> bytes:
    k = rng.uniform(0.2, 0.4) * rng.choice([-1, 1])  # a slanted hand
    return _encode(_page(_affine(_ink(u8, _side(rng)), (1.0, k, 0.0, 1.0))))


def scale(u8: np.ndarray, rng: np.random.Generator) -> bytes:
    """A small digit on a large page (10-30% of its width)."""
    width, height = int(rng.integers(300, 601)), int(rng.integers(300, 601))
    ink = _ink(u8, int(min(width, height) * rng.uniform(0.14, 0.4)))
    return _encode(_page(_on_canvas(ink, width, height, rng)))


def translate(u8: np.ndarray, rng: np.random.Generator) -> bytes:
    """A digit anywhere on a wide or tall page."""
    side = _side(rng)
    long = int(side * rng.uniform(1.5, 3.0))
    width, height = (long, side) if rng.random() < 0.5 else (side, long)
    return _encode(_page(_on_canvas(_ink(u8, side), width, height, rng)))


def coloured_paper(u8: np.ndarray, rng: np.random.Generator) -> bytes:
    """Blue, black or red pen on pastel paper, photographed (JPEG)."""
    side = _side(rng)
    ink = _ink(u8, side)[..., None]
    paper = rng.uniform(0.7, 1.0, 3)
    pen = np.array([[0.1, 0.15, 0.6], [0.1, 0.1, 0.1], [0.7, 0.1, 0.1]])[int(rng.integers(3))]
    rgb = paper + (pen - paper) * ink
    return _encode(Image.fromarray(_u8(rgb), "RGB"), "JPEG", quality=int(rng.integers(70, 96)))


def uneven_paper(u8: np.ndarray, rng: np.random.Generator) -> bytes:
    """A phone photo: light falling off across the page, a soft shadow, paper grain, JPEG."""
    side = _side(rng)
    yy, xx = np.mgrid[0:side, 0:side] / side
    ang = rng.uniform(0, 2 * np.pi)
    light = 0.9 - rng.uniform(0.2, 0.45) * (np.cos(ang) * xx + np.sin(ang) * yy + 1) / 2
    page = light * (1.0 - 0.85 * _ink(u8, side)) + rng.normal(0, 0.02, (side, side))
    return _encode(Image.fromarray(_u8(page)).convert("RGB"), "JPEG", quality=int(rng.integers(60, 91)))


def sheet_mask(width: int, height: int, rng: np.random.Generator) -> np.ndarray:
    """Where the photographed sheet is (1) and the table it lies on shows (0): the whole frame, a band
    along one side, or the corners around a tilted sheet that fills most of the frame."""
    kind = int(rng.integers(3))
    if kind == 0:
        return np.ones((height, width), np.float32)
    if kind == 1:
        mask = np.ones((height, width), np.float32)
        side = int(rng.integers(4))
        band = int(rng.uniform(0.08, 0.2) * (height if side < 2 else width))
        if side == 0:
            mask[:band] = 0
        elif side == 1:
            mask[-band:] = 0
        elif side == 2:
            mask[:, :band] = 0
        else:
            mask[:, -band:] = 0
        return mask
    a, b = rng.uniform(0.44, 0.48) * width, rng.uniform(0.42, 0.47) * height
    theta = np.radians(rng.uniform(3, 8) * rng.choice([-1, 1]))
    c, s = np.cos(theta), np.sin(theta)
    corners = [
        (width / 2 + x * c - y * s, height / 2 + x * s + y * c)
        for x, y in ((-a, -b), (a, -b), (a, b), (-a, b))
    ]
    img = Image.new("L", (width, height), 0)
    ImageDraw.Draw(img).polygon(corners, fill=255)
    return np.asarray(img, np.float32) / 255.0


def photo_of_page(u8: np.ndarray, rng: np.random.Generator) -> bytes:
    """A phone photo of a page with one digit written on it: 2 megapixels, the digit 12-25% of the
    page's height (its ink well under 1% of the picture) in the middle 60% of the frame, light falling
    off, camera blur, grain, JPEG; in two photos of three the dark table the sheet lies on shows."""
    width, height = 1600, 1200
    digit = _ink(u8, int(height * rng.uniform(0.12, 0.25)))
    ink = np.pad(_on_canvas(digit, 960, 720, rng), ((240, 240), (320, 320)))
    table = rng.uniform(0.15, 0.45)  # its brightness relative to the sheet's
    paper = table + (1.0 - table) * sheet_mask(width, height, rng)
    yy, xx = np.ogrid[0:height, 0:width]
    ang = rng.uniform(0, 2 * np.pi)
    light = 0.92 - rng.uniform(0.15, 0.35) * (np.cos(ang) * xx / width + np.sin(ang) * yy / height + 1) / 2
    page = Image.fromarray(_u8(light * paper * (1.0 - 0.85 * ink))).filter(
        ImageFilter.GaussianBlur(rng.uniform(0.5, 2.0))
    )
    grainy = np.asarray(page, np.float32) / 255.0 + 0.015 * rng.standard_normal((height, width), np.float32)
    return _encode(Image.fromarray(_u8(grainy)).convert("RGB"), "JPEG", quality=int(rng.integers(80, 93)))


def photo_of_note(u8: np.ndarray, rng: np.random.Generator) -> bytes:
    """A phone photo of a note, a sticky note or a card smaller than the table it lies on (6-40% of a
    1200x900 frame), the digit written on it (45-75% of its side) in black or blue; the note tilted up
    to 20 degrees, perhaps cut by the frame; the table wood-toned or gray with a grain, 0.15-0.5 as bright
    as the note, a pen lying on it in half the photos; light falling off, camera blur, grain, JPEG."""
    height, width = (900, 1200) if rng.random() < 0.5 else (1200, 900)
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    grain = Image.fromarray(rng.normal(0, 1, (height // 8, width // 8)).astype(np.float32))
    grain = np.asarray(grain.resize((width, height), Image.Resampling.BICUBIC))
    streaks = np.sin(xx / rng.uniform(15, 60) + yy / rng.uniform(150, 400))
    tint = np.array([1.0, rng.uniform(0.6, 1.0), rng.uniform(0.3, 1.0)], np.float32)  # wood .. gray
    rgb = (rng.uniform(0.15, 0.5) * (1 + 0.12 * grain + 0.08 * streaks))[..., None] * tint
    if rng.random() < 0.5:  # a pen lying on the table
        pen = Image.new("L", (width, height), 0)
        x0, y0, a = rng.uniform(0, width), rng.uniform(0, height), rng.uniform(0, np.pi)
        ImageDraw.Draw(pen).line([(x0, y0), (x0 + 500 * np.cos(a), y0 + 500 * np.sin(a))], fill=255, width=18)
        rgb *= 1 - 0.8 * (np.asarray(pen, np.float32) / 255)[..., None]
    side = np.sqrt(rng.uniform(0.06, 0.4) * height * width)
    aspect = rng.uniform(1.0, 1.45)
    w, h = (side * aspect, side / aspect) if rng.random() < 0.5 else (side / aspect, side * aspect)
    w, h = int(w), int(h)
    paper = np.array(
        [1.0, 0.96, rng.uniform(0.55, 0.8)] if rng.random() < 0.3 else [1.0, 1.0, 1.0], np.float32
    )
    note = np.ones((h, w, 3), np.float32) * paper
    d = int(min(w, h) * rng.uniform(0.45, 0.75))
    y, x = int((h - d) * rng.uniform(0.3, 0.7)), int((w - d) * rng.uniform(0.3, 0.7))
    ink = _ink(u8, d)[..., None]
    colour = np.array([[0.1, 0.1, 0.1], [0.1, 0.15, 0.55]], np.float32)[int(rng.integers(2))]
    note[y : y + d, x : x + d] += (colour - note[y : y + d, x : x + d]) * ink
    angle = rng.uniform(-20, 20)
    tilted = np.asarray(Image.fromarray(_u8(note), "RGB").rotate(angle, expand=True), np.float32) / 255
    cover = np.asarray(Image.new("L", (w, h), 255).rotate(angle, expand=True), np.float32)[..., None] / 255
    top = int(rng.uniform(0.3, 0.7) * height) - cover.shape[0] // 2  # the note's centre in the middle 40%
    left = int(rng.uniform(0.3, 0.7) * width) - cover.shape[1] // 2
    rows = slice(max(0, top), min(height, top + cover.shape[0]))
    cols = slice(max(0, left), min(width, left + cover.shape[1]))
    inner = (slice(rows.start - top, rows.stop - top), slice(cols.start - left, cols.stop - left))
    rgb[rows, cols] += (tilted[inner] - rgb[rows, cols]) * cover[inner]
    ang = rng.uniform(0, 2 * np.pi)
    light = 1.0 - rng.uniform(0.0, 0.35) * (np.cos(ang) * xx / width + np.sin(ang) * yy / height + 1) / 2
    rgb = rgb * light[..., None] * rng.uniform(0.8, 1.0) + rng.normal(0, 0.015, rgb.shape).astype(np.float32)
    photo = Image.fromarray(_u8(rgb), "RGB").filter(ImageFilter.GaussianBlur(rng.uniform(0.6, 2.0)))
    return _encode(photo, "JPEG", quality=int(rng.integers(75, 93)))


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
    side = _side(rng)
    ink, finer = _ink(u8, side), int(rng.uniform(0.0, 1.5) * side / 28)
    return side, _morph(ink, finer, grow=False) if finer >= 3 else ink


def _written_on(rgb: np.ndarray, ink: np.ndarray, rng: np.random.Generator) -> bytes:
    """The pen's ink (blue or black) over a colour page, a little sensor noise, JPEG."""
    pen = np.array([[0.1, 0.15, 0.6], [0.12, 0.12, 0.12]])[int(rng.integers(2))]
    rgb = rgb + (pen - rgb) * ink[..., None] + rng.normal(0, 0.01, rgb.shape)
    return _encode(Image.fromarray(_u8(rgb), "RGB"), "JPEG", quality=int(rng.integers(70, 93)))


def ruled_paper(u8: np.ndarray, rng: np.random.Generator) -> bytes:
    """A school notebook: the digit written with a pen (as MNIST's or up to 1.5 px finer) on lined or
    squared paper, 1.7-3.3 rulings tall, the rulings light blue, gray or blue, tilted up to 2 degrees,
    sometimes a red margin line; photographed with paper around the digit (JPEG)."""
    side, ink = _pen_digit(u8, rng)
    size = int(side * rng.uniform(1.2, 1.8))
    ink = _on_canvas(ink, size, size, rng)
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
    side = _side(rng)
    board = rng.uniform(0.1, 0.3)
    page = _page(_ink(u8, side), board, rng.uniform(0.8, 1.0)) + rng.normal(0, 0.02, (side, side))
    return _encode(page)


def transparent(u8: np.ndarray, rng: np.random.Generator) -> bytes:
    """A drawing app's export: strokes (black or white) as alpha on a transparent canvas."""
    side = _side(rng)
    rgba = np.zeros((side, side, 4), np.uint8)
    rgba[..., :3] = 255 if rng.random() < 0.5 else 0
    rgba[..., 3] = _u8(_ink(u8, side))
    return _encode(Image.fromarray(rgba, "RGBA"))


BAYER4 = (np.array([[0, 8, 2, 10], [12, 4, 14, 6], [3, 11, 1, 9], [15, 7, 13, 5]]) + 0.5) / 16


def dithered(u8: np.ndarray, rng: np.random.Generator) -> bytes:
    """A 1-bit scan, a fax or a two-colour GIF: gray paper and ink drawn with black and white dots, by
    error diffusion (Floyd-Steinberg, as Pillow and most scanner drivers do; half of them scanned soft
    first) or an ordered 4x4 Bayer screen; 40-400 px, paper 0.8-1.0, ink 0-0.45."""
    side = int(rng.integers(40, 401))
    page = _page(_ink(u8, side), paper=rng.uniform(0.8, 1.0), pen=rng.uniform(0.0, 0.45))
    if rng.random() < 0.5:
        img = Image.fromarray(_u8(page))
        if rng.random() < 0.5:
            img = img.filter(ImageFilter.GaussianBlur(rng.uniform(0.5, 2.0)))
        return _encode(img.convert("1"))
    screen = np.tile(BAYER4, (side // 4 + 1, side // 4 + 1))[:side, :side]
    return _encode((page > screen).astype(np.float32))


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
    ink = _ink(u8, side)
    top = int(rng.integers(height // 10, height - height // 10 - side))
    left = int(rng.integers(width // 10, width - width // 10 - side))
    page, one_bit = scanned((width, height), ink, top, left, rng)
    if one_bit:
        return _encode(Image.fromarray(_u8(page)).point(lambda v: 255 if v > 128 else 0, "1"), "TIFF",
                       compression="group4")  # fmt: skip
    return _encode(page)


def hard_shadow(u8: np.ndarray, rng: np.random.Generator) -> bytes:
    """A phone photo of a page with a hard shadow across it (the phone's or the hand's): a straight
    edge at any angle, over the digit or beside it, a penumbra 0.5-3% of the picture wide, the shadow
    35-60% darker than the lit page; the digit 60% of the picture, anywhere; grain, JPEG."""
    side = int(rng.integers(160, 401))
    ink = _on_canvas(_ink(u8, int(side * 0.6)), side, side, rng)
    yy, xx = np.mgrid[0:side, 0:side] / side
    ang = rng.uniform(0, 2 * np.pi)
    across = np.cos(ang) * (xx - 0.5) + np.sin(ang) * (yy - 0.5) - rng.uniform(-0.25, 0.25)
    shade = np.clip(across / rng.uniform(0.005, 0.03) + 0.5, 0.0, 1.0)
    light = 0.92 * (1.0 - rng.uniform(0.35, 0.6) * shade)
    page = light * (1.0 - 0.85 * ink) + 0.015 * rng.standard_normal((side, side))
    return _encode(Image.fromarray(_u8(page)).convert("RGB"), "JPEG", quality=int(rng.integers(75, 93)))


def glare(u8: np.ndarray, rng: np.random.Generator) -> bytes:
    """A phone photo of glossy paper (a print, a laminated card, a whiteboard) with a lamp's or the
    flash's reflection on it: a soft elliptical highlight (10-35% of the picture across) over or beside
    the digit, adding 0.25-0.6 of the paper's light to paper and ink alike, the sensor clipping where
    the sum passes white (as in a photo; the ink under the highlight stays readable to a person);
    light falling off, grain, JPEG."""
    side = int(rng.integers(160, 401))
    ink = _on_canvas(_ink(u8, int(side * rng.uniform(0.45, 0.7))), side, side, rng)
    yy, xx = np.mgrid[0:side, 0:side] / side
    ang = rng.uniform(0, 2 * np.pi)
    light = 0.88 - rng.uniform(0.05, 0.2) * (np.cos(ang) * xx + np.sin(ang) * yy + 1) / 2
    # the highlight's centre: on the ink in two photos of three, anywhere on the page otherwise
    ys, xs = np.nonzero(ink > 0.5)
    k = int(rng.integers(len(ys)))
    cy, cx = (ys[k] / side, xs[k] / side) if rng.random() < 2 / 3 else tuple(rng.uniform(0.15, 0.85, 2))
    radius = rng.uniform(0.05, 0.175)
    stretch, turn = rng.uniform(1.0, 2.5), rng.uniform(0, np.pi)
    u = (np.cos(turn) * (xx - cx) + np.sin(turn) * (yy - cy)) / (radius * stretch)
    v = (-np.sin(turn) * (xx - cx) + np.cos(turn) * (yy - cy)) / radius
    highlight = rng.uniform(0.25, 0.6) * np.exp(-0.5 * (u * u + v * v) ** rng.uniform(1.0, 2.0))
    page = light * (1.0 - 0.85 * ink) + highlight + 0.015 * rng.standard_normal((side, side))
    return _encode(Image.fromarray(_u8(page)).convert("RGB"), "JPEG", quality=int(rng.integers(75, 93)))


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
    ink = _ink(u8, side)
    box = flush_box(ink, rng)
    paper = rng.uniform(0.85, 1.0)
    page = _page(ink, paper, rng.uniform(0.0, 0.25))
    page = Image.fromarray(_u8(1.0 - page if rng.random() < 0.25 else page))
    crop = page.crop(box)
    long = int(rng.integers(10, 64)) if rng.random() < 0.5 else int(rng.integers(64, 241))
    f = long / max(crop.size)
    crop = crop.resize((max(1, round(crop.width * f)), max(1, round(crop.height * f))), Image.LANCZOS)
    if rng.random() < 0.5:
        return _encode(crop.convert("RGB"), "JPEG", quality=int(rng.integers(70, 96)))
    return _encode(crop)


# family -> corruptions, in the order the tables show them
FAMILIES: dict[str, dict[str, Corruption]] = {
    "clean": {"clean": clean},
    "blur": {"gaussian_blur": gaussian_blur, "motion_blur": motion_blur, "defocus_blur": defocus_blur},
    "low_res": {**{f"low_res_{b}": _low_res(b) for b in (8, 12, 16)}, "soft_scan": soft_scan},
    "faint": {"low_contrast": low_contrast, "faint_pencil": faint_pencil},
    "noise": {"gaussian_noise": gaussian_noise, "impulse_noise": impulse_noise, "jpeg": jpeg},
    "stroke": {"thick_stroke": thick_stroke, "thin_stroke": thin_stroke},
    "geometry": {"rotate": rotate, "shear": shear, "scale": scale, "translate": translate},
    "paper": {
        "coloured_paper": coloured_paper,
        "uneven_paper": uneven_paper,
        "photo_of_page": photo_of_page,
        "inverted": inverted,
        "transparent": transparent,
        "ruled_paper": ruled_paper,  # appended: the other corruptions keep their digits in calibrate
        "photo_of_note": photo_of_note,  # appended after it, for the same reason
        "form_field": form_field,  # and this after that
    },
    "scan": {"dithered": dithered, "page_scan": page_scan},  # last, for the same reason
    "shadow": {"hard_shadow": hard_shadow},  # then this
    "light": {"glare": glare},  # and this
    "framing": {"tight_crop": tight_crop},  # and this last
}
CORRUPTIONS: dict[str, Corruption] = {n: f for fam in FAMILIES.values() for n, f in fam.items()}
FAMILY_OF: dict[str, str] = {n: fam for fam, group in FAMILIES.items() for n in group}


def corrupt(name: str, u8: np.ndarray, seed: int | np.random.Generator) -> bytes:
    """One corrupted upload of ``u8``; the same name, digit and seed give the same bytes."""
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    return CORRUPTIONS[name](u8, rng)
