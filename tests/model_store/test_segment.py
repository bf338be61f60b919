"""Splitting a picture of a number into digits: the rules (model_store.segment) and the alternatives
the model chooses among (model_store.reading)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from model_store import pieces as pieces_module
from model_store import segment as segment_module
from model_store.components import label_components
from model_store.preprocess import NoInk, ink_to_mnist, to_mnist
from model_store.reading import WEIGHTS, candidates, choose, halves_ahead, shortfall
from model_store.segment import TooManyDigits, read_page, segment
from testkit.digits import HEIGHT, number_cropped_flush, rows_for, similarity, write
from training.numbers import FONT_DIR, make_family
from training.pen_numbers import digit_strokes


def open_four() -> list[list[tuple[float, float]]]:
    """A 4 in two strokes that do not touch: an L and a stem to its right."""
    corner, stem = digit_strokes(4, 1, broken=True)
    return [corner, [(x + 0.08, y) for x, y in stem]]


def components(gray: np.ndarray) -> int:
    return len(read_page(gray).components)


@pytest.mark.parametrize("digit", ["5", "7", "7 crossed", "4"])
def test_broken_strokes_of_one_digit_are_merged(digit: str) -> None:
    strokes = open_four() if digit == "4" else digit_strokes(int(digit[0]), len(digit) > 1, broken=True)
    gray = write([strokes], [2.0])
    assert components(gray) >= 2  # the pen was lifted: the strokes do not touch
    assert len(segment(gray)) == 1


def test_a_number_cropped_flush_to_its_ink_keeps_every_stroke() -> None:
    """Cropped before sending, the strokes cross the border and the border's patches disagree: that is
    ink, not light falling off, and the paper is the border's clean paper, as with a margin round it.
    Taken for light, a surface rose with the strokes and faded them (5 of these 12 lost ink, a 6 alone
    down to 0.40 of its framed self)."""
    rng = np.random.default_rng(5)
    texts = [str(n) for n in rng.integers(0, 10, 6)] + [str(n) for n in rng.integers(10, 1000, 6)]
    for seed, text in enumerate(texts):
        flush = number_cropped_flush(text, seed).astype(np.float32) / 255
        cropped, framed = segment(flush), segment(np.pad(flush, 24, constant_values=1.0))
        assert len(cropped) == len(framed) == len(text)
        for a, b in zip(cropped, framed, strict=True):
            assert similarity(a.pixels, b.pixels) > 0.98, text


def test_separate_digits_are_not_merged_and_come_left_to_right() -> None:
    gray = write([digit_strokes(d) for d in (7, 1, 4, 0)], [0.2, 1.2, 2.0, 3.2])
    crops = segment(gray)
    assert len(crops) == 4
    assert [c.box[0] for c in crops] == sorted(c.box[0] for c in crops)
    assert all(c.pixels.shape == (28, 28) and c.line == 0 for c in crops)


def test_touching_pair_is_split() -> None:
    gray = write([digit_strokes(0), digit_strokes(0)], [2.0, 2.58])  # the second 0 runs into the first
    assert components(gray) == 1
    crops = segment(gray)
    assert len(crops) == 2
    assert crops[0].box[2] <= crops[1].box[2] and crops[0].box[0] < crops[1].box[0]


@pytest.mark.parametrize(("first", "second", "left"), [(6, 0, 0.58), (6, 0, 0.6), (8, 0, 0.6)])
def test_digits_run_together_are_offered_cut_apart(first: int, second: int, left: float) -> None:
    # The second digit's left side runs along the first one's right side, so every column there
    # crosses a long stretch of ink; a seam down the line where the two strokes meet parts them.
    alone = [segment(write([digit_strokes(d)], [1.0]))[0].pixels for d in (first, second)]
    gray = write([digit_strokes(first), digit_strokes(second)], [1.0, 1.0 + left])
    assert components(gray) == 1
    cands = candidates(read_page(gray))
    n = cands.pieces[0]
    lefts = [k for k, (_, start, _) in enumerate(cands.spans) if start == 0]
    rights = {start: k for k, (_, start, end) in enumerate(cands.spans) if end == n}
    readings = [(a, rights[cands.spans[a][2]]) for a in lefts if cands.spans[a][2] in rights]
    best = max(
        min(similarity(cands.crops[a].pixels, alone[0]), similarity(cands.crops[b].pixels, alone[1]))
        for a, b in readings
    )
    assert best > 0.95  # each crop of the best two-digit reading is that digit as if drawn alone


@pytest.mark.parametrize("font", ["DejaVuSerif-Bold.ttf", "DejaVuSans-Bold.ttf"])
def test_a_broad_zero_is_not_read_as_two_ones(font: str) -> None:
    # A seam cuts a broad 0 across its round top and bottom, where its rows of ink are about two
    # stroke widths wide, as if two strokes ran together there. Those few rows are not a band two
    # strokes make, so the cut is charged as crossing ink, and the model's "1", "1" for the halves,
    # as sure as its "0" for the whole, does not outweigh one 0.
    img = Image.new("L", (400, 280), 255)
    ImageDraw.Draw(img).text((100, 20), "0", font=ImageFont.truetype(str(FONT_DIR / font), 220), fill=0)
    cands = candidates(read_page(np.asarray(img) / 255.0))
    whole = (0, cands.pieces[0])
    spans = [s[1:] for s in cands.spans]
    assert cands.pieces[0] >= 2
    rows = rows_for([0 if s == whole else 1 for s in spans], [0.9] * len(spans))
    assert [spans[k] for k in choose(cands, rows, threshold=-10.0)] == [whole]


def test_a_wide_digit_is_not_cut_into_slivers() -> None:
    # Wider than tall, so the rules cut it as if digits touched; the pieces of that cut are measured
    # against the digit's height, not their own trimmed rows (a 7's bar alone is a flat sliver).
    wide = [[(2.0 * x, y) for x, y in stroke] for stroke in digit_strokes(7)]
    parts = read_page(write([wide], [1.0])).lines[0]
    assert len(parts) <= 2


def test_lines_are_read_top_to_bottom() -> None:
    top = write([digit_strokes(d) for d in (3, 8)], [1.0, 2.0], top=20.0, size=(840, 560))
    bottom = write([digit_strokes(d) for d in (2, 6, 9)], [0.5, 1.5, 2.5], top=320.0, size=(840, 560))
    crops = segment(np.minimum(top, bottom))
    assert [c.line for c in crops] == [0, 0, 1, 1, 1]
    assert [c.box[0] for c in crops[2:]] == sorted(c.box[0] for c in crops[2:])


def test_too_many_marks_are_refused() -> None:
    dots = np.zeros((200, 600))
    for y in range(10, 190, 30):
        for x in range(10, 590, 30):
            dots[y : y + 10, x : x + 10] = 1.0  # 120 separate marks
    with pytest.raises(TooManyDigits):
        segment(dots, max_digits=8)
    with pytest.raises(TooManyDigits):
        segment(write([digit_strokes(d) for d in (1, 2, 3, 4)], [0.2, 1.2, 2.2, 3.2]), max_digits=3)


def test_a_line_of_nothing_but_flat_marks_is_no_writing() -> None:
    """The end of a ruling that the picture's edge cut off, far below the number: cut up as touching
    digits, a flat mark of a few rows made dozens of them (and the picture was refused)."""
    gray = write([digit_strokes(d) for d in (3, 8)], [1.0, 2.0], size=(840, 400))
    for x0 in (40, 400):
        gray[394:397, x0 : x0 + 150] = 0.0  # two dashes, 3 px tall, 150 px long
    crops = segment(gray, max_digits=8)
    assert len(crops) == 2 and {c.line for c in crops} == {0}


def circled(gray: np.ndarray, box: tuple[float, float, float, float], room: float) -> np.ndarray:
    """``gray`` with a pen's ellipse drawn round ``box`` (x0, y0, x1, y1), ``room`` times its size."""
    x0, y0, x1, y1 = box
    cx, cy, rx, ry = (x0 + x1) / 2, (y0 + y1) / 2, room * (x1 - x0) / 2, room * (y1 - y0) / 2
    page = Image.fromarray((gray * 255).astype(np.uint8))
    ImageDraw.Draw(page).ellipse([cx - rx, cy - ry, cx + rx, cy + ry], outline=0, width=8)
    return np.asarray(page, np.float32) / 255.0


def test_a_loop_drawn_round_the_number_is_no_digit() -> None:
    """A circled answer: the loop holds the digits and is mostly empty inside (it read as 0s before)."""
    gray = write([digit_strokes(d) for d in (2, 6)], [2.0, 3.0], top=120.0, size=(840, 480))
    crops = segment(circled(gray, (320.0, 120.0, 576.0, 280.0), room=1.6))
    assert len(crops) == 2
    assert all(300 <= c.box[0] and c.box[2] <= 600 for c in crops)


def test_a_zero_with_a_stroke_inside_it_is_still_a_digit() -> None:
    """A slashed 0's slash, drawn apart, is about as tall as the 0, and the 0's stroke fills much of its
    box: it is no loop drawn round writing."""
    gray = write([digit_strokes(0)], [2.0], top=60.0)
    page = Image.fromarray((gray * 255).astype(np.uint8))
    x0, x1 = 2.0 * HEIGHT, 2.6 * HEIGHT
    ImageDraw.Draw(page).line(
        [(x0 + 0.45 * HEIGHT, 70.0), (x0 + 0.15 * HEIGHT, 60.0 + 0.9 * HEIGHT)], fill=0, width=6
    )
    crops = segment(np.asarray(page, np.float32) / 255.0)
    assert len(crops) == 1 and crops[0].box[0] <= x0 + 10 and crops[0].box[2] >= x1 - 10


def test_empty_picture_has_no_ink() -> None:
    with pytest.raises(NoInk):
        segment(np.ones((280, 840)))


def test_a_short_stroke_beside_a_digit_is_read_with_it() -> None:
    # A 1 beside an open 4 drawn in two strokes: "1", "L", "|". Is "L|" one 4, or "L" and "|" two digits?
    gray = write([digit_strokes(1), open_four()], [1.0, 2.0])
    cands = candidates(read_page(gray))
    spans = [s[1:] for s in cands.spans]
    assert cands.pieces == [3] and {(0, 1), (1, 2), (2, 3), (1, 3)} <= set(spans)

    def read(confident: dict[tuple[int, int], int]) -> list[tuple[int, int]]:
        labels = [confident.get(s, 1) for s in spans]
        rows = rows_for(labels, [0.9 if s in confident else 0.2 for s in spans])
        return [spans[k] for k in choose(cands, rows, threshold=-10.0)]

    assert read({(0, 1): 1, (1, 3): 4}) == [(0, 1), (1, 3)]  # the model sees a 4 in "L|"
    # Even where the model is surer of "L" and "|" apart, the short "L" is an unlikely digit alone.
    assert read({(0, 1): 1, (1, 2): 6, (2, 3): 1}) == [(0, 1), (1, 3)]


def test_the_model_chooses_between_one_digit_and_two() -> None:
    gray = write([digit_strokes(1), digit_strokes(1)], [2.0, 2.25])  # two strokes, close together
    cands = candidates(read_page(gray))
    spans = [s[1:] for s in cands.spans]
    assert cands.pieces == [2] and set(spans) == {(0, 1), (1, 2), (0, 2)}
    apart = rows_for([1] * 3, [0.9 if s != (0, 2) else 0.3 for s in spans])
    together = rows_for(
        [1 if s != (0, 2) else 4 for s in spans], [0.5 if s != (0, 2) else 0.9 for s in spans]
    )
    assert [spans[k] for k in choose(cands, apart)] == [(0, 1), (1, 2)]  # "11"
    assert [spans[k] for k in choose(cands, together)] == [(0, 2)]  # a 4 with a short arm


def test_a_crop_the_model_calls_no_digit_is_avoided() -> None:
    gray = write([digit_strokes(0), digit_strokes(0)], [2.0, 2.58])
    cands = candidates(read_page(gray))
    halves = [k for k, made_by_rules in enumerate(cands.features[:, 0]) if made_by_rules]
    assert len(halves) == 2 and len(cands.crops) > 2  # the rules' cut, and other places to cut
    rows = rows_for([0] * len(cands.crops), [0.5] * len(cands.crops))
    rows[halves, 0] = 0.95  # the model is sure of the rules' halves ...
    assert choose(cands, rows, threshold=-10.0) == halves
    rows[halves, 10] = -100.0  # ... until its digit score says they are no digits
    assert choose(cands, rows, threshold=-10.0) != halves


def test_two_digits_fitted_as_one_lose_to_the_pair_when_the_digit_score_doubts_them() -> None:
    gray = write([digit_strokes(1), digit_strokes(1)], [2.0, 2.25])
    cands = candidates(read_page(gray))
    spans = [s[1:] for s in cands.spans]
    merged = spans.index((0, 2))
    # The model reads the pair as a 4 as surely as each stroke as a 1: only the digit score tells.
    rows = rows_for([4 if k == merged else 1 for k in range(len(spans))], [0.95] * len(spans), score=20.0)
    assert [spans[k] for k in choose(cands, rows, threshold=0.0)] == [(0, 2)]  # both look typical
    rows[merged, 10] = 3.0  # still a digit (over the threshold), but a far less typical one
    assert [spans[k] for k in choose(cands, rows, threshold=0.0)] == [(0, 1), (1, 2)]
    atypical_alone = dataclasses.replace(WEIGHTS, split=0.0)  # far less typical: this term suffices
    assert [spans[k] for k in choose(cands, rows, threshold=0.0, weights=atypical_alone)] == [(0, 1), (1, 2)]
    neither = dataclasses.replace(WEIGHTS, atypical=0.0, split=0.0)
    assert [spans[k] for k in choose(cands, rows, threshold=0.0, weights=neither)] == [(0, 2)]


def test_a_digit_with_a_neighbour_run_into_it_loses_to_the_pair_when_each_alone_is_more_digit_like() -> None:
    gray = write([digit_strokes(0), digit_strokes(1)], [2.0, 2.3])  # a 1 run into the 0's side
    cands = candidates(read_page(gray))
    spans = [s[1:] for s in cands.spans]
    assert spans == [(0, 1), (0, 2), (1, 2)]
    rows = rows_for([0, 0, 1], [0.99] * 3, score=20.0)  # the pair reads "0" as surely as the 0 alone ...
    rows[1, 10] = 10.0  # ... and is a digit to the score, if a less typical one than either alone
    assert [spans[k] for k in choose(cands, rows, threshold=0.0)] == [(0, 1), (1, 2)]
    no_term = dataclasses.replace(WEIGHTS, split=0.0)
    assert [spans[k] for k in choose(cands, rows, threshold=0.0, weights=no_term)] == [(0, 2)]


def test_halves_ahead_asks_both_halves_to_be_digits_more_typical_than_the_whole() -> None:
    spans = [(0, 0, 1), (0, 1, 2), (0, 0, 2), (0, 2, 3), (0, 1, 3),  # line 0
             (1, 0, 1), (1, 1, 2), (1, 0, 2),  # line 1: a 4 in two strokes, neither a digit alone
             (2, 0, 1), (2, 1, 2), (2, 0, 2)]  # line 2: the whole more typical than its halves  # fmt: skip
    score = np.array([10.0, 8.0, 4.0, -2.0, 5.0, -1.0, 3.0, 6.0, 5.0, 5.0, 9.0])
    # (0, 0, 2): its weaker half (8) is 4 over it, of line 0's margin of 10 over the threshold (0).
    expected = [0.0, 0.0, 0.4, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    assert halves_ahead(score, 0.0, spans, np.array([s[0] for s in spans])) == pytest.approx(expected)


def test_shortfall_is_measured_against_each_lines_best_above_the_threshold() -> None:
    lines = np.array([0, 0, 0, 1, 1, 2])
    score = np.array([10.0, 6.0, -3.0, 4.0, 2.5, -2.0])
    # line 0: the best, 60% of its margin over the threshold (1.0), under it; line 1 on its own
    # scale; line 2 has nothing over the threshold, so nothing stands out.
    expected = [0.0, 1 - 5 / 9, 1.0, 0.0, 0.5, 0.0]
    assert shortfall(score, 1.0, lines) == pytest.approx(expected)


@pytest.mark.parametrize("digit", [0, 2, 7])
def test_a_broad_digit_cut_at_many_columns_is_still_one_candidate(
    digit: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Wider than tall: the rules cut it, and the reading cuts its stroke again at every thin place.
    # The whole stroke stays an alternative, measured against the digit's own height.
    monkeypatch.setattr(pieces_module, "MAX_RUN", 3)  # fewer than the pieces it is cut into
    broad = [[(2.1 * x, y) for x, y in stroke] for stroke in digit_strokes(digit)]
    cands = candidates(read_page(write([broad], [1.0])))
    assert cands.pieces[0] > pieces_module.MAX_RUN  # more pieces than a run of neighbours may join
    whole = [k for k, (_, start, end) in enumerate(cands.spans) if (start, end) == (0, cands.pieces[0])]
    assert len(whole) == 1
    assert cands.features[whole[0], 2] == pytest.approx(1.0, abs=0.05)  # as tall as its line


def test_alternatives_beyond_one_batch_fall_back_to_the_rules() -> None:
    gray = write([digit_strokes(d, broken=True) for d in (5, 7, 4)], [0.5, 1.5, 2.5])
    page = read_page(gray)
    cands = candidates(page, max_crops=3)
    assert len(cands.crops) == 3 and choose(cands, None) == [0, 1, 2]
    assert len(candidates(page).crops) > 3


@pytest.mark.parametrize("family", ["strokes", "fonts"])
def test_crops_are_fitted_as_to_mnist_fits_them(family: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The reading fits its crops with ``ink_to_mnist``, which skips the polarity and paper steps: on a
    crop of the ink map (paper at 0, a zero margin) they have nothing to do. (They did something on a
    few crops crowded with ink, touching digits cut apart: a paper surface fitted there took ink away.)"""
    crops: list[np.ndarray] = []

    def fit(crop: np.ndarray) -> np.ndarray:
        crops.append(crop)
        return ink_to_mnist(crop)

    monkeypatch.setattr(segment_module, "ink_to_mnist", fit)
    for image, _ in make_family(family, 4, seed=5):
        candidates(read_page(image / 255.0))
    assert len(crops) > 40
    for crop in crops:
        try:
            expected = to_mnist(crop)
        except NoInk:
            with pytest.raises(NoInk):
                ink_to_mnist(crop)
            continue
        np.testing.assert_array_equal(ink_to_mnist(crop), expected)


def test_a_dash_is_not_cut_up_as_touching_digits() -> None:
    # An equals sign's bars are wider than tall, like touching digits; cut up, their slivers made the
    # line's height and the whole line read as 1s.
    equals = [[(0.0, 0.4), (0.5, 0.4)], [(0.0, 0.62), (0.5, 0.62)]]
    page = read_page(write([equals, digit_strokes(7)], [0.3, 1.2]))
    (line,) = page.lines
    assert len(line) == 3  # each bar whole, and the 7
    seven = max(line, key=lambda p: p.height)
    assert pieces_module.line_height(page, line) == seven.height


@pytest.mark.parametrize("turn", [None, 6])  # 6: the camera held sideways, "rotate 90 CW to display"
def test_boxes_of_a_large_jpeg_are_in_its_own_pixels(turn: int | None) -> None:
    """A JPEG is decoded at a reduced scale; the boxes are still the uploaded picture's pixels, as a
    PNG of the same picture gives them, the orientation tag applied."""
    from model_store.segment import page_bytes
    from testkit.images import png_bytes
    from training.pen_numbers import stroke_number

    page = Image.fromarray(255 - stroke_number("2026", np.random.default_rng(0))).resize((2400, 800))
    exif = Image.Exif()
    stored = page
    if turn:
        exif[0x0112] = turn
        stored = page.transpose(Image.Transpose.ROTATE_90)  # what the camera stored
    as_png = page_bytes(png_bytes(page), 10**8)
    as_jpeg = page_bytes(png_bytes(stored, fmt="JPEG", quality=92, exif=exif.tobytes()), 10**8)
    want = [as_png.box(line) for line in as_png.lines]
    got = [as_jpeg.box(line) for line in as_jpeg.lines]
    assert len(got) == len(want) == 1
    assert np.abs(np.subtract(got, want)).max() < 0.02 * 2400, (got, want)


def test_a_small_number_on_a_whole_page_scan_is_cut_out_and_boxed_where_it_is_written() -> None:
    """ "2026" 1 cm tall on an A4 page at 300 dpi: 8 px tall in the reduced copy, it is cut out of the
    page anew; its four digits are found, boxed in the page's own pixels."""
    from model_store.segment import page_bytes
    from testkit.images import png_bytes
    from training.pen_numbers import stroke_number

    number = Image.fromarray(stroke_number("2026", np.random.default_rng(0))).resize((510, 170))
    page = Image.new("L", (2480, 3508), 250)
    page.paste(number, (1300, 2400))
    found = page_bytes(png_bytes(page), 10**8)
    assert [len(line) for line in found.lines] == [4]
    x0, y0, x1, y1 = found.box(found.lines[0])
    assert 1300 <= x0 < x1 <= 1810 and 2400 <= y0 < y1 <= 2570, (x0, y0, x1, y1)
    alone = page_bytes(png_bytes(number), 10**8)  # the same number on a picture of its own size
    pairs = zip(found.lines[0], alone.lines[0], strict=True)
    scores = [similarity(found.fit([a]), alone.fit([b])) for a, b in pairs]
    assert min(scores) > 0.9, np.round(scores, 3)  # fitted from the 8 px copy: 0.81-0.88


def test_an_edge_much_fainter_than_the_number_is_no_digit() -> None:
    """The edge of a plate the sheet search missed, or the shadow along it, as the paper's levelling
    leaves it: a line as tall as the digits, far lighter than their ink. Kept, it read as a 1 at the
    number's end."""
    gray = write([digit_strokes(6), digit_strokes(2)], [0.4, 1.4])
    gray[50:230, 380:386] = 0.75  # beyond the 2 (x 224-320), a quarter of the digits' contrast
    ink = segment_module.ink_map(gray)
    assert label_components(ink > segment_module.INK)[1] == 3  # the edge is ink to the rules' first look
    assert len(segment(gray)) == 2


@pytest.mark.parametrize("lighter", [1.0, 0.6])
def test_a_number_written_faintly_keeps_every_digit(lighter: float) -> None:
    """Faint ink throughout (a hard pencil), or one digit lighter than the others (the pen pressed less):
    every digit is still read. Only what is far lighter than the writing is dropped."""
    gray = write([digit_strokes(d) for d in (3, 1, 8)], [0.2, 1.2, 2.2])
    faint = 1.0 - 0.3 * (1.0 - gray)
    faint[:, 330:] = 1.0 - lighter * 0.3 * (1.0 - gray[:, 330:])  # the 8 (x 352-448) lighter still
    assert len(segment(faint)) == 3
