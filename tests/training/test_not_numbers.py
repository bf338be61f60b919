"""Pictures sent to ``/read`` that are not numbers (``training.not_numbers``) and the pen's letters they
include (``training.pen_letters``)."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from training.not_numbers import DRAWN, FAMILIES, make_not_numbers, pen_drawings
from training.outliers import generate_outliers
from training.pen_letters import LETTER_STROKES, LETTERS, random_word, word_paths


def ink(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("L")) < 128


@pytest.mark.parametrize("family", FAMILIES)
def test_each_family_is_seeded_and_has_ink(family: str) -> None:
    pictures = make_not_numbers(family, 4, seed=2)
    assert pictures == make_not_numbers(family, 4, seed=2)
    assert pictures != make_not_numbers(family, 4, seed=3)
    if family != "noise":  # noise may be light or dark all over
        assert all(ink(p).any() for p in pictures)


def test_the_outlier_families_are_generate_outliers_own_but_the_numbers() -> None:
    made = generate_outliers(3, seed=4)
    for family in FAMILIES[: -len(DRAWN) - 1]:  # all but words and those written with the pen
        assert make_not_numbers(family, 3, seed=4) == [o.png for o in made if o.family == family]
    assert "multi_digit" not in FAMILIES  # several digits side by side are a number to /read
    with pytest.raises(ValueError, match="choose from"):
        make_not_numbers("multi_digit", 1)


@pytest.mark.parametrize("family", DRAWN)
def test_pen_writing_sent_as_strokes_is_the_writing_in_its_pictures(family: str) -> None:
    drawings = pen_drawings(family, 5, seed=1)
    pictures = make_not_numbers(family, 5, seed=1)
    for drawing, picture in zip(drawings, pictures, strict=True):
        assert drawing.width == 840 and drawing.height == 280  # the wide pad
        x0, y0 = np.concatenate(drawing.strokes).min(axis=0)
        x1, y1 = np.concatenate(drawing.strokes).max(axis=0)
        rows, cols = np.nonzero(ink(picture))
        pen = drawing.pen_width()
        assert abs(cols.min() - x0) < pen and abs(cols.max() - x1) < pen
        assert abs(rows.min() - y0) < pen and abs(rows.max() - y1) < pen


def test_the_pen_letters_leave_out_those_a_reader_takes_for_digits() -> None:
    assert not set(LETTERS) & set("IlOoDQZzSsbGgqB")
    for ch, strokes in LETTER_STROKES.items():
        points = np.concatenate([np.asarray(s) for s in strokes])
        assert points[:, 1].min() >= -0.01 and points[:, 1].max() <= 1.36, ch  # a descender at most
        small = ch.islower() and ch not in "dfhkt"  # no ascender: from the x-height down
        assert (points[:, 1].min() > 0.4) == small, ch
    rng = np.random.default_rng(0)
    words = [random_word(rng) for _ in range(200)]
    assert all(1 <= len(w) <= 6 and set(w) <= set(LETTERS) for w in words)
    paths = word_paths("hex", np.random.default_rng(0))
    assert len(paths) == sum(len(LETTER_STROKES[c]) for c in "hex")


def test_lone_letters_are_one_letter_each() -> None:
    drawings = pen_drawings("lone_letters", 60, seed=0)
    most = max(len(strokes) for strokes in LETTER_STROKES.values())
    assert all(1 <= len(d.strokes) <= most for d in drawings)  # a word of several letters has more
    assert len({len(d.strokes) for d in drawings}) > 1  # and not one letter over and over
    with pytest.raises(ValueError, match="not written with the pen"):
        pen_drawings("words", 1)
