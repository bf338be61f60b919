"""A house number on its plate, photographed on the wall it hangs on: the number a person is most
likely to photograph in the street (``training.numbers``' ``plates`` family).

The plate is a typeset number (1-4 digits, DejaVu faces) on a plate of one colour, light figures on a
dark plate (enamel blue, black, green, red, brown, slate) or dark figures on a light one (white,
yellow, cream, steel), with a printed border in half of them (a line inset from the plate's edge, its
corners square or rounded) and rounded corners in a third; it hangs on a wall of another shade
(plaster, brick, stone, wood, painted), turned up to 5 degrees, casting a soft shadow in half, at
10-35% of the photo's height (at most 80% of its width), wholly in view. The photo (1200x900) has
light falling off, a little camera blur, grain and JPEG's blocks; it is returned in gray (luminance),
as ``/read`` first looks at it.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont

FONT_DIR = Path("/usr/share/fonts/truetype/dejavu")
FACES = ("DejaVuSans-Bold.ttf", "DejaVuSans.ttf", "DejaVuSansCondensed-Bold.ttf", "DejaVuSerif-Bold.ttf",
         "DejaVuSerif.ttf", "DejaVuSerifCondensed-Bold.ttf", "DejaVuSansMono-Bold.ttf")  # fmt: skip
RGB = tuple[int, int, int]
# (plate, figures): light on dark, then dark on light
PLATES: tuple[tuple[RGB, RGB], ...] = (
    ((28, 58, 140), (248, 248, 245)),  # enamel blue
    ((22, 22, 24), (225, 190, 95)),  # black and gold
    ((30, 80, 50), (240, 240, 232)),  # green
    ((170, 35, 35), (250, 250, 250)),  # red
    ((90, 60, 40), (235, 220, 185)),  # brown and cream
    ((70, 78, 88), (235, 235, 235)),  # slate
    ((246, 246, 242), (20, 20, 20)),  # white
    ((240, 200, 40), (15, 15, 15)),  # yellow
    ((235, 225, 200), (30, 45, 110)),  # cream and blue
    ((190, 192, 195), (25, 25, 28)),  # steel
)
WALLS: tuple[RGB, ...] = (
    (236, 232, 224),  # white plaster
    (222, 205, 165),  # cream
    (196, 178, 150),  # beige render
    (150, 72, 52),  # brick
    (138, 136, 130),  # stone
    (92, 62, 42),  # dark wood
    (170, 190, 170),  # pale green paint
    (120, 135, 155),  # blue-gray paint
)
PHOTO = (1200, 900)


def house_number(rng: np.random.Generator) -> str:
    """1 to 4 digits, the first not a 0."""
    return str(int(rng.integers(1, 10))) + "".join(
        str(d) for d in rng.integers(0, 10, int(rng.integers(0, 4)))
    )


def plate_number(
    text: str, rng: np.random.Generator, look: int | None = None, border: bool | None = None
) -> np.ndarray:
    """``text`` on a house-number plate on a wall, photographed: gray uint8 (PHOTO's height x width).
    ``look`` (an index into PLATES) and ``border`` choose what is otherwise drawn at random (the same
    random numbers are drawn either way)."""
    drawn = int(rng.integers(len(PLATES)))
    plate, figures = PLATES[drawn if look is None else look]
    wall = WALLS[int(rng.integers(len(WALLS)))]
    plate_img = _plate(text, plate, figures, rng, border)
    width, height = PHOTO
    side = min(rng.uniform(0.1, 0.35) * height / plate_img.height, 0.8 * width / plate_img.width)
    plate_img = plate_img.resize((max(8, int(plate_img.width * side)), max(8, int(plate_img.height * side))),
                                 Image.Resampling.LANCZOS)  # fmt: skip
    plate_img = plate_img.rotate(rng.uniform(-5, 5), Image.Resampling.BICUBIC, expand=True)
    photo = Image.fromarray(_wall(wall, (height, width), rng))
    w, h = plate_img.size
    left = int(rng.integers(int(0.05 * width), max(int(0.05 * width) + 1, int(0.95 * width) - w)))
    top = int(rng.integers(int(0.05 * height), max(int(0.05 * height) + 1, int(0.95 * height) - h)))
    alpha = plate_img.getchannel("A")
    if rng.random() < 0.5:  # a soft shadow on the wall, below and to one side
        shadow = Image.new("L", photo.size, 0)
        shift = max(2, int(0.04 * h))
        shadow.paste(alpha, (left + int(rng.choice([-1, 1]) * shift), top + shift))
        shadow = shadow.filter(ImageFilter.GaussianBlur(shift))
        dark = np.asarray(shadow, np.float32)[..., None] / 255.0 * rng.uniform(0.25, 0.5)
        photo = Image.fromarray((np.asarray(photo, np.float32) * (1.0 - dark)).astype(np.uint8))
    photo.paste(plate_img.convert("RGB"), (left, top), alpha)
    rgb = np.asarray(photo, np.float32)
    yy, xx = np.ogrid[0:height, 0:width]
    light = rng.uniform(0.85, 1.0) - rng.uniform(0.0, 0.25) * (xx / width + yy / height) / 2
    rgb = rgb * light[..., None]
    img = Image.fromarray(np.clip(rgb, 0, 255).astype(np.uint8)).filter(
        ImageFilter.GaussianBlur(rng.uniform(0.5, 1.5))
    )
    noisy = np.asarray(img, np.float32) + rng.normal(0, 3.0, (height, width, 1))
    buf = io.BytesIO()
    Image.fromarray(np.clip(noisy, 0, 255).astype(np.uint8)).save(
        buf, "JPEG", quality=int(rng.integers(70, 93))
    )
    return np.asarray(Image.open(buf).convert("L"))


def _plate(text: str, plate: RGB, figures: RGB, rng: np.random.Generator, border: bool | None) -> Image.Image:
    """The plate, RGBA (transparent beyond its corners), drawn with figures 200 px tall."""
    font = ImageFont.truetype(str(FONT_DIR / FACES[int(rng.integers(len(FACES)))]), 200)
    left, top, right, bottom = font.getbbox(text)
    pad_x, pad_y = rng.uniform(0.3, 0.7) * (bottom - top), rng.uniform(0.2, 0.45) * (bottom - top)
    w, h = int(right - left + 2 * pad_x), int(bottom - top + 2 * pad_y)
    img = Image.new("RGBA", (w, h), (0, 0, 0, 0))
    draw = ImageDraw.Draw(img)
    corner = int(rng.uniform(0.05, 0.2) * h) if rng.random() < 1 / 3 else 0
    draw.rounded_rectangle((0, 0, w - 1, h - 1), radius=corner, fill=(*plate, 255))
    bordered = rng.random() < 0.5
    if bordered if border is None else border:  # a printed border inset from the edge
        inset = int(rng.uniform(0.05, 0.12) * h)
        line = max(2, int(rng.uniform(0.015, 0.04) * h))
        radius = int(rng.uniform(0.0, 0.15) * h)
        draw.rounded_rectangle((inset, inset, w - 1 - inset, h - 1 - inset), radius=radius,
                               outline=(*figures, 255), width=line)  # fmt: skip
    draw.text((pad_x - left, pad_y - top), text, font=font, fill=(*figures, 255))
    return img


def _wall(colour: RGB, shape: tuple[int, int], rng: np.random.Generator) -> np.ndarray:
    """A wall of ``colour``: blotches a few tenths of the photo across (render, weathering) and a fine
    grain of its texture, RGB uint8."""
    height, width = shape
    coarse = rng.normal(0, 1, (6, 8)).astype(np.float32)
    blotch = np.asarray(Image.fromarray(coarse, "F").resize((width, height), Image.Resampling.BICUBIC))
    texture = rng.normal(0, 1, (height, width)).astype(np.float32)
    shade = 1.0 + 0.04 * blotch + 0.03 * texture
    return np.clip(np.asarray(colour, np.float32) * shade[..., None], 0, 255).astype(np.uint8)
