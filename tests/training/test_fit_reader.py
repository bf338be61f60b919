"""``fit-reader``: the perceptron that fits how ``model_store.reading.choose`` weighs a reading."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from model_store.reading import CLASS_WIDTH, TERMS, WEIGHTS, Candidates, Weights, candidates, terms
from model_store.segment import read_page
from testkit.digits import rows_for, write
from training.fit_reader import LINE_SEARCH, START, Example, class_widths, fit, line_search, spelling_path
from training.pen_numbers import digit_strokes


def two_close_ones() -> tuple[Candidates, list[tuple[int, int]]]:
    """Two 1s written close together: pieces "|" "|", crops (0, 1), (1, 2) and (0, 2)."""
    cands = candidates(read_page(write([digit_strokes(1), digit_strokes(1)], [2.0, 2.25])))
    spans = [s[1:] for s in cands.spans]
    assert set(spans) == {(0, 1), (1, 2), (0, 2)}
    return cands, spans


def example(cands: Candidates, spans: list[tuple[int, int]], text: str) -> Example:
    # The model is unsure of each stroke alone and sure the pair is a 4 with a short arm.
    rows = rows_for([4 if s == (0, 2) else 1 for s in spans], [0.9 if s == (0, 2) else 0.55 for s in spans])
    return Example(cands, terms(cands, rows, threshold=-10.0), rows[:, :10].argmax(axis=1), text, "test")


def test_the_fit_learns_a_reading_the_start_weights_miss() -> None:
    cands, spans = two_close_ones()
    ex = example(cands, spans, "11")
    assert not ex.spells(ex.reading(START.vector(), START.skip))  # the start weights read "4"
    fitted = fit([ex], START, epochs=20, lr=0.5)
    assert ex.spells(ex.reading(fitted.vector(), fitted.skip))
    # The scale and the skip stay; every term but the per-digit one stays a penalty or a bonus.
    assert (fitted.confidence, fitted.skip) == (START.confidence, START.skip)
    assert all(getattr(fitted, t) >= 0 for t in TERMS if t != "per_digit")


def test_a_picture_no_reading_spells_teaches_nothing() -> None:
    cands, spans = two_close_ones()
    ex = example(cands, spans, "7")  # no crop is read as a 7
    assert spelling_path(ex, ex.terms @ WEIGHTS.vector(), WEIGHTS.skip) is None
    np.testing.assert_allclose(fit([ex], START, epochs=5, lr=0.5).vector(), START.vector())


def test_the_spelling_path_is_the_best_reading_that_spells_the_number() -> None:
    cands, spans = two_close_ones()
    ex = example(cands, spans, "11")
    score = ex.terms @ WEIGHTS.vector()
    assert [spans[k] for k in spelling_path(ex, score, WEIGHTS.skip) or []] == [(0, 1), (1, 2)]
    four = dataclasses.replace(ex, text="4")
    assert [spans[k] for k in spelling_path(four, score, WEIGHTS.skip) or []] == [(0, 2)]
    # Leaving a stroke out spells "1" too, at the cost of a skip: the better of those two readings.
    one = dataclasses.replace(ex, text="1")
    left, right = spans.index((0, 1)), spans.index((1, 2))
    score[left], score[right] = -1.0, -2.0
    assert spelling_path(one, score, WEIGHTS.skip) == [left]
    score[left], score[right] = -2.0, -1.0
    assert spelling_path(one, score, WEIGHTS.skip) == [right]


def test_a_line_search_moves_its_term_alone_to_the_weight_that_reads_best() -> None:
    cands, spans = two_close_ones()
    ex = example(cands, spans, "11")
    shipped = dataclasses.replace(WEIGHTS, per_digit=0.0, unlike=1.0)  # reads "4": each 1 is unsure

    def spells(w: Weights) -> bool:
        return ex.spells(ex.reading(w.vector(), w.skip))

    assert not spells(shipped)
    # Every crop is a digit to the score: every weight of `unlike` reads the same; the smallest is kept.
    assert line_search([ex], shipped, "unlike") == dataclasses.replace(shipped, unlike=0.0)
    fitted = line_search([ex], shipped, "per_digit")  # a reward per digit read: the pair loses
    assert spells(fitted) and fitted == dataclasses.replace(shipped, per_digit=fitted.per_digit)
    reading = [v for v in LINE_SEARCH if spells(dataclasses.replace(shipped, per_digit=v))]
    assert fitted.per_digit == min(reading) and reading != list(LINE_SEARCH)


def test_class_widths_are_mnists(mnist_test) -> None:  # type: ignore[no-untyped-def]
    images, labels = mnist_test
    widths = class_widths(images[:, 0].numpy(), labels.numpy())
    # The constant was measured on the training digits; the test digits agree closely.
    assert np.allclose(widths, CLASS_WIDTH, atol=0.06)
    assert widths[1] == pytest.approx(min(widths)) and widths[1] < 0.5  # a 1 is the narrowest
