"""A number sent as its pen strokes, not as a picture: drawn here into the picture the reader works on,
each stroke's own pixels kept beside it.

A picture loses which stroke a pixel came from. Where a 1 was written through a 3, or a 6's loop over a
0, the two digits are one blob of ink, and no seam parts them without cutting one. Sent as strokes, the
blob is still found as one (lines and the rules' digits are found on the ink, as for a picture), but the
reader's pieces are its strokes (``model_store.pieces``), and each digit is fitted from its own strokes'
pixels, where they cross included.

Strokes are drawn as the demo page draws them (app/static/pad.js): quadratic curves through the
midpoints of the points, round caps and joins, with the page's upload pen unless the client names one (but
no hairline, which a reduced canvas would all but lose).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageDraw

from .decode import WORK_SIZE, NoInk
from .preprocess import ZOOM_GAIN, ZOOM_INK, to_mnist

# pad.js: the marker is STROKE_FRACTION of the pad's height wide; the picture sent draws small writing
# with a pen PEN_PER_HEIGHT of its tallest stroke's height (the page sends its pen with its strokes).
STROKE_FRACTION = 0.075
PEN_PER_HEIGHT = 0.15
# A client's pen finer than this share of its tallest stroke's height is drawn this wide: a hairline on
# a large canvas all but vanishes when the canvas is reduced (MNIST's strokes are some 0.13 of a digit).
MIN_PEN_PER_HEIGHT = 0.075
SUPERSAMPLE = 2  # the browser antialiases its strokes: drawn this many times larger and box-reduced
STEP = 2.0  # the curves' points are at most about this many supersampled pixels apart
# ... unless a drawing's pen travels further than MAX_SAMPLES steps in all (a number written on the page:
# some 2,000 supersampled pixels; a client's 20,000 points zigzagging corner to corner: 4 million): then
# the step is its travel over MAX_SAMPLES, so that no drawing costs more than this many samples.
MAX_SAMPLES = 200_000
LAYER_INK = 0.2  # a stroke's pixel is its own from this much of its ink (the page's ink level)

Points = list[tuple[float, float]]


@dataclass(frozen=True, slots=True)
class Drawing:
    """Pen strokes on a canvas, in the canvas's pixels (x right, y down)."""

    strokes: list[np.ndarray]  # each (n, 2) float64: x, y of its points in drawing order
    width: float | None = None  # the canvas's size (None: as far as the strokes reach); boxes are
    height: float | None = None  # in its pixels
    pen: float | None = None  # the line's width in canvas pixels; None: the page's upload pen

    def pen_width(self) -> float:
        """The pen the strokes are drawn with: as the page's ``uploadPen`` draws small writing,
        PEN_PER_HEIGHT of the tallest stroke's height, but not wider than the page's marker
        (STROKE_FRACTION of the canvas's height, where it is known); or the client's own, but not under
        MIN_PEN_PER_HEIGHT of that height; at least a pixel."""
        tallest = max(float(np.ptp(s[:, 1])) for s in self.strokes)
        if self.pen is not None:
            return max(self.pen, MIN_PEN_PER_HEIGHT * tallest)
        pen = PEN_PER_HEIGHT * tallest
        if self.height is not None:
            pen = min(pen, STROKE_FRACTION * self.height)
        return max(1.0, pen)


@dataclass(frozen=True, slots=True)
class Layer:
    """One stroke's ink in the drawn picture: its window's top-left corner and its ink there."""

    y0: int
    x0: int
    ink: np.ndarray  # (h, w) float32 0..1

    def own(self, mask: np.ndarray) -> np.ndarray:
        """Bool (h, w): the pixels of ``mask`` (the page's ink) in its window that are this stroke's."""
        h, w = self.ink.shape
        return mask[self.y0 : self.y0 + h, self.x0 : self.x0 + w] & (self.ink >= LAYER_INK)


@dataclass(frozen=True, slots=True)
class Drawn:
    """A drawing as the reader takes it: a picture and each stroke's ink in it."""

    gray: np.ndarray  # (H, W) float32 0..1: dark ink on white paper
    layers: list[Layer]  # one per stroke, in drawing order
    scale: float  # canvas pixels per picture pixel (a whole number, as a picture is reduced)
    offset: tuple[int, int]  # where the picture's (0, 0) lies on the canvas (x, y)


def draw(drawing: Drawing, lines: bool = True) -> Drawn:
    """The strokes drawn into the picture a PNG of the canvas would be read from: the canvas reduced by
    a whole factor to at most WORK_SIZE per side (``decode.to_gray``), or, for writing small on a large
    canvas, its ink with paper round it at the canvas's resolution (``preprocess.small_writing``,
    ``cut_out``; ``lines``: small by its height, as a number's line is, else by its larger side). A
    canvas of unknown size is the ink with as much paper round it as it is tall. Raises NoInk for no
    strokes."""
    if not drawing.strokes:
        raise NoInk("no strokes: the drawing is empty")
    pen = drawing.pen_width()
    points = np.concatenate(drawing.strokes)
    ink_lo, ink_hi = points.min(axis=0) - pen / 2, points.max(axis=0) + pen / 2
    extent = ink_hi - ink_lo
    canvas = (drawing.width, drawing.height)
    lo, hi = zip(*(_on_canvas(ink_lo[k], ink_hi[k], extent[1], canvas[k]) for k in (0, 1)), strict=True)
    factor = _reduction(hi[0] - lo[0], hi[1] - lo[1])
    size = extent[1] if lines else extent.max()
    if factor >= ZOOM_GAIN and size <= ZOOM_INK * factor:  # small writing: cut out at full resolution
        margin = max(size, 8 * factor)
        lo = tuple(max(lo[k], ink_lo[k] - margin) for k in (0, 1))
        hi = tuple(min(hi[k], ink_hi[k] + margin) for k in (0, 1))
        factor = _reduction(hi[0] - lo[0], hi[1] - lo[1])
    x0, y0 = math.floor(lo[0]), math.floor(lo[1])
    scale = float(factor)
    size_px = (max(1, math.ceil((hi[0] - x0) / scale)), max(1, math.ceil((hi[1] - y0) / scale)))
    travel = sum(float(np.linalg.norm(np.diff(s, axis=0), axis=1).sum()) for s in drawing.strokes)
    step = max(STEP, travel / scale * SUPERSAMPLE / MAX_SAMPLES)
    layers = [_layer(s, (x0, y0), scale, pen / scale, size_px, step) for s in drawing.strokes]
    ink = np.zeros(size_px[::-1], dtype=np.float32)
    for layer in layers:
        h, w = layer.ink.shape
        window = ink[layer.y0 : layer.y0 + h, layer.x0 : layer.x0 + w]
        np.maximum(window, layer.ink, out=window)
    return Drawn(1.0 - ink, layers, scale, (x0, y0))


def preprocess_drawing(drawing: Drawing) -> np.ndarray:
    """A digit sent as its pen strokes -> MNIST-style (28, 28) float32 0..1, as its picture would be."""
    return to_mnist(draw(drawing, lines=False).gray, enlarge=True)


def _on_canvas(lo: float, hi: float, tall: float, canvas: float | None) -> tuple[float, float]:
    """The canvas's extent on one axis round an ink's ``lo..hi``: 0..canvas where its size is known (and
    the ink there, should it reach past it), else the ink with ``tall`` of paper each side."""
    if canvas is None:
        return lo - tall, hi + tall
    return min(lo, 0.0), max(hi, canvas)


def _reduction(width: float, height: float) -> int:
    """The whole factor ``decode.to_gray`` reduces a picture of this size by."""
    return max(1, math.ceil(max(width, height) / WORK_SIZE))


def _layer(
    stroke: np.ndarray, origin: tuple[float, float], scale: float, pen: float, size: tuple[int, int],
    step: float = STEP,
) -> Layer:  # fmt: skip
    """One stroke drawn alone, ``pen`` picture pixels wide, in the window of the picture it covers, its
    curves sampled every ``step`` supersampled pixels."""
    pts = (stroke - np.asarray(origin)) / scale
    reach = pen / 2 + 1
    wx0, wy0 = (max(0, math.floor(v - reach)) for v in pts.min(axis=0))
    wx1 = min(size[0], math.ceil(pts[:, 0].max() + reach))
    wy1 = min(size[1], math.ceil(pts[:, 1].max() + reach))
    wx1, wy1 = max(wx1, wx0 + 1), max(wy1, wy0 + 1)
    k = SUPERSAMPLE
    path = smooth_path([(float(x - wx0) * k, float(y - wy0) * k) for x, y in pts], step)
    img = Image.new("L", ((wx1 - wx0) * k, (wy1 - wy0) * k), 0)
    paint = ImageDraw.Draw(img)
    r = pen * k / 2
    if len(path) > 1:
        paint.line(path, fill=255, width=max(1, round(pen * k)), joint="curve")
    for x, y in (path[0], path[-1]):  # round caps
        paint.ellipse((x - r, y - r, x + r, y + r), fill=255)
    ink = np.asarray(img.reduce(k), dtype=np.float32) / 255.0
    return Layer(wy0, wx0, ink)


def smooth_path(points: Points, step: float = STEP) -> Points:
    """pad.js's curve: quadratic Beziers through the midpoints, ending with a straight segment; each
    curve sampled about every ``step`` px, all at once."""
    if len(points) < 3:
        return list(points)
    p = np.asarray(points, dtype=np.float64)
    ctrl = p[1:-1]
    end = (p[1:-1] + p[2:]) / 2
    start = np.concatenate([p[:1], end[:-1]])
    corners = zip(start.tolist(), ctrl.tolist(), end.tolist(), strict=True)
    length = [math.dist(a, b) + math.dist(b, c) for a, b, c in corners]
    count = np.maximum(2, (np.asarray(length) / step).astype(np.int64))  # np.linspace(0, 1, count)[1:] each
    seg = np.repeat(np.arange(len(count)), count - 1)
    j = np.arange(seg.size) - np.repeat(np.cumsum(count - 1) - (count - 1), count - 1) + 1
    t = j * (1.0 / (count[seg] - 1))
    t[j == count[seg] - 1] = 1.0  # linspace's last sample is exactly its end
    t = t[:, None]
    a, b, c = (1 - t) ** 2, 2 * (1 - t) * t, t**2
    curve = a * start[seg] + b * ctrl[seg] + c * end[seg]
    return [tuple(points[0]), *map(tuple, curve.tolist()), tuple(points[-1])]
