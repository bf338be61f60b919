"""A house number's plate photographed on a plain wall, drawn so that the figures' box is known, for the
tests of painting the wall and the plate's frame over (``model_store.sheet``) and of reading it."""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont

from testkit.images import png_bytes

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf"


def plate_photo(
    text: str, plate: int, figures: int, wall: int, frame: bool, seed: int
) -> tuple[bytes, tuple[int, int, int, int]]:
    """A 1200x900 JPEG of ``text`` in ``figures`` gray on a ``plate`` gray plate (with a printed frame
    inset from its edge), on a ``wall`` gray wall; and the figures' box (x0, y0, x1, y1) in the photo."""
    rng = np.random.default_rng(seed)
    font = ImageFont.truetype(FONT, 120)
    left, top, right, bottom = font.getbbox(text)
    w, h = right - left + 140, bottom - top + 100
    photo = Image.new("L", (1200, 900), wall)
    x, y = int(rng.integers(100, 1100 - w)), int(rng.integers(100, 800 - h))
    draw = ImageDraw.Draw(photo)
    draw.rectangle((x, y, x + w, y + h), fill=plate)
    if frame:
        draw.rounded_rectangle((x + 12, y + 12, x + w - 12, y + h - 12), radius=14, outline=figures, width=5)
    draw.text((x + 70 - left, y + 50 - top), text, font=font, fill=figures)
    noisy = np.asarray(photo.filter(ImageFilter.GaussianBlur(1.0)), np.float32) + rng.normal(
        0, 3, (900, 1200)
    )
    data = png_bytes(Image.fromarray(np.clip(noisy, 0, 255).astype(np.uint8)), fmt="JPEG", quality=85)
    return data, (x + 70, y + 50, x + 70 + right - left, y + 50 + bottom - top)
