"""Digits drawn from pen strokes, for the tests that need real-looking digits but not MNIST; numbers
placed stroke by stroke, and model-like answers for their crops, for the tests of reading numbers.

Each digit is one of training.drawn's stroke templates under a seeded random affine, rendered as the
demo page renders a drawing and reduced by the real upload preprocessing (model_store.preprocess):
white ink on black, in a 20-pixel box centred by mass, as MNIST digits are. The same seed gives the
same pixels on every machine, so "the service answers what the model answers" can be checked
anywhere; only accuracy claims need MNIST itself.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from model_store.preprocess import preprocess_bytes
from training.drawn import drawn_digit, png_bytes
from training.evaluate import UPLOAD_MAX_PIXELS
from training.pen_numbers import PAD_HEIGHT, STROKE_FRACTION, Stroke, draw_strokes, stroke_number

# A 280x280 drawing is far below any pixel limit; the limit only guards uploads.
_NO_PIXEL_LIMIT = 10**8


@lru_cache(maxsize=256)
def _drawn(index: int, seed: int, pen: float | None) -> np.ndarray:
    """Digit ``index % 10``, drawn from its own generator: a longer list starts with a shorter one."""
    png = png_bytes(drawn_digit(index % 10, np.random.default_rng([seed, index]), pen))
    return np.rint(preprocess_bytes(png, _NO_PIXEL_LIMIT) * 255).astype(np.uint8)


def drawn_mnist_digits(
    count: int = 12, seed: int = 0, pen: float | None = STROKE_FRACTION
) -> tuple[np.ndarray, np.ndarray]:
    """``count`` drawn digits, (count, 28, 28) uint8 MNIST-style, and their labels (0..9 in turn). Drawn
    with the pad's marker by default, as the page sent every drawing before it fitted its pen to small
    writing (the tests' digits keep their pixels); ``pen=None``: as the page sends them now."""
    images = np.stack([_drawn(i, seed, pen) for i in range(count)])  # a fresh array: callers may edit it
    return images, np.arange(count, dtype=np.int64) % 10


PEN = 0.6 * STROKE_FRACTION * PAD_HEIGHT  # a finer pen than the pad's: broken strokes stay apart
HEIGHT = 160.0  # a digit's height in pixels


def number_cropped_flush(text: str, seed: int) -> np.ndarray:
    """The pen-stroke number (``training.pen_numbers.stroke_number``, seeded) cut to its ink's box, as a
    person crops before sending: dark on white uint8, its strokes on every edge."""
    pen = stroke_number(text, np.random.default_rng(seed))
    ys, xs = np.nonzero(pen < 128)
    return pen[ys.min() : ys.max() + 1, xs.min() : xs.max() + 1]


def write(digits: list[list[Stroke]], lefts: list[float], top: float = 60.0,
          size: tuple[int, int] = (840, 280)) -> np.ndarray:  # fmt: skip
    """Digits' strokes (0.6 x 1 boxes) placed at ``lefts`` (in digit heights), as a gray picture 0..1."""
    strokes = [
        [((left + x) * HEIGHT, top + y * HEIGHT) for x, y in stroke]
        for digit, left in zip(digits, lefts, strict=True)
        for stroke in digit
    ]
    return draw_strokes(strokes, size, PEN) / 255.0


def rows_for(labels: list[int], confidence: list[float], score: float = 0.0) -> np.ndarray:
    """ServingHead-like rows: the top probability on ``labels``, the rest spread, a digit score."""
    out = np.zeros((len(labels), 11))
    for row, (label, p) in zip(out, zip(labels, confidence, strict=True), strict=True):
        row[:10] = (1.0 - p) / 9
        row[label] = p
        row[10] = score
    return out


def similarity(a: np.ndarray, b: np.ndarray) -> float:
    """Pearson correlation of two 28x28 digits, best over +-1 px shifts (MNIST centring itself is only
    exact to 1 px)."""

    def corr(x: np.ndarray, y: np.ndarray) -> float:
        x, y = x.ravel() - x.mean(), y.ravel() - y.mean()
        return float(x @ y / np.sqrt((x @ x) * (y @ y)))

    return max(corr(np.roll(a, (dy, dx), (0, 1)), b) for dy in (-1, 0, 1) for dx in (-1, 0, 1))


def prepared(data: bytes) -> np.ndarray:
    """An upload's 28x28 input as the service makes it (its default MAX_IMAGE_PIXELS)."""
    return preprocess_bytes(data, UPLOAD_MAX_PIXELS)
