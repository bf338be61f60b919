"""training.drawn draws digits as the page sends them: the same pens as app/static/pad.js."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from training import drawn
from training.drawn import MIN_PEN_FRACTION, STROKE_FRACTION, render_strokes, upload_pen

PAD_JS = Path(__file__).resolve().parents[2] / "app" / "static" / "pad.js"


@pytest.mark.parametrize("name", ["STROKE_FRACTION", "PEN_PER_HEIGHT", "MIN_PEN_FRACTION"])
def test_the_pens_are_the_pages(name):
    found = re.search(rf"^const {name} = ([0-9.]+);", PAD_JS.read_text(), re.MULTILINE)
    assert found, f"pad.js no longer defines {name}"
    assert float(found.group(1)) == getattr(drawn, name)


def test_large_writing_is_sent_with_the_marker_small_writing_with_a_finer_pen():
    assert upload_pen([[(0.5, 0.1), (0.5, 0.8)]]) == STROKE_FRACTION
    assert upload_pen([[(0.5, 0.1), (0.5, 0.3)], [(0.4, 0.2), (0.6, 0.2)]]) == pytest.approx(0.15 * 0.2)
    assert upload_pen([[(0.2, 0.5), (0.8, 0.51)]]) == MIN_PEN_FRACTION  # a dash: never a hairline
    two_lines = [[(0.2, 0.1), (0.2, 0.3)], [(0.4, 0.1), (0.4, 0.3)], [(0.2, 0.5), (0.2, 0.7)]]
    assert upload_pen(two_lines) == pytest.approx(0.15 * 0.2)  # a digit's height, not the two lines'
    assert upload_pen([[(10.0, 28.0), (10.0, 84.0)]], unit=280) == pytest.approx(0.15 * 0.2)  # pixels


def _ink_width(img) -> float:
    """Dark pixels per row of a vertical bar: its width in pixels."""
    dark = np.asarray(img) < 128
    rows = dark.any(axis=1)
    return float(dark[rows].sum(axis=1)[5:-5].mean())  # away from the round caps


def test_a_small_digit_is_drawn_finer_than_the_pad_shows_it():
    bar = lambda top, bottom: [[(0.5, top), (0.5, bottom)]]  # noqa: E731
    assert _ink_width(render_strokes(bar(0.1, 0.9))) == pytest.approx(0.075 * 280, abs=1.5)
    assert _ink_width(render_strokes(bar(0.4, 0.6))) == pytest.approx(0.15 * 0.2 * 280, abs=1.5)
    assert _ink_width(render_strokes(bar(0.4, 0.6), stroke_fraction=0.075)) == pytest.approx(21, abs=1.5)
