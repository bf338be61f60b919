"""Digits drawn the way the demo page draws them, for measuring how often real drawings are flagged.

The page (app/static/pad.js) keeps strokes as polylines in 0..1 pad coordinates, smooths them with
quadratic curves through the midpoints, and uploads a 280x280 PNG: ink #111111 on white, round caps and
joins, the line 0.075 of the side wide (the pad's marker) or, for small writing, 0.15 of its tallest
stroke's height (``upload_pen``). Here each digit has a few hand-written stroke templates;
every sample is a template under a random affine (size, rotation, shear, position) with a little
per-point jitter, rendered the same way and sent through the real upload preprocessing.
"""

from __future__ import annotations

import io
import math
from typing import Any

import numpy as np
from PIL import Image, ImageDraw

from model_store import drawing
from model_store.drawing import (  # pad.js's marker and small writing's pen; what a drawing sends
    PEN_PER_HEIGHT,
    STROKE_FRACTION,
    Drawing,
)

PAD_SIZE = 280
MIN_PEN_FRACTION = 0.01  # pad.js MIN_PEN_FRACTION
INK = 17  # pad.js INK #111111
PAPER = 255
SUPERSAMPLE = 2  # the browser antialiases its strokes; draw large and reduce

Stroke = list[tuple[float, float]]


def ellipse(cx: float, cy: float, rx: float, ry: float, start: float = 0.0, turn: float = 1.08) -> Stroke:
    """Counter-clockwise from ``start`` (0 = top) for ``turn`` turns: a pen overshoots to close a loop."""
    n = max(8, int(40 * turn))
    return [
        (
            cx + rx * math.sin(start - 2 * math.pi * turn * k / n),
            cy - ry * math.cos(start - 2 * math.pi * turn * k / n),
        )
        for k in range(n + 1)
    ]


def _figure_eight() -> Stroke:
    ts = np.linspace(0, 2 * math.pi * 1.04, 48)
    return [(0.5 + 0.17 * math.sin(2 * t), 0.5 - 0.32 * math.sin(t)) for t in ts]


def _nine(closed_top: bool) -> Stroke:
    loop = ellipse(0.49, 0.34, 0.17, 0.16, start=math.pi / 2, turn=1.0)
    return loop + [(0.66, 0.5 if closed_top else 0.45), (0.62, 0.84)]


# Templates in pad coordinates (x right, y down), one list of strokes per variant.
DIGIT_STROKES: dict[int, list[list[Stroke]]] = {
    0: [[ellipse(0.5, 0.5, 0.2, 0.31)], [ellipse(0.5, 0.5, 0.16, 0.32, turn=1.15)]],
    1: [[[(0.52, 0.17), (0.48, 0.83)]], [[(0.36, 0.3), (0.53, 0.17), (0.5, 0.83)]]],
    2: [
        [
            [
                (0.3, 0.3),
                (0.4, 0.2),
                (0.55, 0.17),
                (0.68, 0.26),
                (0.67, 0.4),
                (0.5, 0.58),
                (0.3, 0.8),
                (0.73, 0.8),
            ]
        ],
        [[(0.32, 0.28), (0.5, 0.17), (0.66, 0.3), (0.32, 0.8), (0.7, 0.78)]],
    ],
    3: [
        [
            [
                (0.3, 0.22),
                (0.5, 0.16),
                (0.66, 0.25),
                (0.63, 0.4),
                (0.46, 0.48),
                (0.66, 0.56),
                (0.68, 0.71),
                (0.52, 0.83),
                (0.3, 0.77),
            ]
        ],
        [[(0.32, 0.2), (0.66, 0.2), (0.46, 0.45), (0.66, 0.58), (0.62, 0.78), (0.45, 0.83), (0.3, 0.76)]],
    ],  # fmt: skip
    4: [
        [[(0.6, 0.83), (0.6, 0.17), (0.27, 0.62), (0.74, 0.62)]],
        [[(0.35, 0.17), (0.31, 0.56), (0.72, 0.56)], [(0.62, 0.3), (0.62, 0.85)]],
    ],
    5: [
        [
            [
                (0.68, 0.19),
                (0.37, 0.19),
                (0.33, 0.47),
                (0.5, 0.42),
                (0.66, 0.51),
                (0.68, 0.68),
                (0.55, 0.81),
                (0.32, 0.77),
            ]
        ],
        [
            [
                (0.37, 0.18),
                (0.34, 0.46),
                (0.52, 0.42),
                (0.67, 0.55),
                (0.63, 0.77),
                (0.46, 0.83),
                (0.31, 0.76),
            ],
            [(0.37, 0.18), (0.68, 0.18)],
        ],
    ],  # fmt: skip
    6: [
        [
            [
                (0.63, 0.17),
                (0.46, 0.29),
                (0.35, 0.5),
                (0.35, 0.7),
                (0.48, 0.83),
                (0.63, 0.76),
                (0.66, 0.6),
                (0.53, 0.5),
                (0.37, 0.58),
            ]
        ],
        [[(0.6, 0.16), (0.38, 0.45), (0.36, 0.7)] + ellipse(0.5, 0.66, 0.15, 0.17, start=-math.pi / 2)],
    ],  # fmt: skip
    7: [
        [[(0.27, 0.2), (0.73, 0.2), (0.45, 0.84)]],
        [[(0.28, 0.22), (0.72, 0.19), (0.5, 0.84)], [(0.4, 0.5), (0.68, 0.5)]],
    ],
    8: [[_figure_eight()]],
    9: [[_nine(True)], [_nine(False)]],
}


def smooth_path(points: Stroke, size: float, step: float = 2.0) -> list[tuple[float, float]]:
    """pad.js's curve (``model_store.drawing.smooth_path``) through points in 0..1 of ``size`` px."""
    return drawing.smooth_path([(x * size, y * size) for x, y in points], step)


def upload_pen(strokes: list[Stroke], unit: float = 1.0) -> float:
    """pad.js's ``uploadPen``: the pen the page draws the picture it sends with, as a share of the pad's
    height, for ``strokes`` whose y is in pad heights times ``unit`` (1: pad coordinates): the marker, or
    PEN_PER_HEIGHT of the tallest stroke's height when that is finer."""
    height = max(max(y for _, y in s) - min(y for _, y in s) for s in strokes) / unit
    return min(STROKE_FRACTION, max(MIN_PEN_FRACTION, PEN_PER_HEIGHT * height))


def render_strokes(
    strokes: list[Stroke],
    width: int = PAD_SIZE,
    height: int = PAD_SIZE,
    stroke_fraction: float | None = None,
) -> Image.Image:
    """Strokes in 0..1 of the canvas *height* -> gray image, dark round-capped ink on white paper, the
    line ``stroke_fraction`` of the height wide (default: the page's, ``upload_pen``)."""
    s = SUPERSAMPLE
    pen = upload_pen(strokes) if stroke_fraction is None else stroke_fraction
    paths = [smooth_path(stroke, height * s) for stroke in strokes]
    return draw_paths(paths, (width, height), pen * height, s)


def draw_paths(
    paths: list[list[tuple[float, float]]], size: tuple[int, int], line: float, supersample: int,
    ink: int = INK,
) -> Image.Image:  # fmt: skip
    """Pen paths in supersampled pixels -> gray image of ``size``: ``line`` px wide ink on white paper,
    round caps and joins (as pad.js strokes), drawn ``supersample`` times larger and box-reduced."""
    s = supersample
    img = Image.new("L", (size[0] * s, size[1] * s), PAPER)
    draw = ImageDraw.Draw(img)
    r = line * s / 2
    for path in paths:
        if len(path) > 1:
            draw.line(path, fill=ink, width=max(1, round(line * s)), joint="curve")
        for x, y in (path[0], path[-1]):  # round caps
            draw.ellipse((x - r, y - r, x + r, y + r), fill=ink)
    return img.resize(size, Image.Resampling.BOX)


def png_bytes(img: Image.Image) -> bytes:
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def ink_upload(ink: np.ndarray, size: int) -> bytes:
    """A white-on-black picture (a dataset's, uint8) as a person would send it: a dark-on-white PNG
    ``size`` px across (enlarged bilinearly when it is not that size already)."""
    img = Image.fromarray(255 - ink)
    return png_bytes(img if size == img.width else img.resize((size, size), Image.Resampling.BILINEAR))


def jitter(strokes: list[Stroke], rng: np.random.Generator, *, scale: tuple[float, float] = (0.6, 1.1),
           degrees: float = 12.0, shear: float = 0.2, noise: float = 0.006) -> list[Stroke]:  # fmt: skip
    """A random affine about the pad centre, a random position that stays on the pad, point noise."""
    k = rng.uniform(*scale)
    a = math.radians(rng.uniform(-degrees, degrees))
    sh = rng.uniform(-shear, shear)
    m = k * np.array([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]]) @ np.array([[1, sh], [0, 1]])
    pts = [(np.asarray(s) - 0.5) @ m.T for s in strokes]
    lo = np.min([p.min(0) for p in pts], axis=0)
    hi = np.max([p.max(0) for p in pts], axis=0)
    margin = STROKE_FRACTION / 2 + 0.02
    shift = [rng.uniform(min(0.0, margin - lo[i] - 0.5), max(0.0, 0.5 - margin - hi[i])) for i in range(2)]
    return [[(float(x), float(y)) for x, y in p + 0.5 + shift + rng.normal(0, noise, p.shape)] for p in pts]


def densify(stroke: Stroke, step: float = 0.012) -> Stroke:
    """Points every ``step`` along a polyline, as pointermove events sample a hand moving along it:
    the pad's midpoint smoothing then keeps corners sharp instead of rounding a whole side away."""
    out = [stroke[0]]
    for a, b in zip(stroke, stroke[1:], strict=False):
        n = max(1, int(math.dist(a, b) / step))
        out += [(a[0] + (b[0] - a[0]) * k / n, a[1] + (b[1] - a[1]) * k / n) for k in range(1, n + 1)]
    return out


def drawn_digit(digit: int, rng: np.random.Generator, pen: float | None = None) -> Image.Image:
    """One template of ``digit``, jittered; half are densified (sharp corners), half stay curvy; drawn
    with ``pen`` (a share of the pad's height; default: the page's, ``upload_pen``)."""
    return render_strokes(placed_digit(digit, rng), stroke_fraction=pen)


def placed_digit(digit: int, rng: np.random.Generator) -> list[Stroke]:
    """``drawn_digit``'s strokes, in 0..1 of the pad."""
    variants = DIGIT_STROKES[digit]
    return hand(variants[rng.integers(len(variants))], rng)


def pad_strokes(strokes: list[Stroke]) -> Drawing:
    """Strokes in 0..1 of the square pad as the page sends them from it (``model_store.drawing``): its
    points in the pad's pixels, the pad's size and the upload's pen (pad.js ``toUpload``)."""
    pen = round(upload_pen(strokes) * PAD_SIZE)
    return Drawing([np.asarray(s) * PAD_SIZE for s in strokes], PAD_SIZE, PAD_SIZE, pen)


def drawn_hand(strokes: list[Stroke], rng: np.random.Generator, pen: float | None = None) -> Image.Image:
    """A template drawn by one hand (``hand``)."""
    return render_strokes(hand(strokes, rng), stroke_fraction=pen)


def hand(strokes: list[Stroke], rng: np.random.Generator, **affine: Any) -> list[Stroke]:
    """A template as one hand writes it: jittered (``affine``: ``jitter``'s options); half are
    densified (sharp corners), half stay curvy."""
    out = jitter(strokes, rng, **affine)
    return [densify(s) for s in out] if rng.random() < 0.5 else out


def drawn_digits(per_class: int = 100, seed: int = 0) -> tuple[list[bytes], np.ndarray]:
    """``per_class`` PNG uploads of each digit as the page would send them, and their labels."""
    rng = np.random.default_rng(seed)
    images, labels = [], []
    for digit in range(10):
        for _ in range(per_class):
            images.append(png_bytes(drawn_digit(digit, rng)))
            labels.append(digit)
    return images, np.asarray(labels, dtype=np.int64)
