"""Numbers lit on a seven-segment display, drawn with the training generator's bars
(``training.display_digits``), for the tests of grouping and reading them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFilter

from training.display_digits import LIT, Display, draw_lit
from training.display_fonts import DisplayFontsMissing, required_fonts

# Where a display's punctuation sits, down its digits (0 their top, 1 their bottom): a decimal point's
# dot on the bottom, a colon's two (a clock's: both off the bottom). A minus is the middle bar alone.
DOTS = {".": (0.92,), ":": (0.3, 0.7)}
NARROW = 0.45  # a point's or a colon's cell, times a digit's pitch


def lit_number(
    text: str, display: Display, unlit: int | None = None, blur: float = 0.0, leds: bool = False,
    pitch: float = 1.35, touching: bool = False,
) -> np.ndarray:  # fmt: skip
    """``text`` (digits, '.', ':', '-') on ``display`` as gray 0..1: dark bars on white, the unlit ones
    in ``unlit`` (an LCD); ``leds``: light bars on a dark face instead; ``pitch``: from one digit to
    the next, in digit widths; ``touching``: a point or a colon drawn against the digit before it."""
    pitch = display.width * pitch + display.slant * display.height
    width = sum(NARROW * pitch if c in DOTS else pitch for c in text)
    img = Image.new("L", (int(width + 2 * display.height), int(2 * display.height)), 255)
    draw = ImageDraw.Draw(img)
    left, top = display.height, display.height / 2
    for c in text:
        if c in DOTS:
            side = 1.2 * display.thick
            for down in DOTS[c]:
                y = top + down * display.height
                x = left + display.slant * (display.height - down * display.height)
                x += -(pitch - display.width) - 0.3 * side if touching else 0.1 * pitch
                draw.rectangle([x, y - side / 2, x + side, y + side / 2], fill=20)
            left += NARROW * pitch
            continue
        lit = "g" if c == "-" else LIT[int(c)][0]
        draw_lit(draw, lit, display, left, top, 20, unlit)
        left += pitch
    if blur:
        img = img.filter(ImageFilter.GaussianBlur(blur))
    gray = np.asarray(img, np.float32) / 255.0
    return 1.0 - gray if leds else gray


def dseg_fonts() -> list[Path]:
    """The DSEG7 faces (``fonts-dseg``, which .ci/run installs); the calling test is skipped without them."""
    try:
        return required_fonts()
    except DisplayFontsMissing as exc:
        pytest.skip(str(exc))
