"""An eraser's broad faint bands near the digit (a whiteboard's ghosting, a board's chalk haze) are taken
out of the ink; bold writing, a faint digit alone, a number written small and pictures without bands are
left as they are."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFilter

from model_store.haze import haze_removed
from model_store.paper import ink_above_paper
from testkit.digits import drawn_mnist_digits, number_cropped_flush, similarity
from testkit.digits import prepared as prep
from testkit.images import png_bytes


@pytest.fixture(scope="module")
def digits() -> np.ndarray:
    return drawn_mnist_digits(12)[0]


def bands(side: int, rng: np.random.Generator) -> np.ndarray:
    """2-4 soft bands across the picture (0..1), each 10-15% of it tall, apart, as an eraser's swipes leave
    (where swipes overlap, their haze adds up: see the module's FAINT)."""
    im = Image.new("L", (side, side), 0)
    draw = ImageDraw.Draw(im)
    for slot in rng.permutation(5)[: int(rng.integers(2, 5))]:
        y = (0.1 + 0.2 * slot) * side
        width = int(rng.uniform(0.1, 0.15) * side)
        draw.line([(0, y), (side, y + rng.uniform(-0.03, 0.03) * side)], fill=255, width=width)
    return np.asarray(im.filter(ImageFilter.GaussianBlur(side / 40)), np.float32) / 255


def board(u8: np.ndarray, seed: int, chalk: bool, haze: float) -> bytes:
    """A 600 px photo of the digit (half of it tall) on a whiteboard (dark marker) or a board (chalk), with
    bands ``haze`` of the way from the board to the ink across it. Grain, blur, JPEG."""
    rng = np.random.default_rng(seed)
    side = 600
    ground, pen = (0.15, 0.9) if chalk else (0.92, 0.1)
    picture = np.full((side, side), ground, np.float32)
    picture += (pen - picture) * haze * bands(side, rng)
    ink = np.asarray(Image.fromarray(u8).resize((300, 300), Image.Resampling.BICUBIC), np.float32) / 255
    at = slice(150, 450)
    picture[at, at] += (pen - picture[at, at]) * ink
    photo = np.clip(picture + rng.normal(0, 0.015, picture.shape), 0, 1)
    return png_bytes(
        Image.fromarray((photo * 255).astype(np.uint8)).filter(ImageFilter.GaussianBlur(1)), fmt="JPEG"
    )


def inked(u8: np.ndarray, side: int) -> np.ndarray:
    """The digit as an ink map (0..1, white on black) ``side`` px a side."""
    return np.asarray(Image.fromarray(u8).resize((side, side)), np.float32) / 255


def on_paper(u8: np.ndarray) -> np.ndarray:
    return prep(png_bytes(Image.fromarray(255 - np.asarray(Image.fromarray(u8).resize((200, 200))))))


@pytest.mark.parametrize("chalk", [False, True])
def test_a_digit_written_over_an_erasers_bands_is_read_as_on_clean_paper(digits, chalk):
    """Bands a fifth of the way to the ink, across the digit and beside it, were kept as strokes: the
    digit's box stretched over them (fails without the step)."""
    scores = [similarity(prep(board(u8, seed, chalk, 0.2)), on_paper(u8)) for seed, u8 in enumerate(digits)]
    assert np.median(scores) > 0.9 and min(scores) > 0.8, np.round(scores, 3)


def test_overlapping_swipes_are_taken_out_too(digits):
    """A long swipe 0.3 of the writing's level with a shorter one over part of it: 0.55 where they overlap,
    past FAINT, one region. The board was wiped all the same: both go, the digit stays (fails without
    MERGED_CELLS: the ink map came back as it was)."""
    side = 480

    def swipe(x0: float, x1: float, tall: float, level: float) -> np.ndarray:
        im = Image.new("L", (side, side), 0)
        ImageDraw.Draw(im).line(
            [(x0 * side, 0.17 * side), (x1 * side, 0.18 * side)], fill=255, width=int(tall * side)
        )
        return level * np.asarray(im.filter(ImageFilter.GaussianBlur(side / 40)), np.float32) / 255

    for k, u8 in enumerate(digits[:6]):
        digit = np.zeros((side, side), np.float32)
        digit[210:450, 120:360] = inked(u8, 240)
        start = 0.2 + 0.1 * (k % 3)
        picture = np.maximum(digit, swipe(-0.1, 1.1, 0.25, 0.3) + swipe(start, start + 0.2, 0.2, 0.25))
        out = haze_removed(picture)
        assert out is not picture, k
        assert float(out[:190].max()) < 0.1, k  # above the digit: the swipes gone
        assert similarity(out, digit) > 0.95, k


@pytest.mark.parametrize("chalk", [False, True])
def test_a_board_without_bands_is_left_as_it_is(digits, chalk):
    """No band: the ink map comes back untouched, the same object (the step costs nothing else)."""
    for seed, u8 in enumerate(digits[:4]):
        gray = np.asarray(Image.open(io.BytesIO(board(u8, seed, chalk, 0.0))).convert("L"))
        ink, _ = ink_above_paper(gray.astype(np.float32) / 255)
        assert haze_removed(ink) is ink


def test_bold_writing_and_a_faint_digit_alone_are_kept(digits):
    """A marker's bold strokes are wider than the opening's square but as strong as the writing; a faint
    digit on its own is its own writing's level. Neither is touched."""
    for u8 in digits:
        ink = inked(u8, 240)
        bold = (
            np.asarray(
                Image.fromarray((ink * 255).astype(np.uint8)).filter(ImageFilter.MaxFilter(31)), np.float32
            )
            / 255
        )
        for picture in (bold, 0.2 * ink, 0.2 * bold):
            assert haze_removed(picture) is picture


def test_a_soft_round_shade_beside_the_digit_is_left_as_it_is(digits):
    """A photo's soft shading (a cheek, a lamp's spot on a wall) is as faint and broad as a band but round,
    not an eraser's long swipe: the ink map comes back untouched (taken out, a photo that is no digit
    looks more like one)."""
    yy, xx = np.mgrid[0:480, 0:480]
    for k, u8 in enumerate(digits[:6]):
        ink = np.zeros((480, 480), np.float32)
        ink[90:390, 90:390] = inked(u8, 300)
        cy, cx = (120, 360) if k % 2 else (360, 120)
        shade = np.clip(1.2 - np.hypot(yy - cy, xx - cx) / 80, 0, 1).astype(np.float32)
        picture = np.maximum(ink, 0.25 * shade)
        assert haze_removed(picture) is picture, k


@pytest.mark.parametrize("tall", [24, 30, 36])
def test_a_number_written_small_is_left_as_it_is(tall):
    """A number written small with a pen, as on a notebook page photographed whole: on the coarse copy its
    thin strokes average down to a long faint smooth band. Its fine strokes reach the writing's level,
    so it is writing (fails with bareness judged on the coarse copy alone: 4 of these 18 were bands)."""
    for seed, text in enumerate(["2312517", "8771905", "1939813", "69902655", "4410382", "5067291"]):
        number = number_cropped_flush(text, seed)
        wide = int(number.shape[1] * tall / number.shape[0])
        small = Image.fromarray(number).resize((wide, tall), Image.Resampling.LANCZOS)
        ink = np.zeros((175, 250), np.float32)  # a notebook photo's ink map at the working size
        ink[70 : 70 + tall, 20 : 20 + wide] = 1 - np.asarray(small, np.float32) / 255
        assert haze_removed(ink) is ink, text
