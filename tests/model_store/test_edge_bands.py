"""An app's furniture round a drawing (``model_store.edge_bands``): the toolbars, palettes and bars of a
screenshot go; a digit's own parts, and a second line of writing, stay."""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw

from model_store.edge_bands import without_edge_bands
from model_store.preprocess import preprocess_bytes
from testkit.digits import similarity
from testkit.images import png_bytes
from training.pen_numbers import digit_strokes

SHARE = 0.2  # what ``preprocess`` passes: its BOX_LEVEL


def drawing(d: int, chrome: str | None, side: int = 540) -> bytes:
    """The digit ``d`` drawn in a phone's drawing app (``side`` px wide, twice as tall): with ``chrome``
    "light" a row of tool icons above and a palette of colour swatches and a slider below on the same
    white, with "dark" the app's dark bars round a white canvas, white icons on them; None: the canvas
    alone."""
    w, h = side, 2 * side
    img = Image.new("RGB", (w, h), "white")
    draw = ImageDraw.Draw(img)
    if chrome == "dark":
        draw.rectangle([0, 0, w, 0.1 * h], (40, 40, 44))
        draw.rectangle([0, 0.86 * h, w, h], (40, 40, 44))
    icon = (255, 255, 255) if chrome == "dark" else (60, 64, 67)
    if chrome is not None:
        for k in range(6):  # tools: a square, a line, a disc...
            cx, cy, r = (k + 0.5) * w / 6, 0.05 * h, 0.035 * w
            [draw.rectangle, draw.ellipse][k % 2]([cx - r, cy - r, cx + r, cy + r], outline=icon, width=5)
            draw.line([(cx - r, cy + r), (cx + r, cy - r)], icon, 5)
        draw.line([(0.1 * w, 0.88 * h), (0.9 * w, 0.88 * h)], icon, 6)  # a size slider
        colours = [(0, 0, 0), (220, 40, 40), (30, 120, 220), (40, 160, 60), (250, 200, 0), (120, 60, 160)]
        for k, colour in enumerate(colours):
            cx, cy, r = (k + 0.5) * w / 6, 0.94 * h, 0.05 * w
            draw.ellipse([cx - r, cy - r, cx + r, cy + r], colour)
    for stroke in digit_strokes(d, 0):
        draw.line([(0.3 * w + 0.4 * w * x, 0.35 * h + 0.3 * h * y) for x, y in stroke], (20, 20, 20), 14,
                  joint="curve")  # fmt: skip
    return png_bytes(img)


def test_a_drawing_app_s_toolbar_and_palette_are_not_the_digit() -> None:
    """Left in, the icons and swatches stretched the digit's box over the screen: it came out a fraction
    of its size, between bars (0.04-0.5 alike the canvas alone). The light app's digit comes out bolder
    than the canvas alone (the icons' edges count as grain), the same digit."""
    for chrome in ("light", "dark"):
        scores = [similarity(preprocess_bytes(drawing(d, chrome), 10**8),
                             preprocess_bytes(drawing(d, None), 10**8)) for d in range(10)]  # fmt: skip
        assert min(scores) > 0.65 and np.median(scores) > 0.75, (chrome, np.round(scores, 3))


def ink(shape: tuple[int, int], *boxes: tuple[int, int, int, int]) -> np.ndarray:
    """An ink map with solid marks at (row0, row1, col0, col1)."""
    x = np.zeros(shape, np.float32)
    for r0, r1, c0, c1 in boxes:
        x[r0:r1, c0:c1] = 1.0
    return x


def test_writing_stays() -> None:
    """A digit's own parts, a second line, a number's last digit beyond a box's edge, a number near the
    top of a page, an equals sign before a number: none is furniture."""
    body = (80, 160, 100, 112)  # a tall stroke
    line = [(170, 230, c, c + 12) for c in (60, 90, 120)]
    number = [(20, 54, c, c + 20) for c in range(10, 190, 30)]  # along the top of a wide page
    edge = [(8, 24, 188, 190), (26, 40, 188, 190)]  # a box's edge, broken where the ink map lost it
    flag = [(72, 77, 100, 115), (72, 77, 118, 130)]
    kept = {
        "a 7's bar apart from its stem": ink((240, 200), (70, 76, 80, 130), body),
        "a 5's flag in two pieces close above it": ink((240, 200), *flag, body),
        "a second line of digits": ink((240, 200), body, *line),
        "a point beside it": ink((240, 200), body, (150, 158, 130, 138)),
        "a box's edge before the last digit": ink((60, 240), *number[:-1], *edge, (10, 44, 200, 220)),
        "a number at the top, a speck in the middle": ink((200, 240), *number, (120, 121, 100, 101)),
        "an equals sign before a number": ink((60, 240), (30, 33, 8, 36), (40, 43, 8, 36), *number[2:]),
    }  # fmt: skip
    for what, x in kept.items():
        assert without_edge_bands(x, SHARE) is x, what


def test_rows_of_small_marks_and_bars_along_the_edges_go() -> None:
    body = (80, 160, 100, 112)
    icons = [(10, 20, c, c + 10) for c in range(10, 190, 30)]
    x = ink((240, 200), body, *icons, (200, 206, 10, 190), (220, 232, 20, 32), (220, 232, 60, 72))
    out = without_edge_bands(x, SHARE)
    rows = np.flatnonzero(out.any(axis=1))
    assert rows[0] >= 70 and rows[-1] < 170  # the icons above, the slider and the swatches below: out
    assert np.array_equal(out[80:160, 100:112], x[80:160, 100:112])  # the writing: untouched
    dark = ink((240, 200), body, (0, 30, 0, 200), (190, 240, 0, 200))  # a dark theme's bars
    out = without_edge_bands(dark, SHARE)
    assert not out[:30].any() and not out[190:].any() and out[80:160].any()
