"""A web page's drawing pad in a screenshot (``model_store.screen_pad``): a pad outlined by a thin line on a
card of its own white is found and the page round it (heading, buttons, the answer's card with its printed
digit and bars) painted over; drawings, paper, a box the writing crosses and photos are left alone."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from model_store import preprocess, segment
from model_store.decode import to_gray
from model_store.screen_pad import pad_only
from testkit.digits import similarity
from testkit.images import png_bytes
from training.numbers import FONT_DIR
from training.pen_numbers import digit_strokes

from .test_screen_canvas import _with_alone as with_alone
from .test_screen_canvas import crossing_the_edge, lined_page, photo_of_sheet, plain, written

LINE = (226, 229, 235)  # a light theme's border colour (our page's)
Box = tuple[float, float, float, float]


def _font(size: int) -> ImageFont.FreeTypeFont:
    return ImageFont.truetype(str(FONT_DIR / "DejaVuSans-Bold.ttf"), size)


def _answer_card(draw: ImageDraw.ImageDraw, x: int, y: int, shown: int, outline: bool) -> None:
    """A classifier's answer: a printed digit in a tinted box and ten probability bars with their labels."""
    draw.rounded_rectangle([x, y, x + 360, y + 430], 12, "white", outline=LINE if outline else None)
    draw.rounded_rectangle([x + 20, y + 20, x + 112, y + 112], 12, (234, 232, 252))
    draw.text((x + 42, y + 24), str(shown), (68, 56, 202), _font(70))
    draw.text((x + 130, y + 40), "99.9% confidence", (20, 20, 30), _font(18))
    for k in range(10):
        draw.text((x + 20, y + 140 + 28 * k), str(k), (20, 20, 30), _font(14))
        draw.rounded_rectangle([x + 45, y + 146 + 28 * k, x + 245, y + 154 + 28 * k], 4, (234, 232, 252))
        draw.rounded_rectangle(
            [x + 45, y + 146 + 28 * k, x + 50 + 19 * k, y + 154 + 28 * k], 4, (68, 56, 202)
        )


def desktop(d: int, page: tuple[int, int, int] = (243, 244, 248)) -> tuple[Image.Image, Image.Image]:
    """A desktop browser's screenshot of a demo: the pad on a white card with a heading and buttons, the
    answer's card beside it showing another digit (on a white page, both cards outlined too); and the
    pad alone."""
    return _with_alone(desktop_page(d, page), d, (130, 190, 310, 450))


def desktop_page(shown: int, page: tuple[int, int, int] = (243, 244, 248)) -> Image.Image:
    """``desktop``'s screenshot with nothing on its pad (at 40:400, 140:500), the answer showing
    ``shown`` + 3."""
    img = Image.new("RGB", (1280, 800), page)
    draw = ImageDraw.Draw(img)
    outlined = page == (255, 255, 255)
    draw.text((20, 30), "Digit classifier", (20, 20, 30), _font(24))
    draw.rounded_rectangle([20, 90, 420, 640], 12, "white", outline=LINE if outlined else None)
    draw.text((40, 106), "Draw a digit", (20, 20, 30), _font(18))
    draw.rounded_rectangle([40, 140, 400, 500], 12, "white", outline=LINE)
    draw.rounded_rectangle([40, 516, 130, 556], 8, "white", outline=LINE)
    draw.text((62, 526), "Clear", (20, 20, 30), _font(16))
    draw.rounded_rectangle([290, 516, 400, 556], 8, (68, 56, 202))
    draw.text((312, 526), "Predict", "white", _font(16))
    _answer_card(draw, 450, 90, (shown + 3) % 10, outlined)
    return img


def phone(d: int) -> tuple[Image.Image, Image.Image]:
    """A phone's screenshot (3x) of the same demo, the answer's card under the pad's."""
    img = Image.new("RGB", (1170, 2532), (243, 244, 248))
    draw = ImageDraw.Draw(img)
    draw.rounded_rectangle([60, 360, 1110, 1800], 36, "white")
    draw.text((130, 400), "Draw a digit", (20, 20, 30), _font(54))
    draw.rounded_rectangle([130, 500, 1040, 1410], 36, "white", outline=LINE, width=3)
    draw.rounded_rectangle([130, 1450, 400, 1570], 24, "white", outline=LINE, width=3)
    draw.rounded_rectangle([770, 1450, 1040, 1570], 24, (68, 56, 202))
    draw.rounded_rectangle([160, 1640, 330, 1790], 12, "black")  # the models' thumbnail ...
    written(img, d, (215, 1660, 275, 1770), (255, 255, 255))  # ... of the digit
    _answer_card(draw, 60, 1860, (d + 3) % 10, False)
    return _with_alone(img, d, (400, 640, 770, 1270))


def _with_alone(shot: Image.Image, d: int, box: Box) -> tuple[Image.Image, Image.Image]:
    """The digit written in ``box`` of the screenshot, and the same in a picture all pad."""
    return with_alone(shot, "white", d, box, (17, 17, 17))


PAGES: dict[str, Callable[[int], tuple[Image.Image, Image.Image]]] = {
    "a desktop's light theme, the cards on a gray page": desktop,
    "a desktop's light theme, the cards outlined on a white page": lambda d: desktop(d, (255, 255, 255)),
    "a phone's light theme": phone,
}


def digit_of(picture: Image.Image) -> np.ndarray:
    return preprocess.preprocess_bytes(png_bytes(picture), 10**8)


@pytest.mark.parametrize("page", PAGES)
def test_the_page_round_an_outlined_pad_is_not_the_digit(page: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each digit comes out as it does in a picture all pad. Without the step the page spoils them: the
    card with the pad's buttons is read, or the answer's card."""
    shots = [PAGES[page](d) for d in range(10)]

    def scores() -> list[float]:
        return [similarity(digit_of(shot), digit_of(alone)) for shot, alone in shots]

    found = scores()
    assert min(found) > 0.95, np.round(found, 3)
    monkeypatch.setattr(preprocess, "pad_only", lambda data, max_pixels, img, gray: gray)
    assert min(scores()) < 0.5


def gray_of(img: Image.Image) -> np.ndarray:
    """The working copy the service makes of the picture (reduced to at most 256 px a side)."""
    return to_gray(img)


def test_the_pad_is_kept_and_the_page_painted_to_its_level() -> None:
    """The working copy keeps the pad's pixels inside its outline; the rest, outline too, is white."""
    shot, _ = desktop(4)
    gray = gray_of(shot.resize((256, 160), Image.Resampling.BOX))
    out = pad_only(b"", 0, shot, gray)
    pad = (slice(29, 99), slice(9, 79))  # inside the outline: rows 28-100, columns 8-80 at 1/5
    assert np.array_equal(out[pad], gray[pad])
    assert (out[:27] == 1.0).all() and (out[102:] == 1.0).all() and (out[:, 82:] == 1.0).all()
    assert out.shape == gray.shape


def test_a_small_number_near_the_pads_edge_is_read_as_on_the_pad_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``/read`` cuts a small number out of the picture at full size (``preprocess.small_writing``), with a
    margin as wide as the number is tall: the page round the pad is painted over in the cut too. Without
    that the pad's outline in the margin is read as a line of 1s, or joins the number."""

    def lines(picture: Image.Image) -> list[int]:
        return [len(line) for line in segment.page_bytes(png_bytes(picture), 10**8).lines]

    numbers = ("207", "49", "1861")
    shots = []
    for k, number in enumerate(numbers):
        shot, alone = desktop_page(k), Image.new("RGB", (1280, 800), "white")
        for picture in (shot, alone):
            for j, digit in enumerate(number):
                written(picture, int(digit), (56 + 36 * j, 440, 84 + 36 * j, 490), (17, 17, 17))
        assert lines(shot) == lines(alone) == [len(number)], number
        shots.append(shot)
    monkeypatch.setattr(segment, "painted_as", lambda cut, box, seen, gray: cut)
    assert any(lines(shot) != [len(number)] for shot, number in zip(shots, numbers, strict=True))


def thin_pen(d: int) -> Image.Image:
    """A digit drawn with a one-pixel pen: its loops are thin lines round paper, no pad."""
    img = Image.new("RGB", (600, 600), "white")
    draw = ImageDraw.Draw(img)
    for stroke in digit_strokes(d, 0):
        draw.line([(150 + 500 * x, 100 + 400 * y) for x, y in stroke], (0, 0, 0), 1)
    return img


def crossing_the_outline(d: int) -> Image.Image:
    """A digit written over the outline of a box on a white page: no pad holds it."""
    img = Image.new("RGB", (800, 600), "white")
    ImageDraw.Draw(img).rectangle([100, 100, 500, 500], "white", outline=LINE, width=2)
    return written(img, d, (384, 150, 784, 450), (0, 0, 0))  # every digit crosses x = 500


def empty_pad(d: int) -> Image.Image:
    """An outlined pad with nothing in it and the digit written beside it."""
    img = Image.new("RGB", (800, 600), "white")
    ImageDraw.Draw(img).rectangle([60, 60, 360, 360], "white", outline=LINE, width=2)
    return written(img, d, (500, 150, 650, 450), (0, 0, 0))


def row_of_boxes(d: int) -> Image.Image:
    """Three of a form's boxes side by side, sharing their sides, a digit in each; the last digit touches
    its box's top, so only the first two boxes hold their writing clear of the outline."""
    img = Image.new("RGB", (720, 320), "white")
    draw = ImageDraw.Draw(img)
    for k in range(3):
        draw.rectangle([60 + 200 * k, 60, 260 + 200 * k, 260], outline=(120, 120, 120), width=2)
    for k, digit in enumerate((d, (d + 1) % 10, (d + 2) % 10)):
        top = 40 if k == 2 else 90
        written(img, digit, (110 + 200 * k, top, 210 + 200 * k, 230), (17, 17, 17))
    return img


@pytest.mark.parametrize(
    "picture",
    [
        plain,
        thin_pen,
        lined_page,
        crossing_the_edge,
        photo_of_sheet,
        crossing_the_outline,
        empty_pad,
        row_of_boxes,
    ],
)
def test_drawings_and_paper_are_left_alone(picture: Callable[[int], Image.Image]) -> None:
    """A drawing, a thin pen's loops, rulings, a card on a table and a photo have no outlined pad; nor has
    a page whose outlined box the writing crosses or leaves empty, nor a row of a form's boxes (their
    lines run on past each box's corners)."""
    for d in range(10):
        img = picture(d)
        gray = gray_of(img)
        assert pad_only(b"", 0, img, gray) is gray, (picture.__name__, d)


def test_a_picture_the_working_copy_does_not_reduce_is_left_alone() -> None:
    """Under 256 px a side nothing fades: a thin outline round paper there is a display's loop (a thin
    face's 6) or a form's box, no screenshot's pad. The same drawn four times as large is a pad's."""
    for scale, found in ((1, False), (4, True)):
        img = Image.new("RGB", (200 * scale, 200 * scale), "white")
        ImageDraw.Draw(img).rectangle(
            [40 * scale, 40 * scale, 160 * scale, 160 * scale], outline=LINE, width=1
        )
        written(img, 4, (70 * scale, 60 * scale, 130 * scale, 140 * scale), (17, 17, 17))
        gray = gray_of(img)
        assert (pad_only(b"", 0, img, gray) is not gray) == found, scale


def test_a_picture_with_transparent_pixels_is_left_alone() -> None:
    shot, _ = desktop(7)
    shot = shot.convert("RGBA")
    shot.putalpha(Image.new("L", shot.size, 128))
    gray = gray_of(shot)
    assert pad_only(b"", 0, shot, gray) is gray
