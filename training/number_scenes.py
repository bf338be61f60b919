"""What a pen-written number (``training.pen_numbers``) is seen on: a sheet photographed with a phone,
a form's boxes, comb field or answer line, a notebook page, a whole scanned page, or cropped flush to
its ink; and a picture turned as a page photographed at a slant."""

from __future__ import annotations

import math

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

from .page_corruptions import flush_box, page_format, ruling_lines, scanned
from .pen_numbers import (
    PAD_HEIGHT,
    PAD_WIDTH,
    STROKE_FRACTION,
    Stroke,
    draw_strokes,
    extent,
    hand_digits,
    side_by_side,
    stroke_number,
)
from .photo_corruptions import sheet_mask


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
    digits = hand_digits(text, rng)
    height = rng.uniform(0.3, 0.42) * PAD_HEIGHT
    cell_h = height / rng.uniform(0.65, 0.8)
    cell_w = max(
        max(b - a for a, b in map(extent, digits)) * height + 2.5 * pen, cell_h * rng.uniform(0.6, 0.9)
    )
    kind = rng.random()
    margin = 40.0
    pixels: list[Stroke] = []
    if kind < 0.7:  # a digit in each box or cell
        size = (int(len(text) * cell_w + 2 * margin), int(cell_h + 2 * margin))
        for i, strokes in enumerate(digits):
            a, b = extent(strokes)
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
        spans = [extent(s) for s in digits]
        total = (sum(b - a for a, b in spans) + sum(gaps)) * height
        reach = [rng.uniform(0.15, 0.8) * height for _ in range(2)]
        size = (int(total + sum(reach) + 2 * margin), int(height + 2 * margin))
        pixels = side_by_side(digits, gaps, margin + reach[0], margin, height, rng)
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
