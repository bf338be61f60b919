"""Numbers lit on a seven-segment display, drawn with the training generator's bars
(``training.display_digits``), for the tests of grouping and reading them."""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

from training.display_digits import LIT, Display, draw_lit


def lit_number(
    text: str, display: Display, unlit: int | None = None, blur: float = 0.0, leds: bool = False
) -> np.ndarray:
    """``text`` on ``display`` as gray 0..1: dark bars on white, the unlit ones in ``unlit`` (an LCD);
    ``leds``: light bars on a dark face instead."""
    pitch = display.width * 1.35 + display.slant * display.height
    img = Image.new("L", (int(pitch * len(text) + 2 * display.height), int(2 * display.height)), 255)
    draw = ImageDraw.Draw(img)
    for i, c in enumerate(text):
        draw_lit(draw, LIT[int(c)][0], display, display.height + i * pitch, display.height / 2, 20, unlit)
    if blur:
        img = img.filter(ImageFilter.GaussianBlur(blur))
    gray = np.asarray(img, np.float32) / 255.0
    return 1.0 - gray if leds else gray
