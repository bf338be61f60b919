"""Numbers written with the pen as the demo page's wide pad draws them: each digit's strokes (two
variants, whole or broken), a person's hand (slant, squeeze, wobble), the digits side by side, a
punctuation mark's strokes, and the strokes drawn into a picture. ``training.numbers`` builds its
families on these; ``training.number_scenes`` puts them on photographed sheets, forms and pages."""

from __future__ import annotations

import itertools
import math

import numpy as np

from model_store.drawing import Drawing

# STROKE_FRACTION: the marker's width as a share of the pad's height, as app/static/pad.js shows it (the
# margins here keep it); upload_pen: the pen the page sends the picture with
from .drawn import DIGIT_STROKES, STROKE_FRACTION, densify, draw_paths, jitter, upload_pen
from .writing_styles import STYLES

Stroke = list[tuple[float, float]]
SAMPLE_STEP = 2.0  # px between the points of a stroke sent as strokes (pointer events on the pad)

PAD_HEIGHT = 280  # the wide pad on the page is 3:1 at this height
PAD_WIDTH = 840
# Per digit, the templates of other hands (``other_hand_paths``): the page's and the writing styles.
OTHER_HANDS = {d: [*DIGIT_STROKES[d], *(t for digit, t in STYLES.values() if digit == d)] for d in range(10)}


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


def writers_hand(strokes: list[Stroke], rng: np.random.Generator) -> list[Stroke]:
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


def extent(strokes: list[Stroke]) -> tuple[float, float]:
    xs = [x for s in strokes for x, _ in s]
    return min(xs), max(xs)


def draw_strokes(
    strokes: list[Stroke], size: tuple[int, int], width: float, supersample: int = 2
) -> np.ndarray:
    """Pixel strokes -> gray uint8 picture, black ink on white, round caps and joins (pad.js)."""
    k = supersample
    paths = [[(x * k, y * k) for x, y in stroke] for stroke in strokes]
    return np.asarray(draw_paths(paths, size, width, k, ink=0))


def as_sent(pixels: list[Stroke]) -> np.ndarray:
    """Pixel strokes on the wide pad as the page sends them: drawn with its upload pen."""
    return draw_strokes(pixels, (PAD_WIDTH, PAD_HEIGHT), upload_pen(pixels, PAD_HEIGHT) * PAD_HEIGHT)


def stroke_number(text: str, rng: np.random.Generator, touching: bool = False) -> np.ndarray:
    """A number written with the pen on the wide pad, as the page sends its picture."""
    return as_sent(stroke_paths(text, rng, touching))


def stroke_paths(text: str, rng: np.random.Generator, touching: bool = False) -> list[Stroke]:
    """A number written with the pen on the wide pad: its strokes in the pad's pixels."""
    return written(hand_digits(text, rng), rng, touching)


def other_hand_paths(text: str, rng: np.random.Generator) -> list[Stroke]:
    """A number in other hands than ``stroke_paths``'s: each digit one of the page's drawn-digit
    templates or a writing style (``training.drawn``, ``training.writing_styles``: a slashed zero, a 1
    with a flag and foot, a looped 2, ...), templates written apart from ``digit_strokes``; neighbours
    touching as in the ``touching`` family in half the numbers. What the reader's weights were never
    fitted on (``fit-reader`` leaves the family out)."""
    return written([other_hand(int(c), rng) for c in text], rng, touching=rng.random() < 0.5)


def other_hand(digit: int, rng: np.random.Generator) -> list[Stroke]:
    """One template of ``digit`` from ``OTHER_HANDS``, jittered, in ``digit_strokes``' box (1 tall)."""
    templates = OTHER_HANDS[digit]
    strokes = jitter(templates[rng.integers(len(templates))], rng, scale=(0.9, 1.1), degrees=8.0, shear=0.15,
                     noise=0.004)  # fmt: skip
    points = np.concatenate(strokes)
    (x0, y0), (_, y1) = points.min(axis=0), points.max(axis=0)
    return [[((x - x0) / (y1 - y0), (y - y0) / (y1 - y0)) for x, y in s] for s in strokes]


def written(digits: list[list[Stroke]], rng: np.random.Generator, touching: bool = False) -> list[Stroke]:
    """Digits (each in a box 1 tall) written side by side on the wide pad, most of its height or as
    wide as it allows, apart or (``touching``) mostly run into one another: their strokes in pixels."""
    width = STROKE_FRACTION * PAD_HEIGHT
    gaps = [
        rng.uniform(0.0, 0.1) if touching and rng.random() < 0.7 else rng.uniform(0.12, 0.4)
        for _ in digits[1:]
    ]
    spans = [extent(s) for s in digits]
    total = sum(b - a for a, b in spans) + sum(gaps)
    # Letter height: most of the pad, unless the number would not fit across it.
    height = min(rng.uniform(0.5, 0.72) * PAD_HEIGHT, (PAD_WIDTH - 2.5 * width) / total)
    left = rng.uniform(1.2 * width, PAD_WIDTH - total * height - 1.2 * width)
    top = rng.uniform(1.2 * width, PAD_HEIGHT - height - 1.2 * width)
    return side_by_side(digits, gaps, left, top, height, rng)


def pad_drawing(pixels: list[Stroke], step: float = SAMPLE_STEP) -> Drawing:
    """Pixel strokes on the wide pad as the page sends a number's strokes (``model_store.drawing``):
    each sampled every ``step`` px along its path, as pointer events come, with the upload's pen."""
    pen = upload_pen(pixels, PAD_HEIGHT) * PAD_HEIGHT
    return Drawing([np.asarray(densify(s, step)) for s in pixels], PAD_WIDTH, PAD_HEIGHT, pen)


def hand_digits(text: str, rng: np.random.Generator) -> list[list[Stroke]]:
    """Each digit of ``text`` in a random variant (broken in half of them) and a person's hand."""
    return [writers_hand(digit_strokes(int(c), int(rng.integers(2)), rng.random() < 0.5), rng) for c in text]


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
    """A number with punctuation written with the pen on the wide pad, as the page sends its picture."""
    return as_sent(marked_paths(text, rng))


def marked_paths(text: str, rng: np.random.Generator) -> list[Stroke]:
    """A number with punctuation written with the pen on the wide pad, its strokes in the pad's pixels:
    the digits as in ``stroke_paths``, a mark a little apart from its neighbours (a dot never touches
    the digits)."""
    width = STROKE_FRACTION * PAD_HEIGHT
    glyphs = [hand_digits(c, rng)[0] if c.isdigit() else mark_strokes(c, rng) for c in text]
    gaps = [
        rng.uniform(0.25, 0.45) if not (a.isdigit() and b.isdigit()) else rng.uniform(0.12, 0.4)
        for a, b in itertools.pairwise(text)
    ]
    total = sum(b - a for a, b in map(extent, glyphs)) + sum(gaps)
    height = min(rng.uniform(0.45, 0.62) * PAD_HEIGHT, (PAD_WIDTH - 2.5 * width) / total)
    left = rng.uniform(1.2 * width, PAD_WIDTH - total * height - 1.2 * width)
    top = rng.uniform(1.2 * width, PAD_HEIGHT - 1.25 * height - 1.2 * width)  # room for a comma's tail
    return side_by_side(glyphs, gaps, left, top, height, rng)


def side_by_side(
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
        a, b = extent(strokes)
        dy = rng.uniform(-0.05, 0.05) * height
        pixels += [[(left + (x - a) * height, top + dy + y * height) for x, y in s] for s in strokes]
        left += (b - a) * height + (gaps[i] * height if i < len(gaps) else 0)
    return pixels
