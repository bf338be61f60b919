"""A web demo screenshotted whole on a large screen (``model_store.screen_pad``): its canvas or outlined pad,
1-2% of the picture and too small to be sought on the working copy, is found on the finer copy, in a PNG
and in a JPEG (decoded again at the PNG's scale); a scanned page's small box is no pad (one flat fill, the
paper, is no screen)."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image, ImageDraw

from model_store import preprocess
from model_store.decode import decode_image, luminance, to_gray
from model_store.screen_pad import pad_only
from testkit.digits import similarity
from testkit.images import png_bytes

from .test_screen_canvas import written

MAX_PIXELS = 10**8
RGB = tuple[int, int, int]
# page, canvas, outline, pen
KINDS: dict[str, tuple[RGB, RGB, RGB | None, RGB]] = {
    "a black canvas on a white page": ((255, 255, 255), (0, 0, 0), None, (255, 255, 255)),
    "a white canvas on a gray page": ((241, 243, 246), (255, 255, 255), None, (0, 0, 0)),
    "a light gray canvas on a white page": ((255, 255, 255), (238, 238, 238), None, (0, 0, 0)),
    "a white pad outlined on a white page": ((255, 255, 255), (255, 255, 255), (200, 203, 210), (0, 0, 0)),
}
SIDE, X0, Y0 = 240, 320, 200  # the canvas: 1.6% of a 2560x1440 screen


def browser_window(
    kind: str, canvas: tuple[int, int], title: str, answer: str, size: tuple[int, int] = (2560, 1440)
) -> Image.Image:
    """A browser's whole window at 1x: its bar, an address field wider than the canvas is, a heading, the
    ``canvas`` (width, height) at X0, Y0, the buttons below it and the answer beside it."""
    page, fill, outline, _ = KINDS[kind]
    w, (cw, ch) = size[0], canvas
    shot = Image.new("RGB", size, page)
    draw = ImageDraw.Draw(shot)
    draw.rectangle([0, 0, w, 84], (222, 225, 230))
    draw.rounded_rectangle([220, 22, w - 220, 62], 18, (255, 255, 255))
    draw.text((X0, 130), title, (30, 30, 30))
    draw.rectangle([X0, Y0, X0 + cw, Y0 + ch], fill, outline=outline)
    draw.rounded_rectangle([X0, Y0 + ch + 20, X0 + 90, Y0 + ch + 56], 6, (230, 232, 236))
    draw.rounded_rectangle([X0 + 110, Y0 + ch + 20, X0 + 220, Y0 + ch + 56], 6, (37, 99, 235))
    draw.text((X0 + cw + 50, Y0 + 30), answer, (30, 30, 30))
    return shot


def large_screen(d: int, kind: str, size: tuple[int, int] = (2560, 1440)) -> tuple[Image.Image, Image.Image]:
    """``browser_window`` with ``d`` written on its square canvas; and the same digit on a picture all
    canvas."""
    shot = browser_window(
        kind, (SIDE, SIDE), "Handwritten digit recognizer", f"Prediction: {(d + 3) % 10}", size
    )
    _, canvas, _, pen = KINDS[kind]
    box = (X0 + 40, Y0 + 40, X0 + SIDE - 40, Y0 + SIDE - 40)
    return written(shot, d, box, pen), written(Image.new("RGB", size, canvas), d, box, pen)


def encoded(img: Image.Image, fmt: str) -> bytes:
    if fmt == "PNG":
        return png_bytes(img)
    buf = io.BytesIO()
    img.save(buf, "JPEG", quality=85)
    return buf.getvalue()


@pytest.mark.parametrize("fmt", ["PNG", "JPEG"])
@pytest.mark.parametrize("kind", KINDS)
def test_a_small_canvas_on_a_large_screen_is_read_as_the_canvas_alone(
    kind: str, fmt: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each digit comes out as it does on a picture all canvas. Without the finer copy's step the canvas
    (under 4% of the picture) is not sought, and the page is read with it."""
    shots = [large_screen(d, kind) for d in range(10)]

    def scores() -> list[float]:
        return [
            similarity(
                preprocess.preprocess_bytes(encoded(shot, fmt), MAX_PIXELS),
                preprocess.preprocess_bytes(encoded(alone, fmt), MAX_PIXELS),
            )
            for shot, alone in shots
        ]

    found = scores()
    assert min(found) > 0.95, np.round(found, 3)
    monkeypatch.setattr(preprocess, "pad_only", lambda data, max_pixels, img, gray: gray)
    assert min(scores()) < 0.5


def number_screen(number: str, kind: str) -> Image.Image:
    """``browser_window`` of a number reader: a 480x160 canvas (3:1, as our own page's number pad is) near
    the top left of a 2560x1440 screen, ``number`` written across it."""
    shot = browser_window(kind, (480, 160), "Handwritten number reader", "Reading: 123")
    for k, d in enumerate(number):
        written(shot, int(d), (X0 + 60 + 110 * k, Y0 + 30, X0 + 140 + 110 * k, Y0 + 130), KINDS[kind][3])
    return shot


@pytest.mark.parametrize("kind", [k for k in KINDS if KINDS[k][2] is None])
def test_a_numbers_wide_canvas_off_the_middle_is_found(kind: str) -> None:
    """A canvas 3:1, off the picture's middle, holding a number is the canvas (a bar along the top, or a
    phone's palette strip, is longer still): all but it is painted over with its level."""
    shot = number_screen("2026", kind)
    gray = to_gray(shot)
    out = pad_only(png_bytes(shot), MAX_PIXELS, shot, gray)
    assert out is not gray
    sy, sx = gray.shape[0] / 1440, gray.shape[1] / 2560
    r0, r1, c0, c1 = round(Y0 * sy), round((Y0 + 160) * sy), round(X0 * sx), round((X0 + 480) * sx)
    outside = np.ones(gray.shape, dtype=bool)
    outside[r0 - 1 : r1 + 1, c0 - 1 : c1 + 1] = False
    assert np.ptp(out[outside]) == 0  # the bar, the heading, the button and the answer painted over
    inside = (slice(r0 + 1, r1 - 1), slice(c0 + 1, c1 - 1))
    np.testing.assert_array_equal(out[inside], gray[inside])


def test_a_jpegs_finer_copy_is_the_pngs() -> None:
    """A JPEG is decoded at a reduced scale for the working copy; its finer copy is decoded again, at the
    size and the levels the PNG's has (a one-pixel outline at 1/3 rather than 1/4 of its contrast)."""
    shot, _ = large_screen(7, "a white pad outlined on a white page")
    png, jpeg = encoded(shot, "PNG"), encoded(shot, "JPEG")
    img = decode_image(jpeg, MAX_PIXELS)
    assert img.size == (640, 360)  # the working copy's draft
    fine_png = luminance(png, MAX_PIXELS, decode_image(png, MAX_PIXELS), 1024)
    fine_jpeg = luminance(jpeg, MAX_PIXELS, img, 1024)
    assert fine_png is not None and fine_jpeg is not None
    assert fine_jpeg.shape == fine_png.shape == (480, 854)
    assert np.abs(fine_jpeg - fine_png).mean() < 1.0


def scanned_form(d: int, bar: RGB | None) -> Image.Image:
    """A page scanned at 150 dpi: a 2.5 cm box (1.4% of the page) with ``d`` written in it, and a number
    written beside it; with a bar of colour ``bar`` across its top (a screen's, or a scanner's black
    edge)."""
    page = Image.new("RGB", (1240, 1754), (255, 255, 255))
    draw = ImageDraw.Draw(page)
    if bar is not None:
        draw.rectangle([0, 0, 1240, 120], bar)
    draw.rectangle([500, 700, 660, 860], None, (20, 20, 20), 2)
    written(page, d, (540, 730, 620, 830), (20, 20, 20))
    written(page, (d + 4) % 10, (200, 1200, 260, 1300), (20, 20, 20))
    return written(page, (d + 5) % 10, (270, 1200, 330, 1300), (20, 20, 20))


@pytest.mark.parametrize("d", [0, 4, 7])
def test_a_scanned_pages_small_box_is_no_pad(d: int) -> None:
    """A box under 3% of a page with one flat fill (its paper) is left alone, the writing beside it kept;
    with a second flat fill (a screen's gray bar) the same box is taken for a pad. A 1-bit scan is black
    and white alone, its ink as flat as a fill: with its scanner's black edge it is no screen either."""
    for bar, one_bit, taken in (
        (None, False, False),
        ((222, 225, 230), False, True),
        ((0, 0, 0), True, False),
    ):
        page = scanned_form(d, bar)
        if one_bit:
            page = page.convert("1", dither=Image.Dither.NONE)
        gray = to_gray(page)
        assert (pad_only(b"", 0, page, gray) is not gray) == taken, (bar, one_bit)
