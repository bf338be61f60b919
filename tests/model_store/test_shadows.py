"""A hard shadow across a photographed page is lifted; chalk, light falling off and solid objects are not
shadows; the running minima and maxima behind it match a brute-force window."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

import model_store.preprocess as preprocess
from model_store.imageops import running
from model_store.shadows import shadow_lifted
from testkit.digits import drawn_mnist_digits, similarity
from testkit.digits import prepared as prep
from testkit.images import png_bytes


@pytest.fixture(scope="module")
def digits() -> np.ndarray:
    return drawn_mnist_digits(10)[0]


def photo(
    u8: np.ndarray, shadow: np.ndarray | None, side: int = 240, at: tuple[int, int] = (50, 50)
) -> bytes:
    """The digit dark on a lit page, ``shadow`` (0 lit .. 1 in shadow, side x side) taking half the light."""
    ink = np.zeros((side, side), np.float32)
    ink[at[0] : at[0] + 140, at[1] : at[1] + 140] = np.asarray(Image.fromarray(u8).resize((140, 140))) / 255.0
    light = 0.92 * (1.0 - 0.5 * (np.zeros_like(ink) if shadow is None else shadow))
    page = light * (1.0 - 0.85 * ink) + np.random.default_rng(0).normal(0, 0.01, ink.shape)
    return png_bytes(np.clip(page * 255, 0, 255).astype(np.uint8), fmt="JPEG", quality=90)


def half_plane(side: int, angle_deg: float, offset: float) -> np.ndarray:
    yy, xx = np.mgrid[0:side, 0:side] / side
    a = np.radians(angle_deg)
    return np.clip((np.cos(a) * (xx - 0.5) + np.sin(a) * (yy - 0.5) - offset) / 0.01 + 0.5, 0, 1)


@pytest.mark.parametrize(("angle", "offset"), [(0, 0.0), (35, -0.1), (60, 0.0), (200, 0.1), (250, -0.3)])
def test_a_hard_shadow_across_the_page_is_lifted(digits, angle, offset, monkeypatch):
    """Over the digit, beside it, or over most of the page (the polarity then read the wrong way round):
    the digit comes out as on the lit page. Without the step it does not."""
    shadow = half_plane(240, angle, offset)
    lit = [prep(photo(u8, None)) for u8 in digits]
    lifted = [similarity(prep(photo(u8, shadow)), ref) for u8, ref in zip(digits, lit, strict=True)]
    assert min(lifted) > 0.85, np.round(lifted, 3)
    monkeypatch.setattr(preprocess, "shadow_lifted", lambda gray: gray)
    before = []
    for u8, ref in zip(digits, lit, strict=True):
        try:
            before.append(similarity(prep(photo(u8, shadow)), ref))
        except preprocess.NoInk:
            before.append(0.0)
    assert np.median(before) < 0.8, np.round(before, 3)


@pytest.mark.parametrize(("angle", "offset"), [(120, 0.15), (150, 0.2)])
def test_a_shadow_across_a_corner_leaves_the_digit_as_on_the_lit_page(digits, angle, offset):
    """Reaching the digit little or not at all, it looks like the table a photographed sheet lies on and
    is painted over as one (``model_store.sheet``), but the strokes that run into it or lie in the band
    painted over its edge are the pen's and stay (they used to go with it, a streak of them smeared
    across it: similarity down to 0.15)."""
    shadow = half_plane(240, angle, offset)
    lifted = [similarity(prep(photo(u8, shadow)), prep(photo(u8, None))) for u8 in digits]
    assert min(lifted) > 0.85, np.round(lifted, 3)


def test_a_digit_in_a_shadow_along_the_edge_is_not_painted_over_as_a_table(digits):
    """A shadow band along one side looks like the table a photographed sheet lies on; the digit written
    in it must not be painted over with it (it used to be refused as an empty picture)."""
    shadow = np.zeros((240, 240), np.float32)
    shadow[:, :200] = 1.0
    for u8 in digits:
        assert similarity(prep(photo(u8, shadow, at=(50, 40))), prep(photo(u8, None, at=(50, 40)))) > 0.85


def gray_of(u8: np.ndarray, paper: float, pen: float, side: int = 200) -> np.ndarray:
    ink = np.asarray(Image.fromarray(u8).resize((side, side)), np.float32) / 255.0
    return (paper + (pen - paper) * ink).astype(np.float32)


def test_what_is_not_a_shadow_is_left_as_it_is(digits):
    """Chalk on a board (its light part is strokes, not a lit page), light falling off smoothly across
    the page, a solid dark object touching the frame with nothing written darker, a clean page."""
    side = 200
    yy, xx = np.mgrid[0:side, 0:side] / side
    falling_off = (0.95 - 0.45 * xx).astype(np.float32)
    solid = np.full((side, side), 0.92, np.float32)
    solid[:, :110] = 0.45
    for u8 in digits:
        for gray in (
            gray_of(u8, 0.2, 0.9),  # chalk
            falling_off * (1.0 - 0.85 * gray_of(u8, 0.0, 1.0)),
            gray_of(u8, 0.92, 0.1),
        ):
            assert shadow_lifted(gray) is gray
    assert shadow_lifted(solid) is solid


@pytest.mark.parametrize(("n", "k"), [(20, 3), (46, 5), (4, 7), (37, 9), (195, 49), (10, 13)])
def test_running_extremes_match_a_brute_force_window(n, k):
    """Both ways ``running`` takes: shifted copies up to DIRECT_K values, block scans above."""
    x = np.random.default_rng(n).random((3, n)).astype(np.float32)
    padded = np.pad(x, ((0, 0), (k // 2, k // 2)), mode="edge")
    for op, reduce in ((np.maximum, np.max), (np.minimum, np.min)):
        expected = np.stack([reduce(padded[:, i : i + k], axis=1) for i in range(n)], axis=1)
        np.testing.assert_array_equal(running(x, k, 1, op), expected)
        np.testing.assert_array_equal(running(x.T, k, 0, op), expected.T)
