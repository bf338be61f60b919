"""Pictures of whole numbers, generated in code (nothing committed), to measure reading them.

Families, each a list of (gray uint8 picture, the number's text), 1-8 digits:

- ``mnist``: MNIST test digits side by side (gaps, touching, overlapping a little), white on black;
- ``strokes``: pen strokes as the demo pad draws them (thick, round caps, ink on white), with
  broken digits (a 5's flag, a 7's bar, a 4 in two strokes) and natural spacing;
- ``touching``: the same pen strokes with neighbours run together;
- ``fonts``: the number typeset in DejaVu faces with tight and loose tracking;
- ``photos``: the pen strokes on a sheet photographed with a phone, the table in view in two of three;
- ``forms``: the pen strokes on a form: one digit per box of a row of boxes, per cell of a comb field, or
  the number written over an answer line;
- ``notebook``: the pen strokes on a photographed school notebook page: lined or squared paper, a red
  margin line down its side in most pages;
- ``marks``: numbers with punctuation (12.5, 1,000, 3,5, -42, 12:30, 10-20), written with the pen or
  typeset (one in four);
- ``turned_forms``: ``forms`` photographed turned 2-8 degrees either way;
- ``page_scans``: the pen strokes 0.6-1.5 cm tall on a whole page scanned at 150-300 dpi (A5 or A4, up to
  2480x3508), gray with grain, or thresholded to two levels in one scan of three;
- ``cropped``: the pen strokes cropped flush to their ink before sending (the strokes cross the border),
  at 35-100% of the pad's size, light on dark in one of five.

``fit-reader`` fits on ``DIGIT_FAMILIES``: digits alone, on level pages.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont

from .corruptions import flush_box, page_format, ruling_lines, scanned, sheet_mask

# STROKE_FRACTION: the pen's width as a share of the pad's height, as app/static/pad.js draws
from .drawn import STROKE_FRACTION, draw_paths

Stroke = list[tuple[float, float]]
Sample = tuple[np.ndarray, str]

DIGIT_FAMILIES = ("mnist", "strokes", "touching", "fonts", "photos", "forms", "notebook")
FAMILIES = (*DIGIT_FAMILIES, "marks", "turned_forms", "page_scans", "cropped")
PAD_HEIGHT = 280  # the wide pad on the page is 3:1 at this height
PAD_WIDTH = 840
FONT_DIR = Path("/usr/share/fonts/truetype/dejavu")
FONTS = ("DejaVuSans.ttf", "DejaVuSans-Bold.ttf", "DejaVuSerif.ttf", "DejaVuSansMono.ttf",
         "DejaVuSansCondensed.ttf", "DejaVuSans-Oblique.ttf", "DejaVuSerif-Bold.ttf")  # fmt: skip


# ------------------------------------------------------------------------------------ pen strokes


def arc(cx: float, cy: float, rx: float, ry: float, a0: float, a1: float, n: int = 24) -> Stroke:
    """Points on an ellipse from angle a0 to a1 (degrees, 0 = right, 90 = up; y grows downwards)."""
    return [
        (cx + rx * math.cos(math.radians(a)), cy - ry * math.sin(math.radians(a)))
        for a in np.linspace(a0, a1, n)
    ]


def digit_strokes(d: int, variant: int = 0, broken: bool = False) -> list[Stroke]:
    """Strokes of one digit in a box 0.6 wide and 1 tall; ``broken`` lifts the pen where people do
    (a 5's flag, a 7's bar and a 4's second stroke drawn apart from the rest)."""
    if d == 0:
        return [arc(0.3, 0.5, 0.28, 0.5, 95, 95 + 370, 40)]
    if d == 1:
        return [[(0.3, 0.0), (0.28, 1.0)]] if variant % 2 == 0 else [[(0.1, 0.18), (0.32, 0.0), (0.3, 1.0)]]
    if d == 2:
        return [arc(0.3, 0.27, 0.27, 0.27, 160, -35) + [(0.03, 1.0), (0.6, 1.0)]]
    if d == 3:
        return [arc(0.29, 0.25, 0.26, 0.25, 150, -90) + arc(0.3, 0.74, 0.29, 0.26, 90, -155)]
    if d == 4:
        bar_x = 0.44 if broken else 0.6
        if variant % 2 == 0:  # closed 4
            return [[(0.42, 0.0), (0.0, 0.66), (bar_x, 0.66)], [(0.46, 0.2 if broken else 0.05), (0.46, 1.0)]]
        return [
            [(0.05, 0.0), (0.02, 0.58), (0.4 if broken else 0.6, 0.58)],
            [(0.47, 0.0), (0.47, 1.0)],
        ]
    if d == 5:
        flag = [(0.18 if broken else 0.1, 0.0), (0.58, 0.0)]
        body = [(0.1, 0.1 if broken else 0.0), (0.06, 0.45)] + arc(0.28, 0.7, 0.3, 0.3, 125, -150)
        return [flag, body]
    if d == 6:
        return [[(0.52, 0.0), (0.26, 0.28), (0.06, 0.6)] + arc(0.31, 0.72, 0.26, 0.28, 190, -170)]
    if d == 7:
        stem = [(0.58, 0.08), (0.2, 1.0)] if broken else [(0.0, 0.0), (0.6, 0.0), (0.2, 1.0)]
        strokes = [[(0.0, 0.0), (0.5, 0.0)], stem] if broken else [stem]
        if variant % 2 == 1:  # continental 7 with a crossing bar
            strokes.append([(0.16, 0.52), (0.56, 0.52)])
        return strokes
    if d == 8:
        return [arc(0.3, 0.24, 0.22, 0.24, 90, 450, 32), arc(0.3, 0.73, 0.28, 0.27, 90, -270, 32)]
    return [arc(0.3, 0.27, 0.27, 0.27, -5, 355, 32) + [(0.56, 0.3), (0.5, 1.0)]]


def _jitter(strokes: list[Stroke], rng: np.random.Generator) -> list[Stroke]:
    """A person's hand: slant, squeeze, a small rotation and wobble of every point."""
    slant, squeeze, turn = rng.uniform(-0.18, 0.22), rng.uniform(0.8, 1.2), rng.uniform(-0.08, 0.08)
    c, s = math.cos(turn), math.sin(turn)
    out = []
    for stroke in strokes:
        pts = []
        for x, y in stroke:
            x, y = (x - 0.3) * squeeze + slant * (0.5 - y), y - 0.5
            x, y = c * x - s * y, s * x + c * y
            pts.append((x + 0.3 + rng.normal(0, 0.012), y + 0.5 + rng.normal(0, 0.012)))
        out.append(pts)
    return out


def _extent(strokes: list[Stroke]) -> tuple[float, float]:
    xs = [x for s in strokes for x, _ in s]
    return min(xs), max(xs)


def draw_strokes(
    strokes: list[Stroke], size: tuple[int, int], width: float, supersample: int = 2
) -> np.ndarray:
    """Pixel strokes -> gray uint8 picture, black ink on white, round caps and joins (pad.js)."""
    k = supersample
    paths = [[(x * k, y * k) for x, y in stroke] for stroke in strokes]
    return np.asarray(draw_paths(paths, size, width, k, ink=0))


def stroke_number(text: str, rng: np.random.Generator, touching: bool = False) -> np.ndarray:
    """A number written with the pen on the wide pad, as pixels."""
    width = STROKE_FRACTION * PAD_HEIGHT
    digits = _hand_digits(text, rng)
    gaps = [
        rng.uniform(0.0, 0.1) if touching and rng.random() < 0.7 else rng.uniform(0.12, 0.4)
        for _ in digits[1:]
    ]
    spans = [_extent(s) for s in digits]
    total = sum(b - a for a, b in spans) + sum(gaps)
    # Letter height: most of the pad, unless the number would not fit across it.
    height = min(rng.uniform(0.5, 0.72) * PAD_HEIGHT, (PAD_WIDTH - 2.5 * width) / total)
    left = rng.uniform(1.2 * width, PAD_WIDTH - total * height - 1.2 * width)
    top = rng.uniform(1.2 * width, PAD_HEIGHT - height - 1.2 * width)
    pixels = _side_by_side(digits, gaps, left, top, height, rng)
    return draw_strokes(pixels, (PAD_WIDTH, PAD_HEIGHT), width)


def _hand_digits(text: str, rng: np.random.Generator) -> list[list[Stroke]]:
    """Each digit of ``text`` in a random variant (broken in half of them) and a person's hand."""
    return [_jitter(digit_strokes(int(c), int(rng.integers(2)), rng.random() < 0.5), rng) for c in text]


def mark_strokes(mark: str, rng: np.random.Generator) -> list[Stroke]:
    """A punctuation mark as a person writes it, in a digit's box (1 tall): a dot is a tap of the pen
    (or a short tick), a comma a short stroke down from the baseline, a minus a dash halfway up."""

    def dot(y: float) -> Stroke:
        x, length, angle = rng.uniform(0, 0.03), rng.uniform(0.0, 0.04), rng.uniform(0, math.pi)
        return [(x, y), (x + length * math.cos(angle), y + length * math.sin(angle) + 1e-3)]

    if mark == ".":
        return [dot(rng.uniform(0.94, 1.0))]
    if mark == ",":
        x, y = rng.uniform(0.03, 0.08), rng.uniform(0.9, 0.98)
        return [[(x, y), (x - rng.uniform(0.02, 0.08), y + rng.uniform(0.14, 0.24))]]
    if mark == ":":
        return [dot(rng.uniform(0.3, 0.45)), dot(rng.uniform(0.92, 1.0))]
    if mark == "-":
        y, length = rng.uniform(0.42, 0.6), rng.uniform(0.25, 0.45)
        return [[(0.0, y), (length, y + rng.uniform(-0.04, 0.04))]]
    raise ValueError(f"no strokes for {mark!r}")


def marked_number(text: str, rng: np.random.Generator) -> np.ndarray:
    """A number with punctuation written with the pen on the wide pad, as pixels: the digits as in
    ``stroke_number``, a mark a little apart from its neighbours (a dot never touches the digits)."""
    width = STROKE_FRACTION * PAD_HEIGHT
    glyphs = [_hand_digits(c, rng)[0] if c.isdigit() else mark_strokes(c, rng) for c in text]
    gaps = [
        rng.uniform(0.25, 0.45) if not (a.isdigit() and b.isdigit()) else rng.uniform(0.12, 0.4)
        for a, b in itertools.pairwise(text)
    ]
    total = sum(b - a for a, b in map(_extent, glyphs)) + sum(gaps)
    height = min(rng.uniform(0.45, 0.62) * PAD_HEIGHT, (PAD_WIDTH - 2.5 * width) / total)
    left = rng.uniform(1.2 * width, PAD_WIDTH - total * height - 1.2 * width)
    top = rng.uniform(1.2 * width, PAD_HEIGHT - 1.25 * height - 1.2 * width)  # room for a comma's tail
    pixels = _side_by_side(glyphs, gaps, left, top, height, rng)
    return draw_strokes(pixels, (PAD_WIDTH, PAD_HEIGHT), width)


def _side_by_side(
    digits: list[list[Stroke]],
    gaps: list[float],
    left: float,
    top: float,
    height: float,
    rng: np.random.Generator,
) -> list[Stroke]:
    """Digits ``height`` px tall written left to right from ``left`` with ``gaps`` (in heights) between
    them, each a little up or down from ``top``: their strokes in pixels."""
    pixels: list[Stroke] = []
    for i, strokes in enumerate(digits):
        a, b = _extent(strokes)
        dy = rng.uniform(-0.05, 0.05) * height
        pixels += [[(left + (x - a) * height, top + dy + y * height) for x, y in s] for s in strokes]
        left += (b - a) * height + (gaps[i] * height if i < len(gaps) else 0)
    return pixels


def photo_number(text: str, rng: np.random.Generator) -> np.ndarray:
    """The pen-stroke number on a sheet photographed with a phone (1200x900): the sheet fills most of
    the frame, and in two photos of three the dark table shows along a side or around the tilted sheet;
    light falling off, a little camera blur, grain."""
    width, height = 1200, 900
    ink = 1.0 - stroke_number(text, rng).astype(np.float32) / 255.0
    scale = rng.uniform(0.6, 0.78)  # the pad's picture at most 55% of the frame's width: on the sheet
    w, h = int(PAD_WIDTH * scale), int(PAD_HEIGHT * scale)
    ink = np.asarray(Image.fromarray(ink, "F").resize((w, h), Image.Resampling.BILINEAR))
    top, left = int(rng.uniform(0.4, 0.6) * height - h / 2), int(rng.uniform(0.48, 0.52) * width - w / 2)
    canvas = np.zeros((height, width), np.float32)
    canvas[top : top + h, left : left + w] = ink
    table = rng.uniform(0.15, 0.45)  # its brightness relative to the sheet's
    paper = table + (1.0 - table) * sheet_mask(width, height, rng)
    yy, xx = np.ogrid[0:height, 0:width]
    return _photographed(paper, canvas, xx / width + yy / height, rng, 0.92, (0.1, 0.3), (0.5, 1.5), 3.0)


def _photographed(
    paper: np.ndarray,
    ink: np.ndarray,
    diagonal: np.ndarray,
    rng: np.random.Generator,
    light: float,
    falloff: tuple[float, float],
    blur: tuple[float, float],
    grain: float,
) -> np.ndarray:
    """A page (its paper's shade, the pen's ink 0..1) as a phone photographs it, gray uint8: the light
    ``light`` at the top left falling off by ``falloff`` (a range) along ``diagonal`` (0 there, 2 at the
    bottom right), a camera blur of ``blur`` px (a range) and grain of ``grain`` gray levels."""
    shade = light - rng.uniform(*falloff) * diagonal / 2
    photo = Image.fromarray(np.clip(255 * shade * paper * (1 - 0.85 * ink), 0, 255).astype(np.uint8))
    photo = photo.filter(ImageFilter.GaussianBlur(rng.uniform(*blur)))
    noise = rng.normal(0, grain, paper.shape)
    return np.clip(np.asarray(photo, np.float32) + noise, 0, 255).astype(np.uint8)


def form_number(text: str, rng: np.random.Generator) -> np.ndarray:
    """The pen-stroke number on a form, scanned: one digit in each box of a row of boxes (their sides
    shared; four forms in ten), in each cell of a comb field (a line with ticks between the cells; three
    in ten), or the number written with its natural spacing a little above an answer line (three in
    ten); the lines printed black to light gray, 1.5-4 px, tilted up to 1.5 degrees."""
    pen = STROKE_FRACTION * PAD_HEIGHT
    digits = _hand_digits(text, rng)
    height = rng.uniform(0.3, 0.42) * PAD_HEIGHT
    cell_h = height / rng.uniform(0.65, 0.8)
    cell_w = max(
        max(b - a for a, b in map(_extent, digits)) * height + 2.5 * pen, cell_h * rng.uniform(0.6, 0.9)
    )
    kind = rng.random()
    margin = 40.0
    pixels: list[Stroke] = []
    if kind < 0.7:  # a digit in each box or cell
        size = (int(len(text) * cell_w + 2 * margin), int(cell_h + 2 * margin))
        for i, strokes in enumerate(digits):
            a, b = _extent(strokes)
            left = margin + (i + 0.5) * cell_w - (b - a) * height / 2 + rng.uniform(-0.05, 0.05) * cell_w
            top = margin + (cell_h - height) / 2 + rng.uniform(-0.05, 0.05) * cell_h
            pixels += [[(left + (x - a) * height, top + y * height) for x, y in s] for s in strokes]
        x0, x1, y0, y1 = margin, margin + len(text) * cell_w, margin, margin + cell_h
        edges = [x0 + i * cell_w for i in range(len(text) + 1)]
        if kind < 0.4:
            lines = [((x0, y0), (x1, y0)), ((x0, y1), (x1, y1))] + [((x, y0), (x, y1)) for x in edges]
        else:
            tick = rng.uniform(0.2, 0.35) * cell_h
            lines = [((x0, y1), (x1, y1))] + [((x, y1), (x, y1 - tick)) for x in edges]
    else:  # over an answer line
        gaps = [rng.uniform(0.12, 0.4) for _ in digits[1:]]
        spans = [_extent(s) for s in digits]
        total = (sum(b - a for a, b in spans) + sum(gaps)) * height
        reach = [rng.uniform(0.15, 0.8) * height for _ in range(2)]
        size = (int(total + sum(reach) + 2 * margin), int(height + 2 * margin))
        pixels = _side_by_side(digits, gaps, margin + reach[0], margin, height, rng)
        y = margin + height * rng.uniform(1.05, 1.15) + pen / 2
        lines = [((margin, y), (size[0] - margin, y))]
    page = Image.fromarray(draw_strokes(pixels, size, pen))
    draw = ImageDraw.Draw(page)
    turn = math.tan(math.radians(rng.uniform(-1.5, 1.5)))
    cx, cy = size[0] / 2, size[1] / 2
    gray, width = int(rng.integers(30, 170)), int(round(rng.uniform(1.5, 4.0)))
    for (ax, ay), (bx, by) in lines:
        ends = [
            (cx + (x - cx) - turn * (y - cy), cy + (y - cy) + turn * (x - cx))
            for x, y in ((ax, ay), (bx, by))
        ]
        draw.line(ends, fill=gray, width=width)
    return np.asarray(page)


def turned(picture: np.ndarray, degrees: float) -> np.ndarray:
    """A picture turned counter-clockwise (a page photographed at a slant), the corners it uncovers
    filled with its paper's shade."""
    img = Image.fromarray(picture).rotate(degrees, Image.Resampling.BILINEAR, expand=True,
                                          fillcolor=int(np.median(picture)))  # fmt: skip
    return np.asarray(img)


def notebook_number(text: str, rng: np.random.Generator) -> np.ndarray:
    """The pen-stroke number on a school notebook's page, photographed by hand (1000x700, the digits
    10-20% of its height, the page turned up to 6 degrees): lined paper (squared in four pages of ten),
    light rulings 1-3 px wide, the digits 1.2-2 rulings tall and standing on one; a red margin line down
    the page in seven of ten (doubled in one of four), the number to its right; light falling off, a
    little blur and grain."""
    width, height = 1000, 700
    ink = 1.0 - stroke_number(text, rng).astype(np.float32) / 255.0
    rows, cols = np.flatnonzero(ink.max(axis=1) > 0), np.flatnonzero(ink.max(axis=0) > 0)
    ink = ink[rows[0] : rows[-1] + 1, cols[0] : cols[-1] + 1]
    scale = min(rng.uniform(0.1, 0.2) * height / ink.shape[0], 0.75 * width / ink.shape[1])
    w, h = max(1, int(ink.shape[1] * scale)), max(1, int(ink.shape[0] * scale))
    gap = h / rng.uniform(1.2, 2.0)
    turn = rng.uniform(-6.0, 6.0)  # degrees, counter-clockwise: the page, its lines and the writing
    ink = Image.fromarray(ink, "F").resize((w, h), Image.Resampling.BILINEAR)
    ink = np.asarray(ink.rotate(turn, Image.Resampling.BILINEAR, expand=True))
    h, w = ink.shape
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    tilt, line = math.tan(math.radians(turn)), rng.uniform(1.0, 3.0)
    offset = rng.uniform(0, gap)
    rule = ruling_lines(yy + tilt * xx - offset, gap, line)
    if rng.random() < 0.4:  # squared
        rule = np.maximum(rule, ruling_lines(xx - tilt * yy - rng.uniform(0, gap), gap, line))
    paper = rng.uniform(0.9, 1.0) * (1.0 - rng.uniform(0.15, 0.35) * rule)
    start = 20
    if rng.random() < 0.7:  # the margin line (red: a mid gray)
        at, double = rng.uniform(0.06, 0.2) * width, rng.random() < 0.25
        margin = np.zeros_like(paper)
        for x in [at, at + rng.uniform(4, 9)] if double else [at]:
            margin = np.maximum(margin, np.clip(line / 2 + 0.5 - np.abs(xx - tilt * yy - x), 0.0, 1.0))
        paper *= 1.0 - rng.uniform(0.3, 0.45) * margin
        start = int(at + 15 + 0.5 * gap)
    left = int(rng.uniform(start, max(start + 1, width - w - 20)))
    # Standing on a ruling: the one under a random height, the digits' foot a little above or on it.
    lowest = math.ceil((h + 20 + tilt * left - offset) / gap)
    k = int(rng.integers(lowest, max(lowest + 1, int((height - 20 - offset) / gap))))
    top = int(offset + k * gap - tilt * left - h + rng.uniform(-0.15, 0.05) * gap)
    top = int(np.clip(top, 10, height - h - 10))
    canvas = np.zeros((height, width), np.float32)
    canvas[top : top + h, left : left + w] = ink
    return _photographed(paper, canvas, xx / width + yy / height, rng, 0.95, (0.05, 0.25), (0.4, 1.2), 2.5)


# ----------------------------------------------------------------------------------- mnist, fonts


def mnist_number(text: str, rng: np.random.Generator, pool: dict[int, np.ndarray]) -> np.ndarray:
    """MNIST test digits (uint8 28x28, white on black) side by side, at twice their size."""
    glyphs = []
    for c in text:
        choices = pool[int(c)]
        img = choices[rng.integers(len(choices))]
        cols = np.flatnonzero(img.max(axis=0) > 30)
        glyphs.append(img[:, cols[0] : cols[-1] + 1])
    gaps = [int(rng.choice([-2, -1, 0, 1, 2, 3, 4, 6, 8])) for _ in glyphs[1:]]
    width = sum(g.shape[1] for g in glyphs) + sum(gaps) + 16
    canvas = np.zeros((40, width), dtype=np.uint8)
    x = 8
    for i, g in enumerate(glyphs):
        y = 6 + int(rng.integers(-3, 4))
        region = canvas[y : y + 28, x : x + g.shape[1]]
        np.maximum(region, g, out=region)  # overlapping digits: the ink of both
        x += g.shape[1] + (gaps[i] if i < len(gaps) else 0)
    img = Image.fromarray(canvas).resize((width * 2, 80), Image.Resampling.BILINEAR)
    return np.asarray(img)


def font_number(text: str, rng: np.random.Generator) -> np.ndarray:
    """The number typeset in a DejaVu face, glyph by glyph with random tracking, dark on light."""
    font = ImageFont.truetype(str(FONT_DIR / FONTS[rng.integers(len(FONTS))]), int(rng.integers(60, 110)))
    tracking = rng.uniform(-0.04, 0.25) * font.size
    widths = [font.getlength(c) for c in text]
    width = int(sum(widths) + tracking * (len(text) - 1) + font.size)
    img = Image.new("L", (width, int(font.size * 1.6)), 245)
    draw = ImageDraw.Draw(img)
    x = font.size / 2
    for c, w in zip(text, widths, strict=True):
        draw.text((x, font.size * 0.25), c, fill=20, font=font)
        x += w + tracking
    return np.asarray(img)


# ---------------------------------------------------------------------------------------------- sets


def page_scan_number(text: str, rng: np.random.Generator) -> np.ndarray:
    """The pen-stroke number on a whole page scanned (``page_format``, ``scanned``), its digits 0.6-1.5 cm
    tall anywhere in the page's middle 80%: gray, or in two levels (a 1-bit scan)."""
    dpi, width, height = page_format(rng)
    tall = dpi * rng.uniform(0.6, 1.5) / 2.54 / 0.7  # the pad's digits are about 0.7 of its height
    w, h = min(round(tall * PAD_WIDTH / PAD_HEIGHT), width * 8 // 10), round(tall)
    ink = 1.0 - stroke_number(text, rng).astype(np.float32) / 255.0
    ink = np.asarray(Image.fromarray(ink, "F").resize((w, h), Image.Resampling.BILINEAR))
    top = int(rng.integers(height // 10, height - height // 10 - h))
    left = int(rng.integers(width // 10, width - width // 10 - w + 1))
    page, one_bit = scanned((width, height), ink, top, left, rng)
    if one_bit:
        return np.where(page > 0.5, 255, 0).astype(np.uint8)
    return np.clip(np.round(page * 255.0), 0, 255).astype(np.uint8)


def random_number(rng: np.random.Generator, max_digits: int = 8) -> str:
    n = int(rng.integers(1, max_digits + 1))
    return "".join(str(d) for d in rng.integers(0, 10, n))


def random_marked(rng: np.random.Generator) -> str:
    """A number written with punctuation: a decimal (point or comma), thousands, a negative number, a
    time of day or a range."""

    def digits(n: int, lead: bool = True) -> str:
        first = str(rng.integers(1, 10)) if lead and n > 1 else str(rng.integers(0, 10))
        return first + "".join(str(d) for d in rng.integers(0, 10, n - 1))

    kind = int(rng.integers(6))
    if kind == 0:  # decimal point
        return f"{digits(int(rng.integers(1, 4)))}.{digits(int(rng.integers(1, 3)), False)}"
    if kind == 1:  # decimal comma
        return f"{digits(int(rng.integers(1, 3)))},{digits(int(rng.integers(1, 3)), False)}"
    if kind == 2:  # thousands
        groups = [digits(3, False) for _ in range(int(rng.integers(1, 3)))]
        return ",".join([digits(int(rng.integers(1, 4))), *groups])
    if kind == 3:  # a negative number, whole or decimal
        body = digits(int(rng.integers(1, 4)))
        return f"-{body}" if rng.random() < 0.6 else f"-{body}.{digits(1, False)}"
    if kind == 4:  # a time of day
        return f"{rng.integers(0, 24)}:{rng.integers(0, 60):02d}"
    a = int(rng.integers(1, 100))
    return f"{a}-{a + int(rng.integers(1, 100))}"  # a range


def cropped_number(text: str, rng: np.random.Generator) -> np.ndarray:
    """The pen strokes cropped flush to their ink (``corruptions.flush_box``: each edge on the outermost
    ink or up to 2% of the writing's height inside or outside it), shown at 35-100% of the pad's size,
    light on dark in one of five."""
    pen = stroke_number(text, rng)
    ink = (255.0 - pen) / 255.0
    rows = np.flatnonzero(ink.max(axis=1) > 0.2)
    crop = Image.fromarray(pen).crop(flush_box(ink, rng, scale=rows[-1] - rows[0] + 1))
    f = rng.uniform(0.35, 1.0)
    size = (max(1, round(crop.width * f)), max(1, round(crop.height * f)))
    out = np.asarray(crop.resize(size, Image.Resampling.LANCZOS))
    return 255 - out if rng.random() < 0.2 else out


def make_family(
    family: str, count: int, seed: int = 0, mnist: tuple[np.ndarray, np.ndarray] | None = None
) -> list[Sample]:
    """``count`` numbers of one family. ``mnist``: test images (N, 28, 28) uint8 and labels."""
    rng = np.random.default_rng([seed, FAMILIES.index(family)])
    make: Callable[[str], np.ndarray]
    if family == "mnist":
        if mnist is None:
            raise ValueError("the mnist family needs the MNIST test images")
        images, labels = mnist
        pool = {d: images[labels == d] for d in range(10)}
        make = lambda t: mnist_number(t, rng, pool)  # noqa: E731
    elif family in ("strokes", "touching"):
        make = lambda t: stroke_number(t, rng, touching=family == "touching")  # noqa: E731
    elif family == "fonts":
        make = lambda t: font_number(t, rng)  # noqa: E731
    elif family == "photos":
        make = lambda t: photo_number(t, rng)  # noqa: E731
    elif family == "forms":
        make = lambda t: form_number(t, rng)  # noqa: E731
    elif family == "notebook":
        make = lambda t: notebook_number(t, rng)  # noqa: E731
    elif family == "turned_forms":
        make = lambda t: turned(form_number(t, rng), rng.uniform(2.0, 8.0) * rng.choice([-1, 1]))  # noqa: E731
    elif family == "marks":
        make = lambda t: font_number(t, rng) if rng.random() < 0.25 else marked_number(t, rng)  # noqa: E731
    elif family == "page_scans":
        make = lambda t: page_scan_number(t, rng)  # noqa: E731
    elif family == "cropped":
        make = lambda t: cropped_number(t, rng)  # noqa: E731
    else:
        raise ValueError(f"unknown family {family!r}; choose from {FAMILIES}")
    out = []
    for _ in range(count):
        text = random_marked(rng) if family == "marks" else random_number(rng)
        out.append((make(text), text))
    return out
