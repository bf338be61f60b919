"""A seven-segment display's bars grouped per digit (model_store.displays), and nothing else taken for one."""

from __future__ import annotations

import numpy as np
import pytest

from model_store import segment as segment_module
from model_store.components import label_components
from model_store.displays import display_bars
from model_store.segment import INK, TooManyDigits, ink_map, read_page
from testkit.displays import lit_number
from training.display_digits import BAR_ENDS, Display
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
    with pytest.raises(TooManyDigits):  # every bar a digit, or a piece of one
        read_page(
            lit_number("2026", Display(height=100, width=54, thick=10, gap=7, slant=0.1, end="pointed"))
        )
    thin = lit_number("2026", Display(height=100, width=50, thick=8, gap=6, slant=0.1, end="pointed"))
    assert [len(line) for line in read_page(thin).lines] != [4]


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
