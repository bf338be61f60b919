"""A seven-segment display's bars grouped per digit (model_store.displays), and nothing else taken for one."""

from __future__ import annotations

import numpy as np
import pytest

from model_store import segment as segment_module
from model_store.components import euler_number, label_components
from model_store.displays import display_bars
from model_store.marks import spell
from model_store.reading import candidates, choose
from model_store.segment import INK, TooManyDigits, ink_map, page_bytes, read_page
from testkit.displays import dseg_fonts, lit_number
from training.display_digits import BAR_ENDS, Display
from training.display_fonts import display_picture
from training.numbers import make_family


@pytest.mark.parametrize("end", BAR_ENDS)
@pytest.mark.parametrize("slant", [0.0, 0.15])
def test_a_displays_bars_are_grouped_into_its_digits(end: str, slant: float) -> None:
    display = Display(height=100, width=54, thick=10, gap=7, slant=slant, end=end)
    page = read_page(lit_number("2026", display))
    assert [len(line) for line in page.lines] == [4]
    assert len(page.components) == 4  # one mark per digit, the bars of each under one label


def test_without_the_grouping_a_displays_bars_are_not_its_digits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(segment_module, "digits_of_display", lambda *_: None)
    for thick, gap, width in ((10, 7, 54), (8, 6, 50)):
        display = Display(height=100, width=width, thick=thick, gap=gap, slant=0.1, end="pointed")
        try:  # every bar a digit, or a piece of one; the lines of flat bars alone are no writing
            lines = [len(line) for line in read_page(lit_number("2026", display)).lines]
        except TooManyDigits:
            continue
        assert lines != [4]


def test_an_lcds_faint_unlit_bars_are_not_digits() -> None:
    display = Display(height=100, width=54, thick=10, gap=7, slant=0.1, end="bevelled")
    page = read_page(lit_number("1479", display, unlit=235))
    assert [len(line) for line in page.lines] == [4]


@pytest.mark.parametrize("family", ["strokes", "touching", "fonts", "marks", "forms", "cropped"])
def test_handwriting_and_type_are_never_taken_for_a_display(family: str) -> None:
    for img, text in make_family(family, 40, seed=3):
        mask = ink_map(img.astype(np.float32) / 255.0) > INK
        assert display_bars(*label_components(mask)) is None, text


def test_bars_joined_at_their_corners_are_cut_apart_and_grouped() -> None:
    """Square ends and a small gap: a 7's top and right bars are one mark and its lower bar another,
    a 0 two halves; cut apart where they meet, they are grouped as the display's digits again."""
    display = Display(height=80, width=44, thick=7.5, gap=3.4, slant=0.12, end="square")
    gray = lit_number("7770", display)
    mask = ink_map(gray) > INK
    labels, n = label_components(mask)
    assert n == 8 and display_bars(labels, n) is None  # not bars as they are
    assert [len(line) for line in read_page(gray).lines] == [4]


@pytest.mark.parametrize("text", ["2580", "7.04"])
def test_a_display_whose_every_digit_is_one_mark_is_still_a_display(text: str) -> None:
    """No bar stands alone: square ends and no gap join each digit's bars into one mark (a thin face at
    the working size), and a point drawn against its digit joins that digit. Cut apart, they are a
    display's bars again, grouped per digit, and the point (against a 7's standing bar) is read. Left as
    one mark per digit, the pen's rules read them without the point."""
    display = Display(height=80, width=44, thick=7.5, gap=0.0, slant=0.12, end="square")
    gray = lit_number(text, display, touching=True)
    digits = len(text.replace(".", ""))
    assert label_components(ink_map(gray) > INK)[1] == digits  # each digit one mark, its point in it
    page = read_page(gray)
    assert page.display
    assert [len(line) for line in page.lines] == [digits]
    assert [m.char for m in page.marks] == (["."] if "." in text else [])


@pytest.mark.parametrize("text", ["12.5", "12:30", "-42", "-7.25", "10-20", "0.05"])
@pytest.mark.parametrize("slant", [0.0, 0.12])
def test_a_displays_point_colon_and_minus_are_read(text: str, slant: float) -> None:
    """A display's punctuation sits where a display puts it (a clock's colon off the baseline, a minus
    as the middle bar alone): found among the grouped bars and spelled between the right digits.
    Before, the point and the colon were lost ("125", "1230") and a minus was read as a digit."""
    page = read_page(
        lit_number(text, Display(height=100, width=54, thick=10, gap=7, slant=slant, end="pointed"))
    )
    assert page.display
    digits = [c for c in text if c.isdigit()]
    (line,) = page.lines
    assert len(line) == len(digits)
    spelled, kept = spell([(d, (p.x0, p.y0, p.x1, p.y1), 0) for d, p in zip(digits, line, strict=True)],
                          page.marks)  # fmt: skip
    assert spelled == text and len(kept) == len(page.marks)


@pytest.mark.parametrize("face", ["DSEG7Classic-Regular.ttf", "DSEG7ClassicMini-Bold.ttf"])
def test_a_1_just_before_a_digit_is_a_digit_of_its_own(face: str) -> None:
    """A display lights a 1's bars on the right of its cell, close before the next digit's left bars
    (DSEG's faces as the service sees them): the nearer bars are that digit's, one each side at each
    height, and a bar stacked with a 1's bar no digit took is the 1's. With each standing bar going to
    the nearest cell within 0.4 of its width (the rule before), 2 of these 16 had a 1 joined to its
    neighbour."""
    font = next(f for f in dseg_fonts() if f.name == face)
    for text in ["41109", "1015", "2119", "7130", "1618", "31415", "1066", "9110"]:
        page = page_bytes(display_picture(text, np.random.default_rng(3), font, "print", 60), 4_000_000)
        assert page.display and [len(line) for line in page.lines] == [len(text)], text


def test_a_displays_digits_are_read_as_grouped() -> None:
    """No cut through a display's digit (an 8's bars are apart, a cut between them is free) and none
    skipped, however little the digit score thinks of one: each group is read."""
    page = read_page(
        lit_number("808", Display(height=100, width=54, thick=10, gap=7, slant=0.1, end="bevelled"))
    )
    cands = candidates(page)
    assert cands.display and len(cands.crops) == 3
    outputs = np.full((3, 11), 0.01, np.float32)
    outputs[:, 8], outputs[:, 10] = 0.9, [5.0, -50.0, 5.0]  # the middle one no digit to the score
    assert choose(cands, outputs, threshold=0.0) == [0, 1, 2]


@pytest.mark.parametrize("text", ["43.5", "9.9", "10.7", "-8.25"])
def test_a_point_touching_its_digits_bar_is_cut_off_and_read(text: str) -> None:
    """A display puts its point close by its digit's lower corner, and at the working size the two often
    touch: the point juts out beside the bar's lowest rows and is cut off as a mark of its own. Without
    the cut, none of these 16 pictures had its point read (a bar with a bump is no bar)."""
    for slant in (0.0, 0.12):
        for height, width, thick, gap in ((60, 32, 6, 2), (100, 54, 10, 5)):
            display = Display(height, width, thick, gap, slant, "pointed")
            page = read_page(lit_number(text, display, touching=True))
            assert page.display and [len(line) for line in page.lines] == [sum(c.isdigit() for c in text)]
            assert sorted(m.char for m in page.marks) == sorted(c for c in text if not c.isdigit())


def _holes(mask: np.ndarray) -> int:
    """The background's 4-connected pieces that do not reach the picture's edge, by a plain flood fill."""
    open_ = np.pad(~mask, 1, constant_values=True)
    seen = np.zeros_like(open_)
    h, w = open_.shape
    holes = 0
    for start in zip(*np.nonzero(open_), strict=True):
        if seen[start]:
            continue
        seen[start] = True
        stack, edge = [start], False
        while stack:
            y, x = stack.pop()
            edge |= y in (0, h - 1) or x in (0, w - 1)
            for ny, nx in ((y + 1, x), (y - 1, x), (y, x + 1), (y, x - 1)):
                if 0 <= ny < h and 0 <= nx < w and open_[ny, nx] and not seen[ny, nx]:
                    seen[ny, nx] = True
                    stack.append((ny, nx))
        holes += not edge
    return holes


@pytest.mark.parametrize("seed", range(3))
def test_the_euler_number_is_components_less_holes(seed: int) -> None:
    """What lets a pen's digit past the display check without labelling (preprocess._display_joined):
    8-connected components less the holes they enclose, against labelling and a flood fill."""
    rng = np.random.default_rng(seed)
    for _ in range(50):
        mask = rng.random((int(rng.integers(3, 40)), int(rng.integers(3, 40)))) < rng.uniform(0.2, 0.7)
        assert euler_number(mask) == label_components(mask)[1] - _holes(mask)
