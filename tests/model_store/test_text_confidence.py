"""How sure ``/read`` is of a whole reading (``model_store.text_confidence``)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from model_store.reading import NEVER, WEIGHTS, Candidates, candidates, candidates_drawing, choose, terms
from model_store.segment import read_page
from model_store.text_confidence import (
    CONFIDENCE,
    FEATURES,
    MARGIN_CAP,
    SCORE_CAP,
    reading_features,
    runner_up_margin,
    text_confidence,
)
from testkit.digits import rows_for, write
from training.pen_numbers import digit_strokes, pad_drawing


def two_close_ones() -> tuple[Candidates, list[tuple[int, int]]]:
    """Two 1s written close together: pieces "|" "|", crops (0, 1), (1, 2) and (0, 2)."""
    cands = candidates(read_page(write([digit_strokes(1), digit_strokes(1)], [2.0, 2.25])))
    spans = [s[1:] for s in cands.spans]
    assert set(spans) == {(0, 1), (1, 2), (0, 2)}
    return cands, spans


def answers(spans: list[tuple[int, int]], one: float, pair: float) -> np.ndarray:
    """Each stroke a 1 at ``one``, the pair a 4 at ``pair``; every crop a digit to the score."""
    return rows_for([4 if s == (0, 2) else 1 for s in spans], [pair if s == (0, 2) else one for s in spans])


def test_the_margin_is_to_the_best_reading_of_another_text() -> None:
    cands, spans = two_close_ones()
    rows = answers(spans, one=0.6, pair=0.9)
    score = terms(cands, rows, threshold=-10.0) @ WEIGHTS.vector()
    classes = rows[:, :10].argmax(axis=1)
    k = {s: i for i, s in enumerate(spans)}
    eleven, four = score[k[(0, 1)]] + score[k[(1, 2)]], score[k[(0, 2)]]
    margin = runner_up_margin(cands, score, classes, WEIGHTS.skip)
    # "4" and "11" are the two readings of another text (leaving a stroke out scores less than either).
    assert margin == pytest.approx(abs(four - eleven))
    # A lone 1 on a display, where no piece may be left out: no other reading to fall behind.
    one = candidates(read_page(write([digit_strokes(1)], [2.0])))
    rows = rows_for([1] * len(one.spans), [0.9] * len(one.spans))
    score = terms(one, rows, threshold=-10.0) @ WEIGHTS.vector()
    assert runner_up_margin(one, score, rows[:, :10].argmax(axis=1), NEVER) == MARGIN_CAP


def test_the_features_of_a_reading() -> None:
    cands, spans = two_close_ones()
    rows = answers(spans, one=0.6, pair=0.9)  # every crop's digit score is 0
    chosen = choose(cands, rows, threshold=-10.0)
    f = dict(zip(FEATURES, reading_features(cands, rows, -10.0, chosen), strict=True))
    assert f["digits"] == len(chosen) and f["left_out"] == 0.0 and f["display"] == 0.0
    assert f["least_sure"] == pytest.approx(np.log(rows[chosen, :10].max(axis=1)).min())
    assert f["least_score"] == 10.0  # 0 against a threshold of -10
    left_out = reading_features(cands, rows, -10.0, [spans.index((0, 1))])
    assert dict(zip(FEATURES, left_out, strict=True))["left_out"] == 1.0
    doubted = reading_features(cands, rows, 1.0, chosen)  # under a threshold of 1
    assert dict(zip(FEATURES, doubted, strict=True))["least_score"] == -1.0
    far = reading_features(cands, rows, -100.0, chosen)  # no closer to it than SCORE_CAP counts
    assert dict(zip(FEATURES, far, strict=True))["least_score"] == SCORE_CAP
    display = dataclasses.replace(cands, display=True)
    assert dict(zip(FEATURES, reading_features(display, rows, -10.0, chosen), strict=True))["display"] == 1.0
    # Read as "11", two strokes apart: no digit was cut from a neighbour. Were one cut, not every one;
    # were both, all.
    eleven = [spans.index((0, 1)), spans.index((1, 2))]
    g = dict(zip(FEATURES, reading_features(cands, rows, -10.0, eleven), strict=True))
    assert g["cut"] == 0.0 and g["all_cut"] == 0.0
    for cut_ones, all_cut in ((eleven[:1], 0.0), (eleven, 1.0)):
        features = cands.features.copy()
        features[cut_ones, 3] = 0.8  # ink cut through on the left, in stroke widths
        cut = dataclasses.replace(cands, features=features)
        g = dict(zip(FEATURES, reading_features(cut, rows, -10.0, eleven), strict=True))
        assert g["cut"] == 0.8 and g["all_cut"] == all_cut


def test_a_less_sure_reading_gets_a_lower_confidence() -> None:
    cands, spans = two_close_ones()
    sure = answers(spans, one=0.05, pair=0.999)  # plainly a 4
    torn = answers(spans, one=0.4, pair=0.45)  # a 4, or two 1s, neither sure
    # Every crop's digit score is 0: 20 over this threshold, as a clean digit's is over the shipped ones.
    high = text_confidence(cands, sure, -20.0, choose(cands, sure, -20.0))
    low = text_confidence(cands, torn, -20.0, choose(cands, torn, -20.0))
    assert high is not None and low is not None
    assert 0.0 < low < high < 1.0
    assert high > 0.9 and low < 0.5
    # Fitted with a digit score: a checkpoint without one gets no confidence.
    assert text_confidence(cands, sure, None, choose(cands, sure, None)) is None
    assert len(CONFIDENCE.coefficients) == len(FEATURES)


def test_strokes_that_meet_like_one_shape_are_weighed() -> None:
    """A stem drawn along a bowl, sent as strokes and read as two digits ("01", as an a is), is
    ``strokes_meet``; the same two digits drawn apart, or a picture, are not; it lowers the confidence."""
    # A bowl narrow enough to be no two digits (never cut), and a stem as tall.
    bowl = [(200 + 28 * np.cos(t), 150 + 70 * np.sin(t)) for t in np.linspace(0, 2 * np.pi, 40)]
    drawn = {
        "along": [bowl, [(230.0, 80.0), (230.0, 222.0)]],  # the stem on the bowl's right side
        "apart": [bowl, [(300.0, 80.0), (300.0, 222.0)]],
    }
    meets = {}
    for name, strokes in drawn.items():
        cands = candidates_drawing(pad_drawing(strokes))
        pair = [k for k, (_, start, end) in enumerate(cands.spans) if end - start == 1]  # bowl, stem
        assert len(pair) == 2
        rows = rows_for([0] * len(cands.crops), [0.99] * len(cands.crops))
        f = dict(zip(FEATURES, reading_features(cands, rows, -10.0, pair), strict=True))
        meets[name] = (f["strokes_meet"], text_confidence(cands, rows, -10.0, pair))
    assert meets["along"][0] == 1.0 and meets["apart"][0] == 0.0
    assert meets["along"][1] < meets["apart"][1]
    cands, spans = two_close_ones()  # a picture: never
    rows = answers(spans, one=0.6, pair=0.9)
    chosen = [spans.index((0, 1)), spans.index((1, 2))]
    picture = dict(zip(FEATURES, reading_features(cands, rows, -10.0, chosen), strict=True))
    assert picture["strokes_meet"] == 0.0
    assert CONFIDENCE.coefficients[FEATURES.index("strokes_meet")] < 0


def test_a_drawing_whose_every_digit_is_cut_from_its_strokes_is_weighed() -> None:
    """A V written in one stroke and read as "11" cuts that stroke at its point: every digit of the
    reading was cut out of the strokes (``drawn_all_cut``), which a pen's number seldom is. The same V
    written as two strokes is not cut; as a picture it is cut as touching digits are, not drawn."""
    v = [(200.0, 60.0), (250.0, 220.0), (300.0, 60.0)]
    read = {
        "one stroke": candidates_drawing(pad_drawing([v])),
        "two strokes": candidates_drawing(pad_drawing([v[:2], v[1:]])),
        "picture": candidates(read_page(write([[[(0.0, 0.0), (0.3, 1.0), (0.6, 0.0)]]], [2.0]))),
    }
    seen = {}
    for name, cands in read.items():
        rows = rows_for([1] * len(cands.crops), [0.99] * len(cands.crops))
        pairs = [
            [i, j] for i, (_, a0, a1) in enumerate(cands.spans) for j, (_, b0, b1) in enumerate(cands.spans)
            if a0 == 0 and a1 == b0 and b1 == cands.pieces[0]
        ]  # fmt: skip
        assert pairs, name  # the reader can read it as two digits
        f = dict(zip(FEATURES, reading_features(cands, rows, -10.0, pairs[0]), strict=True))
        seen[name] = (f["all_cut"], f["drawn_all_cut"], text_confidence(cands, rows, -10.0, pairs[0]))
    assert seen["one stroke"][:2] == (1.0, 1.0)
    assert seen["two strokes"][:2] == (0.0, 0.0)
    assert seen["picture"][:2] == (1.0, 0.0)
    assert seen["one stroke"][2] < seen["two strokes"][2]
    assert CONFIDENCE.coefficients[FEATURES.index("drawn_all_cut")] < 0
