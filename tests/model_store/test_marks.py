"""Punctuation between a number's digits (model_store.marks): found by shape and place, kept out of
the digits, and spelled into the reading."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from model_store.decode import to_gray
from model_store.marks import Mark, spell
from model_store.segment import read_page
from testkit.digits import HEIGHT, write
from training.numbers import make_family
from training.pen_numbers import digit_strokes, draw_strokes

Stroke = list[tuple[float, float]]
DOT: list[Stroke] = [[(0.0, 0.97), (0.005, 0.975)]]  # a tap of the pen on the baseline
COMMA: list[Stroke] = [[(0.06, 0.9), (0.0, 1.2)]]  # from the baseline down
COLON: list[Stroke] = [[(0.0, 0.4), (0.005, 0.405)], [(0.0, 0.97), (0.005, 0.975)]]
MINUS: list[Stroke] = [[(0.0, 0.5), (0.4, 0.5)]]
LOW_DOT: list[Stroke] = [[(0.0, 1.03), (0.005, 1.035)]]  # a point a little under the baseline
HIGH_COLON: list[Stroke] = [[(0.0, 0.3), (0.005, 0.305)], [(0.0, 0.7), (0.005, 0.705)]]  # as a clock's
GLYPHS = {".": DOT, ",": COMMA, ":": COLON, "-": MINUS, "_": LOW_DOT, ";": HIGH_COLON}
AS_READ = {"_": ".", ";": ":"}


def written(text: str) -> np.ndarray:
    """``text`` written left to right with the pen, each glyph apart from its neighbours."""
    glyphs, lefts, x = [], [], 0.3
    for c in text:
        strokes = digit_strokes(int(c)) if c.isdigit() else GLYPHS[c]
        glyphs.append(strokes)
        lefts.append(x)
        x += max(px for s in strokes for px, _ in s) + (0.35 if c.isdigit() else 0.3)
    return write(glyphs, lefts, size=(max(840, int((x + 0.3) * HEIGHT)), 280))


@pytest.mark.parametrize("text", ["12.5", "3,5", "12:30", "-42", "10-20", "1,000.25", "-0.5", "1_5", "12;30"])
def test_marks_between_digits_are_found_in_order(text: str) -> None:
    page = read_page(written(text))
    marks = sorted(page.marks, key=lambda m: m.x)
    assert [m.char for m in marks] == [AS_READ.get(c, c) for c in text if not c.isdigit()]
    assert all(m.line == 0 for m in marks)
    # The digits are read without them: one rule-based digit per digit, none holding a mark's ink.
    digits = page.lines[0]
    assert len(digits) == sum(c.isdigit() for c in text)
    for mark in marks:
        assert all(d.x1 <= mark.box[0] or d.x0 >= mark.box[2] for d in digits)


def test_a_minus_beside_a_digit_is_not_one_of_its_strokes() -> None:
    page = read_page(written("-7"))
    assert [m.char for m in page.marks] == ["-"]
    (seven,) = page.lines[0]
    assert seven.x0 >= page.marks[0].box[2]


@pytest.mark.parametrize(
    "case",
    ["full stop after the number", "dust thinner than the pen", "a speck smaller than the pen",
     "a dash far before the number",
     "an equals sign", "a dot over a digit's columns"],
)  # fmt: skip
def test_what_is_no_mark(case: str) -> None:
    one, two = digit_strokes(1), digit_strokes(2)
    if case == "full stop after the number":
        gray = write([one, two, DOT], [0.3, 1.0, 1.9])
    elif case == "dust thinner than the pen":
        gray = write([one, two], [0.3, 1.2])
        y, x = int(60 + 0.97 * HEIGHT), int(0.95 * HEIGHT)
        gray[y : y + 3, x : x + 3] = 0.0  # a 3-px speck in the gap, on the baseline
    elif case == "a speck smaller than the pen":  # small writing (MNIST's size): a 2x4 px fragment
        strokes = [[(12 + 40 * x, 10 + 40 * y) for x, y in s] for s in one]
        strokes += [[(40 + 40 * x, 10 + 40 * y) for x, y in s] for s in two]
        gray = draw_strokes(strokes, (90, 60), 4.0) / 255.0
        gray[46:50, 33:35] = 0.0
    elif case == "a dash far before the number":
        gray = write([MINUS, one, two], [0.3, 2.2, 2.9])
    elif case == "an equals sign":
        equals = [[(0.0, 0.4), (0.4, 0.4)], [(0.0, 0.62), (0.4, 0.62)]]
        gray = write([equals, one, two], [0.3, 1.0, 1.7])
    else:  # under a 2's base, between the 1 and the 3: a stroke of the 2, not a decimal point
        dot = [[(0.3, 1.1), (0.305, 1.105)]]
        gray = write([one, two, digit_strokes(3), dot], [0.3, 1.0, 1.9, 1.0])
    assert read_page(gray).marks == []


@pytest.mark.parametrize("family", ["strokes", "fonts", "forms", "notebook"])
def test_numbers_without_punctuation_have_no_marks(family: str) -> None:
    for image, _ in make_family(family, 25, seed=4):
        assert read_page(to_gray(Image.fromarray(image))).marks == []


def box(x0: int, x1: int) -> tuple[int, int, int, int]:
    return (x0, 0, x1, 10)


def test_spell_puts_marks_between_the_chosen_digits() -> None:
    digits = [("1", box(0, 10), 0), ("2", box(20, 30), 0), ("5", box(50, 60), 0), ("7", box(10, 20), 1)]
    inside = Mark(".", box(38, 42), 0)
    sign = Mark("-", (-20, 0, -10, 10), 1)
    trailing = Mark(".", box(70, 74), 0)  # a full stop
    text, kept = spell(digits, [trailing, inside, sign])
    assert text == "12.5\n-7"
    assert kept == [inside, sign]
    # Only a minus stands before the first digit; a mark on a line without digits is not read.
    assert spell(digits[:1], [Mark(",", (-9, 0, -5, 10), 0), Mark(".", box(3, 5), 2)]) == ("1", [])


def test_a_printed_tick_with_a_bit_of_its_line_is_no_comma() -> None:
    # A comb field's tick standing on a faint line, left between two digits when the line broke up:
    # as tall as a comma and in the same place, but a pixel thick.
    gray = write([digit_strokes(7), digit_strokes(9)], [0.3, 1.3])
    x0, y = int(1.05 * HEIGHT), int(60 + 1.1 * HEIGHT)
    gray[y - 25 : y, x0] = 0.0  # the tick
    gray[y, x0 - 8 : x0 + 9] = 0.0  # its bit of line
    assert read_page(gray).marks == []


@pytest.mark.parametrize(
    "face",
    ["dejavu/DejaVuSerif", "dejavu/DejaVuSerifCondensed", "dejavu/DejaVuSerif-Italic",
     "dejavu/DejaVuSansMono-Oblique", "liberation/LiberationSerif-Regular",
     "liberation/LiberationSerif-Italic", "liberation/LiberationSans-Regular"],
)  # fmt: skip
@pytest.mark.parametrize(("text", "size"), [("570.92", 60), ("-7.25", 90), ("3,14", 60), ("1,250", 90)])
def test_a_typefaces_point_and_comma_are_told_apart(face: str, text: str, size: int) -> None:
    """A serif face's point is up to two of its hairline-thinned stroke widths tall: it was taken for a
    comma sitting on the baseline ("570,92"). A comma reaches under the baseline or is longer than wide;
    a point does neither."""
    from PIL import ImageDraw, ImageFont

    path = f"/usr/share/fonts/truetype/{face}.ttf"
    try:
        font = ImageFont.truetype(path, size)
    except OSError:
        pytest.skip(f"{path} is not installed (apt install fonts-dejavu-extra fonts-liberation)")
    img = Image.new("L", (int(font.getlength(text)) + size, int(size * 1.6)), 245)
    ImageDraw.Draw(img).text((size / 2, size * 0.25), text, fill=20, font=font)
    page = read_page(to_gray(img))
    assert [m.char for m in sorted(page.marks, key=lambda m: m.x)] == [c for c in text if not c.isdigit()]
