"""Lined and squared paper: the rulings go, every stroke of the digit stays, and long strokes that are
not a grid of rulings are never touched."""

from __future__ import annotations

import math

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFilter

from model_store.preprocess import preprocess_bytes
from model_store.rulings import rulings_removed
from testkit.images import png_bytes
from training.pen_numbers import digit_strokes

from .test_preprocess import similarity

PAPER, PEN = 235, 40


def notebook(d: int, paper: str, tilt_deg: float = 0.0, ruling: int = 110) -> bytes:
    """A ball-point digit d, 200 px tall, on a 900x700 photo of plain, lined or squared paper (rulings
    3 px wide, 55 px apart, ``ruling`` gray: as strong as a thin pen's line once the photo is reduced),
    slightly soft, JPEG."""
    page = Image.new("L", (900, 700), PAPER)
    draw = ImageDraw.Draw(page)
    slope = math.tan(math.radians(tilt_deg))
    if paper in ("lined", "squared"):
        for y in range(20, 700, 55):
            draw.line([(0, y), (900, y + slope * 900)], fill=ruling, width=3)
    if paper == "squared":
        for x in range(30, 900, 55):
            draw.line([(x, 0), (x - slope * 700, 700)], fill=ruling, width=3)
    for stroke in digit_strokes(d, 0):
        draw.line([(350 + 200 * x, 250 + 200 * y) for x, y in stroke], fill=PEN, width=5, joint="curve")
    return png_bytes(page.filter(ImageFilter.GaussianBlur(1.0)), fmt="JPEG", quality=90)


def soft(x: np.ndarray) -> np.ndarray:
    """A 1-px blur: a thin pen's line wobbling by a pixel is no difference."""
    return np.asarray(
        Image.fromarray((255 * x).astype(np.uint8)).filter(ImageFilter.GaussianBlur(1)), np.float32
    )


@pytest.mark.parametrize(
    ("paper", "tilt"),
    [("lined", 0.0), ("squared", 0.0), ("lined", 2.0), ("squared", -2.5), ("lined", 6.0), ("squared", -7.5)],
)
def test_a_digit_on_ruled_paper_comes_out_like_on_plain_paper(paper, tilt):
    """Left in, the rulings made the same digits' median similarity 0.33-0.77 (0.07 at worst). A page
    photographed by hand turns more than 3 degrees: there the corners cut the outer rulings short."""
    plain = [soft(preprocess_bytes(notebook(d, "plain"), 10**8)) for d in range(10)]
    ruled = [soft(preprocess_bytes(notebook(d, paper, tilt), 10**8)) for d in range(10)]
    scores = [similarity(a, b) for a, b in zip(ruled, plain, strict=True)]
    assert min(scores) > 0.6 and np.median(scores) > 0.85, np.round(scores, 3)


def lines_map(rows: list[int], size: int = 120, width: int = 2) -> np.ndarray:
    ink = np.zeros((size, size), np.float32)
    for r in rows:
        ink[r : r + width] = 0.4
    return ink


def test_rulings_go_and_a_stroke_crossing_them_stays():
    ink = lines_map([20, 50, 80, 110])
    ink[10:115, 58:62] = 0.9  # a pen stroke across all four
    out = rulings_removed(ink, 0.06)
    off_stroke = np.ones(ink.shape, bool)
    off_stroke[:, 56:64] = False
    assert out[off_stroke].max() < 0.05  # the rulings are gone
    assert np.array_equal(out[10:115, 58:62], ink[10:115, 58:62])  # the stroke is whole, crossings too


def test_a_faint_stroke_crossing_a_ruling_is_bridged():
    ink = lines_map([20, 50, 80, 110])
    ink[10:115, 58:62] = np.maximum(ink[10:115, 58:62], 0.3)  # as faint as the rulings
    out = rulings_removed(ink, 0.06)
    assert out[10:115, 58:62].min() > 0.25  # interpolated across each ruling, not cut


@pytest.mark.parametrize(
    "rows",
    [
        [5],  # a 7's bar cropped tight
        [5, 100],  # a 2 written like a Z: flat top and bottom
        [5, 30, 100],  # three long strokes, not evenly spaced
    ],
)
def test_long_strokes_that_are_not_a_grid_are_left_alone(rows):
    ink = lines_map(rows, width=8)
    ink[:, 50:58] = 0.9  # and a stem, from edge to edge
    assert rulings_removed(ink, 0.06) is ink


def test_upright_stems_in_a_row_without_ruled_rows_are_writing():
    """A number cropped flush to its ink: the stems of its 1s and 4s run from edge to edge, thin once the
    picture is reduced and about evenly spaced, as squared paper's upright rulings do. Without rows ruled
    across them, and no longer than the writing beside them is tall, they are digits' strokes (they
    went, and "401530" read as 40530)."""
    ink = np.zeros((60, 240), np.float32)
    for x in (30, 90, 150, 210):
        ink[:, x : x + 3] = 0.9  # a 1
        ink[4:56, x + 15 : x + 18] = ink[4:56, x + 40 : x + 43] = 0.9  # a 0 beside it
        ink[4:7, x + 15 : x + 43] = ink[53:56, x + 15 : x + 43] = 0.9
    assert rulings_removed(ink, 0.06) is ink


def test_thick_evenly_spaced_bars_are_not_rulings():
    """Rulings are printed thin; bars as wide as a marker's stroke, even evenly spaced, are writing."""
    ink = lines_map([10, 45, 80], width=10)
    assert rulings_removed(ink, 0.06) is ink


def margin_page(writing_rows: tuple[int, int], line_level: float = 0.4) -> np.ndarray:
    """A 300x400 ink map: a notebook's margin line (2 px, edge to edge) at x = 30, and writing (a
    block as dark as a pen) between ``writing_rows`` to its right."""
    ink = np.zeros((300, 400), np.float32)
    ink[:, 30:32] = line_level
    r0, r1 = writing_rows
    ink[r0:r1, 100:110] = ink[r0:r1, 160:170] = 0.9
    return ink


def test_a_margin_line_far_longer_than_the_writing_is_tall_goes():
    ink = margin_page((120, 170))  # the line is 6 times as long as the writing is tall
    out = rulings_removed(ink, 0.06)
    assert out[:, 25:40].max() < 0.05
    assert np.array_equal(out[:, 90:], ink[:, 90:])  # the writing is untouched


@pytest.mark.parametrize("rows", [(40, 200), (10, 150)])
def test_a_lone_line_about_as_long_as_the_writing_is_tall_stays(rows):
    """A tall 1 beside a digit: the line is not 2.5 times as long as the writing beside it is tall."""
    ink = margin_page(rows)
    assert rulings_removed(ink, 0.06) is ink


def test_a_lone_line_with_nothing_beside_it_stays():
    ink = np.zeros((300, 400), np.float32)
    ink[:, 30:32] = 0.9  # the picture is a 1
    assert rulings_removed(ink, 0.06) is ink


def test_rulings_spaced_a_fraction_of_a_pixel_apart_all_go():
    """10.4 px apart, as on a photo reduced four times: a whole-pixel spacing drifts off after a few."""
    ink = np.zeros((160, 200), np.float32)
    for k in range(15):
        y = int(round(5 + 10.4 * k))
        ink[y : y + 2] = 0.3
    assert rulings_removed(ink, 0.06).max() < 0.05


def test_a_ruling_cut_by_the_pictures_edge_goes():
    ink = lines_map([20, 50, 80, 110], size=111)  # the last one's lower row beyond the picture's edge
    assert rulings_removed(ink, 0.06).max() < 0.05


def test_no_dots_are_left_where_a_margin_line_crosses_the_rulings():
    """Where two lines cross their ink adds up: more than one line's, yet no stroke over them."""
    ink = margin_page((120, 170), line_level=0.3)
    rulings = lines_map([20, 60, 100, 140, 180, 220, 260], size=400)[:300] * 0.35 / 0.4
    ink = ink + rulings - ink * rulings  # printed on the same paper: the crossings darker than either
    out = rulings_removed(ink, 0.06)
    assert out[:, :60].max() < 0.05
