"""A highlight on glossy paper is followed as the paper under the ink; pictures without one keep the
paper they had."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

import model_store.paper as paper_step
import model_store.preprocess as preprocess
from model_store.highlights import paper_under_highlights
from testkit.digits import drawn_mnist_digits, similarity
from testkit.digits import prepared as prep
from testkit.images import png_bytes

SIDE = 240


@pytest.fixture(scope="module")
def digits() -> np.ndarray:
    return drawn_mnist_digits(10)[0]


def spot(centre: tuple[float, float], radius: float, peak: float) -> np.ndarray:
    """A lamp's reflection: light added round ``centre`` (fractions of the side), flat-topped."""
    yy, xx = np.mgrid[0:SIDE, 0:SIDE] / SIDE
    r2 = ((yy - centre[0]) ** 2 + (xx - centre[1]) ** 2) / radius**2
    return (peak * np.exp(-0.5 * r2**1.5)).astype(np.float32)


def photo(u8: np.ndarray, highlight: np.ndarray | None) -> bytes:
    """The digit dark on a page lit a little unevenly, ``highlight`` added to paper and ink alike (the
    sensor clips at white), grain, JPEG."""
    ink = np.zeros((SIDE, SIDE), np.float32)
    ink[50:190, 50:190] = np.asarray(Image.fromarray(u8).resize((140, 140))) / 255.0
    xx = np.mgrid[0:SIDE, 0:SIDE][1] / SIDE
    page = (0.88 - 0.08 * xx) * (1.0 - 0.85 * ink) + (0.0 if highlight is None else highlight)
    page += np.random.default_rng(0).normal(0, 0.01, ink.shape)
    return png_bytes(np.clip(page * 255, 0, 255).astype(np.uint8), fmt="JPEG", quality=90)


@pytest.mark.parametrize(
    ("centre", "radius", "peak"),
    [
        ((0.4, 0.55), 0.15, 0.5),  # on the strokes, the ink under its middle clipped in part
        ((0.2, 0.5), 0.15, 0.5),  # over the digit's top
        ((0.5, 0.85), 0.15, 0.5),  # beside the digit
        ((0.9, 0.5), 0.1, 0.3),  # at the edge, below it
    ],
)
def test_the_digit_under_or_beside_a_highlight_comes_out_as_without_it(
    digits, centre, radius, peak, monkeypatch
):
    highlight = spot(centre, radius, peak)
    plain = [prep(photo(u8, None)) for u8 in digits]
    shone = [similarity(prep(photo(u8, highlight)), ref) for u8, ref in zip(digits, plain, strict=True)]
    assert min(shone) > 0.85, np.round(shone, 3)
    # Without the step, the paper round the spot reads as ink in many of them (a fit pulled down by the
    # spot, or one level under it): a gray patch in the crop, the digit squeezed into a corner. (The
    # furniture step, off here too, takes some such patches off as a band along the edge.)
    monkeypatch.setattr(paper_step, "paper_under_highlights", lambda x, paper: paper)
    monkeypatch.setattr(preprocess, "without_edge_bands", lambda x, share: x)
    before = [similarity(prep(photo(u8, highlight)), ref) for u8, ref in zip(digits, plain, strict=True)]
    assert np.mean(before) < 0.8, np.round(before, 3)


def wob(u8: np.ndarray, paper: float, pen: float, side: int = 200) -> np.ndarray:
    """A white-on-black picture as ``preprocess`` subtracts its paper from: the digit at ``pen`` on
    paper at ``paper``."""
    ink = np.asarray(Image.fromarray(u8).resize((side, side)), np.float32) / 255.0
    return (paper + (pen - paper) * ink).astype(np.float32)


def test_pictures_without_a_highlight_keep_their_paper(digits):
    """A clean canvas, a marker stroke wider than the opening's square, light falling off across the
    page, grainy paper, and a tiny canvas: the paper found for them is returned as it is."""
    side = 200
    xx = (np.mgrid[0:side, 0:side][1] / side).astype(np.float32)
    grain = np.random.default_rng(1).normal(0, 0.08, (side, side)).astype(np.float32)
    bold = np.zeros((side, side), np.float32)
    bold[:, 60:140] = 0.9  # a stroke 40% of the picture wide
    for u8 in digits:
        for x in (wob(u8, 0.05, 0.95), wob(u8, 0.1, 0.9) + 0.3 * xx, wob(u8, 0.3, 0.9) + grain):
            paper = paper_step.paper_level(x)
            assert paper_under_highlights(x, paper) is paper
    for x in (bold, wob(digits[0], 0.1, 0.9, side=28)):
        assert paper_under_highlights(x, 0.0) == 0.0


def test_the_paper_follows_a_highlight_and_not_the_strokes():
    """White on black, a dip (the highlight) under two strokes: the paper returned follows the dip to
    within its margin, and the strokes stand out of it by what they did on the plain paper."""
    side = 200
    yy, xx = np.mgrid[0:side, 0:side] / side
    paper = 0.15 - 0.12 * np.exp(-0.5 * ((yy - 0.5) ** 2 + (xx - 0.4) ** 2) / 0.15**2)
    strokes = np.zeros((side, side), np.float32)
    strokes[30:170, 70:80] = 0.6
    strokes[95:105, 40:160] = 0.6
    x = (paper + strokes).astype(np.float32)
    found = paper_under_highlights(x, 0.15)
    assert isinstance(found, np.ndarray)
    error = found - paper
    assert 0.0 <= error.min() and error.max() < 0.08, (error.min(), error.max())
    ink = np.clip(x - found, 0.0, None)
    assert ink[strokes > 0].min() > 0.5 and ink[strokes == 0].max() < 0.01


def flash_photo(u8: np.ndarray, spot_peak: float, width: int = 640, height: int = 480) -> bytes:
    """A photo taken straight down with the flash: a small digit (90 px) in the middle of the page,
    the flash's spot over it, the corners a fifth darker, grain, JPEG."""
    ink = np.zeros((height, width), np.float32)
    top, left = height // 2 - 45, width // 2 - 45
    ink[top : top + 90, left : left + 90] = np.asarray(Image.fromarray(u8).resize((90, 90))) / 255.0
    yy, xx = np.mgrid[0:height, 0:width]
    r2 = ((xx - width / 2) ** 2 + (yy - height / 2) ** 2) / 70.0**2
    light = 0.9 * (1.0 - 0.2 * (((xx - width / 2) / width) ** 2 + ((yy - height / 2) / height) ** 2) / 0.5)
    page = light * (1.0 - 0.85 * ink) + spot_peak * np.exp(-0.5 * r2**1.3)
    page += np.random.default_rng(0).normal(0, 0.01, ink.shape)
    return png_bytes(np.clip(page * 255, 0, 255).astype(np.uint8), fmt="JPEG", quality=90)


def test_a_small_digit_inside_a_flash_spot_is_dark_ink_on_light_paper(digits, monkeypatch):
    """The spot is the lightest thing in the picture and the ink under it gray, so the extremes stand
    out about as far from the page's paper: measured against the paper round them, the ink is dark."""
    plain = [prep(flash_photo(u8, 0.0)) for u8 in digits]
    shone = [similarity(prep(flash_photo(u8, 0.4)), ref) for u8, ref in zip(digits, plain, strict=True)]
    assert min(shone) > 0.85, np.round(shone, 3)
    monkeypatch.setattr(paper_step, "CLOSE_CALL", 0.0)  # the page's extremes alone decide
    before = [similarity(prep(flash_photo(u8, 0.4)), ref) for u8, ref in zip(digits, plain, strict=True)]
    assert np.mean(before) < 0.8, np.round(before, 3)
