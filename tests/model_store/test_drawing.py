"""A number sent as its pen strokes (model_store.drawing): drawn as the page draws it, and read apart
along its strokes where its digits were written into one another."""

from __future__ import annotations

import numpy as np
import pytest

from model_store.decode import NoInk
from model_store.drawing import Drawing, draw
from model_store.reading import candidates_bytes, candidates_drawing
from model_store.segment import page_drawn
from testkit.images import png_bytes
from training.pen_numbers import PAD_HEIGHT, as_sent, digit_strokes, pad_drawing, side_by_side


def written_into(text: str, overlap: float = 0.12) -> list[list[tuple[float, float]]]:
    """``text`` on the wide pad, each digit run ``overlap`` of its height into the one before."""
    digits = [digit_strokes(int(c)) for c in text]
    return side_by_side(digits, [-overlap] * (len(text) - 1), 120.0, 60.0, 160.0, np.random.default_rng(0))


def test_the_default_pen_is_the_pages() -> None:
    """pad.js's uploadPen: 0.15 of the tallest stroke's height, at most the marker (0.075 of the canvas's
    height); the client's own pen when it names one, but at least 0.075 of that height."""
    tall = np.array([[10.0, 20.0], [10.0, 120.0]])
    assert Drawing([tall], 840, 280).pen_width() == pytest.approx(15.0)
    assert Drawing([tall * 3], 840, 280).pen_width() == pytest.approx(0.075 * 280)  # the marker at most
    assert Drawing([tall * 3]).pen_width() == pytest.approx(45.0)  # no canvas: no marker to cap it
    assert Drawing([np.array([[50.0, 50.0]])], 840, 280).pen_width() == 1.0  # a dot: a pixel
    assert Drawing([tall], 840, 280, pen=9.0).pen_width() == 9.0  # the client's own ...
    assert Drawing([tall], 840, 280, pen=2.0).pen_width() == pytest.approx(7.5)  # ... but no hairline


def test_drawn_like_the_picture_the_page_sends() -> None:
    """The strokes' picture has its ink where the page's PNG of the same strokes has it."""
    paths = written_into("47", overlap=-0.3)  # apart
    drawn = draw(pad_drawing(paths))
    assert drawn.scale == 4 and drawn.gray.shape == (70, 210)  # as the PNG is read: reduced 4 times
    assert len(drawn.layers) == 3  # a 4 in two strokes, a 7
    png = as_sent(paths).astype(np.float32) / 255.0  # the page's picture, 840 x 280
    ox, oy = drawn.offset
    h, w = drawn.gray.shape
    ys, xs = np.nonzero(drawn.gray < 0.5)
    px = np.clip((ox + (xs + 0.5) * drawn.scale).astype(int), 0, png.shape[1] - 1)
    py = np.clip((oy + (ys + 0.5) * drawn.scale).astype(int), 0, png.shape[0] - 1)
    assert (png[py, px] < 0.5).mean() > 0.9
    assert (drawn.gray < 0.5).sum() * drawn.scale**2 == pytest.approx((png < 0.5).sum(), rel=0.2)
    assert (ox, oy) == (0, 0) and h * drawn.scale == PAD_HEIGHT and w * drawn.scale == 840


def test_small_writing_is_cut_out_and_boxes_stay_the_canvas() -> None:
    """A number in a corner of a large canvas is drawn round its ink at the canvas's resolution, as a
    picture's small writing is cut out of it; the boxes are the canvas's pixels."""
    strokes = [np.asarray(s) * 0.2 + [2000.0, 1500.0] for s in written_into("35", overlap=-0.3)]
    drawing = Drawing(strokes, 4000, 3000)
    near = [s - [1900.0, 1400.0] for s in strokes]
    assert draw(Drawing(near, 400, 300)).scale == 2  # a small canvas: reduced as its picture would be
    drawn = draw(drawing)
    assert drawn.scale <= 2  # a 32 px tall number cut out, not reduced 16 times with the canvas
    cands = candidates_drawing(drawing)
    points = np.concatenate(strokes)
    for crop in cands.crops:
        x0, y0, x1, y1 = crop.box
        assert points[:, 0].min() - 10 <= x0 < x1 <= points[:, 0].max() + 10
        assert points[:, 1].min() - 10 <= y0 < y1 <= points[:, 1].max() + 10


def test_an_unbounded_canvas_and_ink_off_the_canvas() -> None:
    """No canvas size: paper all round; ink past the canvas's edge is drawn, not cut."""
    strokes = [np.asarray(s) - [200.0, 100.0] for s in written_into("7", overlap=0)]
    for drawing in (Drawing(strokes), Drawing(strokes, 100, 50)):
        drawn = draw(drawing)
        assert (drawn.gray < 0.5).sum() > 100
        assert drawn.offset[0] <= np.concatenate(strokes)[:, 0].min()


def test_no_strokes_is_no_ink() -> None:
    with pytest.raises(NoInk):
        draw(Drawing([], 100, 100))


def test_a_drawing_costs_at_most_max_samples(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A pen travelling 20,000 times corner to corner is sampled MAX_SAMPLES times in all (2 million
    at the hand's step); a hand's writing keeps that step."""
    import model_store.drawing as drawing

    counted: list[int] = []

    def counting(points, step=drawing.STEP):  # type: ignore[no-untyped-def]
        path = smooth(points, step)
        counted.append(len(path))
        return path

    smooth = drawing.smooth_path
    monkeypatch.setattr(drawing, "smooth_path", counting)
    zigzag = np.array([[0.0, 0.0], [1e6, 1e6]] * 10_000)
    draw(Drawing([zigzag]))
    assert sum(counted) <= 1.01 * drawing.MAX_SAMPLES + 2
    hand = Drawing([np.asarray(s, dtype=np.float64) for s in written_into("2026")])
    unchanged = draw(hand).gray
    monkeypatch.setattr(drawing, "MAX_SAMPLES", 10**12)
    assert np.array_equal(draw(hand).gray, unchanged)


def test_digits_written_into_one_another_are_pieces_of_their_own() -> None:
    """A 1 written through a 0 is one blob of ink: as a picture, no candidate is the 1 alone; as strokes,
    the 1 and the 0 are each a candidate, fitted from its own stroke's pixels (the crossing included)."""
    paths = written_into("10", overlap=0.25)
    drawing = pad_drawing(paths)
    page = page_drawn(draw(drawing))
    assert len(page.components) == 1 and len(page.pen) == 2  # one blob, two strokes
    crossing = [np.zeros(page.ink.shape, bool) for _ in page.pen]
    for mask, s in zip(crossing, page.pen, strict=True):
        h, w = s.mask.shape
        mask[s.y0 : s.y0 + h, s.x0 : s.x0 + w] = s.mask
    assert (crossing[0] & crossing[1]).any()  # where they cross, a pixel is each stroke's own

    def widths(cands) -> list[float]:  # each candidate's width, in pad heights
        return sorted((c.box[2] - c.box[0]) / PAD_HEIGHT for c in cands.crops)

    as_strokes = candidates_drawing(drawing)
    spans = {s[1:] for s in as_strokes.spans}
    assert {(0, 1), (1, 2), (0, 2)} <= spans  # the 1, the 0, and both as one
    thin = [c for c in as_strokes.crops if (c.box[2] - c.box[0]) < 0.15 * PAD_HEIGHT]
    assert len(thin) == 1  # the 1, alone, as drawn
    pixels = thin[0].pixels
    assert pixels.max() > 0.5 and (pixels > 0.3).sum(axis=0).max() >= 15  # a whole upright stroke
    as_picture = candidates_bytes(png_bytes(as_sent(paths)), 10**7)
    assert min(widths(as_picture)) > 0.15  # no 1 alone among the picture's alternatives


def test_the_ink_strokes_share_is_measured_in_stroke_widths() -> None:
    """``Candidates.shared``: digits apart share nothing; a 1 crossing a 0 about a stroke width squared
    at each of its two crossings; a stroke run along another as much as they overlap over their length."""
    apart = candidates_drawing(pad_drawing(written_into("10", overlap=-0.3)))
    crossed = candidates_drawing(pad_drawing(written_into("10", overlap=0.25)))
    stem = [(300.0, 80.0), (300.0, 220.0)]  # 140 px: the pen is 21, so some 6.7 stroke widths long
    along = candidates_drawing(pad_drawing([stem, [(x + 4.0, y) for x, y in stem]]))

    def most(cands) -> float:
        n = len(cands.crops)
        return max(cands.shared(i, j) for i in range(n) for j in range(n))

    assert len(apart.crops) >= 2 and most(apart) == 0.0
    assert 1.0 <= most(crossed) <= 3.0  # two crossings
    assert most(along) > 3.0
    assert candidates_bytes(png_bytes(as_sent(written_into("10"))), 10**7).shared(0, 1) == 0.0  # a picture
