"""Pen-stroke digits for training: the writing styles MNIST has too few of, generated in code.

MNIST's writers were mostly American: its 1s are plain bars and its 7s rarely carry a crossbar, so a
model trained on it alone reads a continental 1 (a long up-stroke to the top) as a 7. Here every digit
has several styles (a 1 with and without a flag or a foot, a 7 with and without a bar, open and closed
4s, straight and curved 9 tails, ...), each a skeleton of control points that is perturbed point by
point, slanted, squeezed, rotated, drawn with a pen of random width and blurred a little, and then
fitted to 28x28 by the serving preprocessing (``model_store.preprocess.to_mnist``), so the training
digits look exactly like what the service feeds the model.

The skeletons here are written independently of the evaluation generators (``training.drawn`` for
single digits, ``training.numbers`` for whole numbers), which never feed training. A share of the digits
(DISPLAY_SHARE) are lit on a seven-segment display instead (``training.display_digits``).
"""

from __future__ import annotations

import math

import numpy as np
import torch
from PIL import Image, ImageFilter

from model_store.preprocess import to_mnist

from .data import Split
from .display_digits import display_digit
from .drawn import draw_paths
from .pen_numbers import Stroke, arc

CANVAS = 96  # px; the digit is 60-76 px tall on it
SUPERSAMPLE = 2
EDGE = 3  # px of paper kept around the ink (the blur spreads up to ~2 px)
DISPLAY_SHARE = 0.3  # of the digits are lit on a seven-segment display (``training.display_digits``)


# Styles in a box 0.6 wide and 1 tall (x right, y down); one list of strokes per style.
STYLES: dict[int, list[list[Stroke]]] = {
    0: [
        [arc(0.3, 0.5, 0.27, 0.48, 100, 470, 28)],
        [arc(0.3, 0.5, 0.2, 0.5, 80, 440, 28)],
        [arc(0.3, 0.5, 0.27, 0.48, 90, 460, 28), [(-0.08, 0.95), (0.68, 0.04)]],  # slashed through (Ø)
    ],
    1: [
        [[(0.32, 0.0), (0.3, 1.0)]],  # a plain bar
        [[(0.12, 0.22), (0.34, 0.0), (0.32, 1.0)]],  # continental: a long up-stroke
        [[(0.2, 0.12), (0.34, 0.0), (0.32, 1.0)]],  # a short flag
        [[(0.1, 0.25), (0.33, 0.0), (0.32, 1.0)], [(0.12, 1.0), (0.52, 1.0)]],  # flag and foot
        [[(0.08, 0.3), (0.35, 0.0), (0.3, 1.0)]],  # a long, steep flag
    ],
    2: [
        [arc(0.3, 0.26, 0.26, 0.26, 165, -30, 12) + [(0.02, 1.0), (0.6, 0.98)]],
        [
            arc(0.3, 0.25, 0.25, 0.25, 160, -40, 12)
            + [(0.05, 0.95)]
            + arc(0.12, 0.9, 0.08, 0.08, 90, 300, 6)
            + [(0.6, 0.98)]
        ],  # a loop at the foot
    ],  # fmt: skip
    3: [
        [arc(0.3, 0.25, 0.25, 0.25, 150, -90, 12) + arc(0.3, 0.74, 0.28, 0.26, 90, -150, 12)],
        [[(0.02, 0.0), (0.55, 0.0), (0.25, 0.4)] + arc(0.3, 0.7, 0.28, 0.3, 100, -150, 12)],  # flat top
    ],
    4: [
        [[(0.45, 0.0), (0.0, 0.65), (0.6, 0.65)], [(0.45, 0.0), (0.45, 1.0)]],  # closed
        [[(0.08, 0.0), (0.02, 0.6), (0.6, 0.6)], [(0.45, 0.05), (0.45, 1.0)]],  # open
        [[(0.5, 1.0), (0.5, 0.0), (0.0, 0.62), (0.6, 0.62)]],  # in one stroke
    ],
    5: [
        [[(0.55, 0.0), (0.1, 0.0), (0.06, 0.45)] + arc(0.28, 0.7, 0.29, 0.29, 130, -150, 12)],
        [[(0.1, 0.0), (0.06, 0.45)] + arc(0.28, 0.7, 0.29, 0.29, 130, -150, 12), [(0.1, 0.0), (0.58, 0.02)]],
    ],
    6: [
        [[(0.5, 0.0), (0.2, 0.35), (0.04, 0.7)] + arc(0.3, 0.72, 0.26, 0.27, 190, -170, 14)],
        [arc(0.6, 0.55, 0.55, 0.55, 110, 180, 8) + arc(0.3, 0.74, 0.25, 0.25, 180, -180, 14)],
    ],
    7: [
        [[(0.0, 0.0), (0.6, 0.0), (0.2, 1.0)]],
        [[(0.0, 0.02), (0.6, 0.0), (0.22, 1.0)], [(0.14, 0.5), (0.56, 0.5)]],  # crossbar
        [[(0.0, 0.15), (0.02, 0.0), (0.6, 0.02), (0.3, 1.0)]],  # a tick before the bar
        [[(0.0, 0.0), (0.6, 0.0)] + arc(0.0, 0.0, 0.6, 1.0, 0, -60, 6)[1:] + [(0.25, 1.0)]],  # curved stem
    ],
    8: [
        [arc(0.3, 0.25, 0.22, 0.25, 90, 450, 20), arc(0.3, 0.74, 0.28, 0.26, 90, -270, 20)],
        [
            [(0.55, 0.1)]
            + arc(0.3, 0.24, 0.24, 0.22, 20, 200, 10)
            + arc(0.3, 0.72, 0.28, 0.27, 90, -250, 16)
            + [(0.55, 0.1)]
        ],  # in one stroke
    ],  # fmt: skip
    9: [
        [arc(0.3, 0.27, 0.27, 0.26, 0, 360, 20) + [(0.57, 0.3), (0.55, 1.0)]],
        [arc(0.3, 0.27, 0.27, 0.26, 0, 360, 20) + [(0.57, 0.3), (0.45, 0.8), (0.25, 1.0)]],  # curved tail
    ],
}


def _smooth(noise: np.ndarray, window: int = 5) -> np.ndarray:
    """Neighbouring points of a long curve move together (a hand wavers, it does not jitter)."""
    if len(noise) < 2 * window:
        return noise
    kernel = np.ones(window) / window * math.sqrt(window)  # keep the noise's amplitude
    pad = np.pad(noise, ((window // 2, window // 2), (0, 0)), mode="edge")
    return np.stack([np.convolve(pad[:, i], kernel, mode="valid") for i in range(2)], axis=1)


def _transform(strokes: list[Stroke], rng: np.random.Generator) -> list[Stroke]:
    """A hand: every control point moved a little, then slant, squeeze and a small rotation."""
    slant, squeeze = rng.uniform(-0.25, 0.3), rng.uniform(0.7, 1.25)
    turn = math.radians(rng.uniform(-10, 10))
    c, s = math.cos(turn), math.sin(turn)
    out = []
    for stroke in strokes:
        wobble = _smooth(rng.normal(0, 0.025, (len(stroke), 2)))
        pts = []
        for (x, y), (dx, dy) in zip(stroke, wobble, strict=True):
            x, y = (x + dx - 0.3) * squeeze + slant * (0.5 - y), y + dy - 0.5
            pts.append((c * x - s * y, s * x + c * y))
        out.append(pts)
    return out


def _fit(strokes: list[Stroke], height: float, pen: float) -> tuple[float, float, float, float]:
    """Scale and place a hand's strokes on the canvas so that no ink is cut off at its edge: a slanted,
    wide, turned digit with a broad pen can outgrow it. (height, pen, x0, y0), shrunk together when needed
    (``to_mnist`` rescales anyway, so only the ratio of pen to height shapes the digit)."""
    xs = [x for s in strokes for x, _ in s]
    ys = [y for s in strokes for _, y in s]
    span = max(max(xs) - min(xs), max(ys) - min(ys)) * height + pen  # ink's extent, round caps included
    room = CANVAS - 2 * EDGE
    if span > room:
        height, pen = height * room / span, pen * room / span
    x0 = CANVAS / 2 - (min(xs) + max(xs)) / 2 * height
    y0 = CANVAS / 2 - (min(ys) + max(ys)) / 2 * height
    return height, pen, x0, y0


def pen_canvas(digit: int, rng: np.random.Generator, style: int | None = None) -> Image.Image:
    """One digit in a random (or the given) style and a random hand, as drawn: dark ink on white paper,
    CANVAS px square, every stroke whole."""
    styles = STYLES[digit]
    strokes = _transform(styles[int(rng.integers(len(styles))) if style is None else style], rng)
    height = rng.uniform(60, 76)
    height, pen, x0, y0 = _fit(strokes, height, height * rng.uniform(0.05, 0.16))
    k = SUPERSAMPLE
    paths = [[((x0 + x * height) * k, (y0 + y * height) * k) for x, y in s] for s in strokes]
    img = draw_paths(paths, (CANVAS, CANVAS), pen, k, ink=int(rng.integers(0, 60)))
    if rng.random() < 0.5:
        img = img.filter(ImageFilter.GaussianBlur(rng.uniform(0.3, 1.2)))
    return img


def pen_digit(digit: int, rng: np.random.Generator, style: int | None = None) -> np.ndarray:
    """``pen_canvas`` as the serving preprocessing sees it: (28, 28) uint8, white ink on black."""
    fitted = to_mnist(np.asarray(pen_canvas(digit, rng, style), np.float32) / 255.0)
    return np.round(fitted * 255).astype(np.uint8)


def pen_digits(count: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``count`` digits, the classes in turn: images (count, 28, 28) uint8 white on black, labels. A
    DISPLAY_SHARE of them are seven-segment display digits, the rest pen strokes."""
    rng = np.random.default_rng([seed, 7])
    labels = np.arange(count, dtype=np.int64) % 10
    if not count:
        return np.zeros((0, 28, 28), np.uint8), labels
    draw = [display_digit if rng.random() < DISPLAY_SHARE else pen_digit for _ in labels]
    return np.stack([make(int(d), rng) for make, d in zip(draw, labels, strict=True)]), labels


def add_pen_digits(split: Split, count: int, seed: int = 0) -> Split:
    """The training split with ``count`` pen digits appended (uint8 (N, 1, 28, 28), as MNIST's)."""
    images, labels = pen_digits(count, seed)
    return Split(
        torch.cat([split.images, torch.from_numpy(images).unsqueeze(1)]),
        torch.cat([split.labels, torch.from_numpy(labels)]),
    )
