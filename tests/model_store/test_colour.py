"""Ink as light as its paper (a yellow pen on white, blue on black, red on green) is read by its colour
where its luminance shows nothing; a gray picture, or a colour one with nothing written on it, stays
empty."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from model_store.decode import NoInk
from model_store.segment import page_bytes
from testkit.digits import drawn_mnist_digits, similarity
from testkit.digits import prepared as prep
from testkit.images import png_bytes
from training.pen_numbers import stroke_number

# (ink, paper): each pair is as light, or nearly, in luminance (a contrast under 0.12, MIN_CONTRAST)
PAIRS = {
    "yellow on white": ((255, 255, 0), (255, 255, 255)),
    "blue on black": ((0, 0, 255), (0, 0, 0)),
    "red on green": ((220, 40, 40), (40, 160, 40)),
}


@pytest.fixture(scope="module")
def digits() -> np.ndarray:
    return drawn_mnist_digits(10)[0]


def painted(ink_share: np.ndarray, ink: tuple[int, int, int], paper: tuple[int, int, int]) -> Image.Image:
    """An RGB picture: ``paper`` where ``ink_share`` is 0, ``ink`` where it is 1, mixed between."""
    a = ink_share.astype(np.float32)[..., None]
    rgb = (1.0 - a) * np.array(paper, np.float32) + a * np.array(ink, np.float32)
    return Image.fromarray(np.rint(rgb).astype(np.uint8))


def large(u8: np.ndarray) -> np.ndarray:
    """A 28x28 digit as a 280x280 ink share 0..1."""
    return np.asarray(Image.fromarray(u8).resize((280, 280), Image.Resampling.BICUBIC), np.float32) / 255.0


# How the picture is stored: a PNG, one with an alpha channel that covers every pixel (what a web
# canvas exports), a JPEG.
STORED = {
    "PNG": ("RGB", "PNG", {}),
    "opaque RGBA PNG": ("RGBA", "PNG", {}),
    "JPEG": ("RGB", "JPEG", {"quality": 90}),
}


@pytest.mark.parametrize("stored", list(STORED))
@pytest.mark.parametrize("pair", list(PAIRS))
def test_ink_as_light_as_its_paper_is_read_by_its_colour(digits, pair, stored):
    ink, paper = PAIRS[pair]
    mode, fmt, save = STORED[stored]
    black_on_white = [prep(png_bytes(painted(large(u8), (0, 0, 0), (255, 255, 255)))) for u8 in digits]
    pictures = [painted(large(u8), ink, paper).convert(mode) for u8 in digits]
    with pytest.raises(NoInk):  # its luminance alone: nothing stands out
        prep(png_bytes(pictures[0].convert("L")))
    scores = [
        similarity(prep(png_bytes(p, fmt=fmt, **save)), ref)
        for p, ref in zip(pictures, black_on_white, strict=True)
    ]
    assert min(scores) > 0.9, np.round(scores, 3)


def test_a_small_yellow_number_on_a_large_photo_is_cut_out_and_read_by_its_colour():
    """The number is found on the reduced picture by its colour, then cut out of the full JPEG in colour
    too; on a page lit unevenly, which darkens every channel alike."""
    number = 1.0 - stroke_number("2026", np.random.default_rng(0)).astype(np.float32) / 255.0  # ink 1
    share = np.zeros((1500, 2000), np.float32)
    share[700:870, 900:1410] = np.asarray(Image.fromarray(number).resize((510, 170)), np.float32)
    yy, xx = np.mgrid[0:1500, 0:2000] / 2000
    light = (0.95 - 0.1 * (xx + yy) / 2)[..., None]
    page = np.asarray(painted(share, (255, 255, 0), (255, 255, 255)), np.float32) * light
    data = png_bytes(Image.fromarray(np.rint(page).astype(np.uint8)), fmt="JPEG", quality=90)
    found = page_bytes(data, 10**8)
    assert [len(line) for line in found.lines] == [4]
    x0, y0, x1, y1 = found.box(found.lines[0])
    assert 880 <= x0 < x1 <= 1430 and 680 <= y0 < y1 <= 890, (x0, y0, x1, y1)


def test_faint_gray_marks_stay_empty_in_a_colour_file(digits):
    """A gray digit too faint to count as ink (0.08 darker than the paper), saved as RGB: looking at
    its colours finds no more contrast than its luminance did."""
    share = large(digits[3])
    rgb = painted(share, (225, 225, 225), (245, 245, 245))
    for fmt, save in (("PNG", {}), ("JPEG", {"quality": 85})):
        with pytest.raises(NoInk):
            prep(png_bytes(rgb, fmt=fmt, **save))


def test_colours_with_nothing_written_stay_empty():
    """A plain colour, and colours changing smoothly at one luminance (a hue gradient): no ink."""
    yy, xx = np.mgrid[0:300, 0:400] / 400
    hue = 3.0 * xx
    rgb = np.stack([0.6 + 0.3 * np.cos(hue + k * 2.1) for k in (0, -1, 1)], axis=-1)
    rgb *= (0.6 / (rgb @ np.array([0.299, 0.587, 0.114])))[..., None]
    gradient = Image.fromarray(np.rint(np.clip(rgb, 0, 1) * 255).astype(np.uint8))
    plain = Image.new("RGB", (300, 300), (0, 128, 128))
    for picture in (gradient, plain):
        for fmt, save in (("PNG", {}), ("JPEG", {"quality": 40})):
            with pytest.raises(NoInk):
                prep(png_bytes(picture, fmt=fmt, **save))
