"""Preprocessing: any digit picture -> an MNIST-style 28x28 (MNIST itself passes through unchanged)."""

from __future__ import annotations

import base64
import io

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFilter

import model_store.preprocess as preprocess
from model_store import sheet as sheet_module
from model_store.decode import to_gray
from model_store.imageops import coarse_copy
from model_store.preprocess import (
    ImageError,
    ImageTooLarge,
    InvalidPixels,
    NoInk,
    NotAnImage,
    UnsupportedFormat,
    decode_base64,
    pixels_to_array,
    preprocess_bytes,
    to_mnist,
)
from model_store.sheet import surface_removed
from testkit.digits import drawn_mnist_digits, similarity
from testkit.images import png_bytes, png_declaring
from training.corruptions import corrupt
from training.pen_numbers import digit_strokes

MAX_PIXELS = 25_000_000


@pytest.fixture(scope="module")
def digits() -> tuple[np.ndarray, np.ndarray]:
    """12 drawn MNIST-style digits (uint8 (12, 28, 28)) and their labels: no MNIST needed."""
    return drawn_mnist_digits(12)


def prep(data: bytes, max_pixels: int = MAX_PIXELS) -> np.ndarray:
    out = preprocess_bytes(data, max_pixels)
    assert out.shape == (28, 28) and out.dtype == np.float32
    assert 0.0 <= out.min() and out.max() <= 1.0
    return out


def centre_of_mass(x: np.ndarray) -> tuple[float, float]:
    idx = np.arange(28)
    return float(x.sum(1) @ idx / x.sum()), float(x.sum(0) @ idx / x.sum())


def upscale(u8: np.ndarray, side: int) -> np.ndarray:
    return np.asarray(Image.fromarray(u8).resize((side, side), Image.Resampling.BICUBIC))


# ------------------------------------------------------------------------------ pass-through


def test_mnist_png_passes_through_unchanged(mnist_test):
    images = mnist_test[0][:300, 0].numpy()
    for u8 in images:
        out = prep(png_bytes(u8))
        assert np.abs(out - u8 / 255.0).max() < 1e-6


def test_inverted_mnist_and_gif_pass_through_unchanged(digits):
    images, _ = digits
    for u8 in images:
        assert np.abs(prep(png_bytes(255 - u8)) - u8 / 255.0).max() < 1e-6
        assert np.abs(prep(png_bytes(u8, fmt="GIF")) - u8 / 255.0).max() < 1e-6  # P mode, 256 grays
        rgb = np.repeat(u8[..., None], 3, axis=-1)
        assert np.abs(prep(png_bytes(rgb, "RGB")) - u8 / 255.0).max() < 1e-6


def test_off_centre_28x28_digit_is_recentred_without_resampling(digits):
    u8 = digits[0][0]
    rows, cols = np.flatnonzero(u8.any(1)), np.flatnonzero(u8.any(0))
    shifted = np.roll(u8, (-rows[0], -cols[0]), (0, 1))  # pushed into the top-left corner
    out = prep(png_bytes(shifted))
    r, c = centre_of_mass(out)
    assert abs(r - 14) <= 0.5 + 1e-3 and abs(c - 14) <= 0.5 + 1e-3
    assert similarity(out, u8 / 255.0) > 0.999


# ------------------------------------------------------------------------------ variants


def variants(u8: np.ndarray):
    big = upscale(u8, 280)
    yield "light-on-dark 280px", png_bytes(big)
    yield "dark-on-light 280px", png_bytes(255 - big)
    rgba = np.zeros((280, 280, 4), np.uint8)
    rgba[..., 3] = big  # black strokes on a transparent canvas
    yield "RGBA dark strokes, transparent", png_bytes(rgba, "RGBA")
    rgba_white = np.full((280, 280, 4), 255, np.uint8)
    rgba_white[..., 3] = big  # white strokes on a transparent canvas
    yield "RGBA white strokes, transparent", png_bytes(rgba_white, "RGBA")
    canvas = np.zeros((400, 600), np.uint8)
    canvas[280:364, 30:114] = upscale(u8, 84)  # small, far off-centre
    yield "small off-centre", png_bytes(canvas)
    yield "large 2000px", png_bytes(255 - upscale(u8, 2000))
    yy, xx = np.ogrid[0:1500, 0:2000]
    light = 235 * (0.75 + 0.2 * xx / 2000 - 0.15 * (yy / 1500 - 0.5) ** 2)  # brighter to the right
    page = light * (1 - 0.9 * np.pad(upscale(u8, 225) / 255.0, ((600, 675), (900, 875))))
    photo = Image.fromarray(page.astype(np.uint8)).filter(ImageFilter.GaussianBlur(2))
    yield "photo of a page, the digit's ink 0.3% of it", png_bytes(photo, fmt="JPEG", quality=90)
    ink = np.pad(upscale(u8, 260) / 255.0, ((470, 470), (670, 670)))  # in the middle of 1200 x 1600
    tilted = np.asarray(Image.new("L", (1400, 1000), 255).rotate(6, expand=True), np.float64) / 255
    th, tw = tilted.shape  # the sheet fills most of the frame, as when one photographs a digit
    sheet = np.zeros((1200, 1600))
    sheet[(1200 - th) // 2 : (1200 - th) // 2 + th, (1600 - tw) // 2 : (1600 - tw) // 2 + tw] = tilted
    top_band = np.ones((1200, 1600))
    top_band[:250] = 0
    for name, paper in (
        ("a tilted sheet on a dark table", sheet),
        ("a page, the table along its top", top_band),
    ):
        page = (60 + 170 * paper) * (1 - 0.85 * ink)
        yield f"photo of {name}", png_bytes(page.astype(np.uint8), fmt="JPEG", quality=90)
    yield "JPEG", png_bytes(np.repeat((255 - big)[..., None], 3, -1), "RGB", fmt="JPEG", quality=75)
    yield "GIF P-mode", png_bytes(Image.fromarray(255 - big).convert("P"), fmt="GIF")
    yield "WebP", png_bytes(255 - big, fmt="WEBP", quality=90)
    yield "BMP", png_bytes(big, fmt="BMP")
    cmyk = Image.fromarray(255 - big).convert("CMYK")
    yield "CMYK JPEG", png_bytes(cmyk, fmt="JPEG", quality=90)
    yield "16-bit gray", png_bytes(Image.fromarray(big.astype(np.uint16) * 257), fmt="PNG")
    la = np.stack([np.zeros_like(big), big], axis=-1)
    yield "LA transparent", png_bytes(la, "LA")


def photo_of_paper(u8: np.ndarray, rng: np.random.Generator) -> bytes:
    """Dark thin-ish ink on unevenly lit, grainy paper, as a JPEG."""
    side = 600
    yy, xx = np.mgrid[0:side, 0:side] / side
    paper = 210 - 70 * xx - 40 * yy + rng.normal(0, 6, (side, side))
    ink = np.zeros((side, side))
    ink[150:450, 170:470] = (
        np.asarray(Image.fromarray(u8).resize((300, 300), Image.Resampling.BILINEAR)) / 255.0
    )
    photo = np.clip(paper * (1 - 0.75 * ink), 0, 255).astype(np.uint8)
    return png_bytes(np.repeat(photo[..., None], 3, -1), "RGB", fmt="JPEG", quality=85)


def test_variants_give_a_centred_digit_close_to_the_original(digits):
    images, _ = digits
    rng = np.random.default_rng(0)
    scores: dict[str, list[float]] = {}
    for u8 in images:
        ref = u8 / 255.0
        for name, data in [*variants(u8), ("photo of paper", photo_of_paper(u8, rng))]:
            out = prep(data)
            r, c = centre_of_mass(out)
            assert abs(r - 14) < 1.0 and abs(c - 14) < 1.0, (name, r, c)
            rows, cols = np.flatnonzero(out.any(1)), np.flatnonzero(out.any(0))
            assert max(rows[-1] - rows[0], cols[-1] - cols[0]) + 1 <= 22, name  # fitted to ~20 px
            scores.setdefault(name, []).append(similarity(out, ref))
    for name, s in scores.items():
        assert np.median(s) > 0.88 and min(s) > 0.75, (name, np.round(s, 3))


def test_a_thin_pen_line_on_a_large_photo_is_ink():
    """A ball-point digit on a 2000x1500 photo: its line is under a pixel wide in the reduced copy the
    digit is looked for in, yet it is found, and comes out like the same digit written with a marker."""

    def photo(d: int, pen: int) -> bytes:
        page = Image.new("L", (2000, 1500), 225)
        draw = ImageDraw.Draw(page)
        for stroke in digit_strokes(d, 0):
            draw.line([(850 + 300 * x, 600 + 300 * y) for x, y in stroke], fill=30, width=pen, joint="curve")
        return png_bytes(page.filter(ImageFilter.GaussianBlur(1.5)), fmt="JPEG", quality=88)

    scores = [similarity(prep(photo(d, 5)), prep(photo(d, 30))) for d in range(10)]
    assert min(scores) > 0.6 and np.median(scores) > 0.75, np.round(scores, 3)


def test_a_loop_drawn_round_a_digit_is_taken_out():
    """A circled answer: left in, the loop was the digit's box and the model read a 0 round a small mark."""

    def page(d: int, circled: bool) -> bytes:
        img = Image.new("L", (600, 600), 235)
        draw = ImageDraw.Draw(img)
        for stroke in digit_strokes(d, 0):
            draw.line([(230 + 200 * x, 200 + 200 * y) for x, y in stroke], fill=30, width=12, joint="curve")
        if circled:
            draw.ellipse([120, 90, 470, 510], outline=30, width=10)
        return png_bytes(img)

    scores = [similarity(prep(page(d, True)), prep(page(d, False))) for d in range(10)]
    assert min(scores) > 0.8 and np.median(scores) > 0.88, np.round(scores, 3)


def test_isolated_specks_do_not_shrink_the_digit(digits):
    images, _ = digits
    for u8 in images:
        page = np.full((300, 300), 235, np.uint8)
        page[60:228, 70:238] = 255 - upscale(u8, 168)  # dark digit on light paper
        clean = prep(png_bytes(page))
        page[280:286, 10:16] = 20  # a speck of dust far from the digit, and a pen slip at the top
        page[8:10, 200:230] = 30
        specked = prep(png_bytes(page))
        assert similarity(specked, clean) > 0.97


def test_exif_orientation_is_applied(digits):
    u8 = digits[0][0]
    big = upscale(u8, 112)
    stored = Image.fromarray(255 - big).transpose(Image.Transpose.ROTATE_90)  # camera held sideways
    exif = Image.Exif()
    exif[0x0112] = 6  # "rotate 90 CW to display"
    data = png_bytes(stored, fmt="JPEG", quality=95, exif=exif.tobytes())
    out = prep(data)
    assert similarity(out, u8 / 255.0) > 0.85
    assert similarity(out, u8 / 255.0) > similarity(out, np.rot90(u8) / 255.0) + 0.1


@pytest.mark.parametrize("fmt", ["HEIF", "AVIF"])
def test_phone_formats_are_read_upright_like_jpeg(digits, fmt):
    """HEIC (iPhones, many Android phones) and AVIF, saved by a camera held sideways with the rotation
    in the metadata: the digit comes out upright and like the same picture as a JPEG."""
    u8 = digits[0][0]
    stored = Image.fromarray(255 - upscale(u8, 112)).transpose(Image.Transpose.ROTATE_90).convert("RGB")
    exif = Image.Exif()
    exif[0x0112] = 6  # "rotate 90 CW to display"
    out = prep(png_bytes(stored, fmt=fmt, quality=90, exif=exif.tobytes()))
    jpeg = prep(png_bytes(stored, fmt="JPEG", quality=90, exif=exif.tobytes()))
    assert similarity(out, jpeg) > 0.95
    assert similarity(out, u8 / 255.0) > similarity(out, np.rot90(u8) / 255.0) + 0.1


# ------------------------------------------------------------------------------ soft digits


def dark_page(ink: np.ndarray, paper: float = 0.96, pen: float = 0.08) -> np.ndarray:
    """Ink coverage 0..1 -> uint8 dark-ink-on-light-paper page."""
    return np.clip(255 * (paper + (pen - paper) * ink), 0, 255).astype(np.uint8)


def soft_versions(u8: np.ndarray):
    """The same digit as a person would see it, softer: every stroke still visible."""
    ink = upscale(u8, 140) / 255.0
    page = Image.fromarray(dark_page(ink))
    yield "gaussian blur", png_bytes(page.filter(ImageFilter.GaussianBlur(1.3 * 140 / 28)))
    small = Image.fromarray(dark_page(u8 / 255.0)).resize((15, 15), Image.Resampling.BOX)  # 11 px box
    yield "low resolution", png_bytes(small.resize((140, 140), Image.Resampling.BICUBIC))
    yield "faint", png_bytes(dark_page(ink, 0.85, 0.65))
    blurred_faint = Image.fromarray(dark_page(ink, 0.9, 0.6)).filter(ImageFilter.GaussianBlur(5))
    yield "blurred and faint JPEG", png_bytes(blurred_faint.convert("RGB"), fmt="JPEG", quality=60)


def test_soft_digits_keep_every_stroke(mnist_test):
    """Blurred, low-resolution and faint digits keep their loops and tails: compared with the same
    digit drawn crisply, hardly any of its ink goes missing and the shapes correlate. The bounds were
    measured on MNIST's handwriting, so this one needs MNIST."""
    images = mnist_test[0][:12, 0].numpy()
    for u8 in images:
        clean = prep(png_bytes(dark_page(upscale(u8, 140) / 255.0)))
        strokes = clean > 0.5
        for name, data in soft_versions(u8):
            out = prep(data)
            near = np.max([np.roll(out, (dy, dx), (0, 1)) for dy in (-1, 0, 1) for dx in (-1, 0, 1)], 0)
            kept = float((near[strokes] > 0.15).mean())  # the crisp strokes' share still inked (+-1 px)
            assert kept >= 0.99, (name, kept)
            assert similarity(out, clean) > 0.75, (name, similarity(out, clean))


# ------------------------------------------------------------------------------ errors


def test_empty_canvases_have_no_ink():
    for data in (
        png_bytes(np.zeros((28, 28), np.uint8)),
        png_bytes(np.full((200, 300), 255, np.uint8)),
        png_bytes(np.zeros((64, 64, 4), np.uint8), "RGBA"),  # fully transparent
        png_bytes((120 + np.random.default_rng(0).integers(0, 4, (300, 300))).astype(np.uint8)),  # flat grain
    ):
        with pytest.raises(NoInk):
            prep(data)


def test_not_an_image_or_truncated_is_bad_image(digits):
    good = png_bytes(upscale(digits[0][0], 100))
    for data in (b"", b"hello, world", good[: len(good) // 2], b"\x89PNG\r\n\x1a\n" + b"\0" * 40):
        with pytest.raises(NotAnImage):
            prep(data)


def test_unsupported_format_is_refused(digits):
    with pytest.raises(UnsupportedFormat):
        prep(png_bytes(digits[0][0], fmt="ICO"))


@pytest.mark.parametrize(
    ("mode", "save"),
    [
        ("1", {"compression": "group4"}),  # a fax or a 1-bit office scan
        ("1", {"compression": "group3"}),
        ("L", {"compression": "tiff_lzw"}),
        ("RGB", {"compression": "tiff_deflate"}),
        ("RGB", {"compression": "jpeg", "quality": 90}),
        ("I;16", {}),  # a 16-bit scanner output
        ("CMYK", {"compression": "packbits"}),
    ],
    ids=lambda v: v if isinstance(v, str) else v.get("compression", "raw"),
)
def test_scanner_tiffs_read_like_the_png(digits, mode, save):
    """TIFF as scanners and fax software write it: dark ink on white paper at 200-300 dpi."""
    page = Image.fromarray(255 - upscale(digits[0][0], 112))
    if mode == "I;16":
        stored = Image.fromarray((np.asarray(page, np.uint16) * 257).astype(np.uint16))
    else:  # 1-bit: thresholded, as a fax machine or a scanner's "text" mode does (dithering: robustness)
        stored = page.convert(mode, dither=Image.Dither.NONE)
    out = prep(png_bytes(stored, fmt="TIFF", **save))
    assert similarity(out, prep(png_bytes(page))) > 0.9


def test_a_multi_page_tiff_reads_its_first_page(digits):
    pages = [Image.fromarray(255 - upscale(u8, 112)) for u8 in digits[0][:2]]
    data = png_bytes(pages[0], fmt="TIFF", save_all=True, append_images=pages[1:])
    out = prep(data)
    assert similarity(out, prep(png_bytes(pages[0]))) > 0.95 > similarity(out, prep(png_bytes(pages[1])))


def test_decompression_bombs_are_refused():
    bomb = png_declaring(20000, 20000)
    assert len(bomb) < 200
    with pytest.raises(ImageTooLarge):
        prep(bomb)
    with pytest.raises(ImageTooLarge):  # over the limit but under Pillow's own 2x error threshold
        prep(png_declaring(3000, 3000), max_pixels=5_000_000)


def test_pixels_are_used_as_is_and_validated(digits):
    u8 = digits[0][0]
    assert np.abs(pixels_to_array(u8.tolist()) - u8 / 255.0).max() < 1e-7
    off = np.roll(u8, 4, 1)
    assert np.array_equal(pixels_to_array(off.tolist()), off.astype(np.float32) / 255.0)  # no recentring
    for bad in (
        [[0] * 28] * 27,
        [[0] * 27] * 28,
        [["a"] * 28] * 28,
        [["255"] * 28] * 28,
        [[True] * 28] * 28,
        [[True] + [0] * 27] * 28,  # numpy takes True for 1 beside numbers
        [[300] * 28] * 28,
        [[-1] * 28] * 28,
        5,
    ):
        with pytest.raises(InvalidPixels):
            pixels_to_array(bad)
    with pytest.raises(NoInk):
        pixels_to_array([[0] * 28] * 28)


def test_base64_with_and_without_data_url():
    assert decode_base64("aGk=") == b"hi"
    assert decode_base64("data:image/png;base64,aGk=") == b"hi"
    assert decode_base64("aG\nk=") == b"hi"
    # As other encoders give it: unpadded, and the URL-safe alphabet (bytes 0xfb 0xff: "+/8" / "-_8").
    assert decode_base64("aGk") == b"hi"
    assert decode_base64("-_8") == decode_base64("+/8=") == base64.urlsafe_b64decode("-_8=") == b"\xfb\xff"
    for bad in ("not base64!", "data:image/png;base64", "aGk=a", "a", "aG=k"):
        with pytest.raises(NotAnImage):
            decode_base64(bad)


def test_to_mnist_accepts_any_gray_array(digits):
    u8 = digits[0][0]
    assert np.abs(to_mnist(u8 / 255.0) - u8 / 255.0).max() < 1e-6


def test_random_images_give_an_mnist_array_or_a_client_error():
    """Odd sizes (1 px wide too), modes, formats, truncation and corruption: never an unexpected error."""
    rng = np.random.default_rng(7)
    modes, formats = ["L", "RGB", "RGBA", "LA", "P", "1", "CMYK"], ["PNG", "JPEG", "GIF", "BMP", "WEBP"]
    outcomes = {"ok": 0, "refused": 0}
    for _ in range(300):
        h = int(rng.integers(1, 5)) if rng.random() < 0.3 else int(rng.integers(1, 300))
        w = int(rng.integers(1, 5)) if rng.random() < 0.3 else int(rng.integers(1, 300))
        a = np.zeros((h, w), np.uint8)
        a[int(rng.integers(0, h)), :] = 255
        a[:, int(rng.integers(0, w))] = 255
        if rng.random() < 0.3:
            a = rng.integers(0, 256, (h, w), dtype=np.uint8)
        mode, fmt = modes[rng.integers(len(modes))], formats[rng.integers(len(formats))]
        try:
            data = png_bytes(Image.fromarray(a).convert(mode), fmt=fmt)
        except (OSError, ValueError, KeyError):
            continue  # Pillow cannot write this mode in this format
        if rng.random() < 0.2:
            data = data[: int(rng.integers(1, len(data) + 1))]
        try:
            prep(data)
            outcomes["ok"] += 1
        except ImageError:
            outcomes["refused"] += 1
    assert outcomes["ok"] > 50 and outcomes["refused"] > 10, outcomes


# ------------------------------------------------------------------------- a sheet on a table, or not


def tight_crop(u8: np.ndarray, side: int) -> np.ndarray:
    """The digit cropped to its ink and scaled to `side` px, dark on white: a bold digit filling its
    picture, its strokes crossing the picture's edges."""
    rows, cols = np.flatnonzero(u8.max(1) > 60), np.flatnonzero(u8.max(0) > 60)
    ink = u8[rows[0] : rows[-1] + 1, cols[0] : cols[-1] + 1]
    h, w = ink.shape
    s = side / max(h, w)
    big = Image.fromarray(ink).resize((max(1, round(w * s)), max(1, round(h * s))), Image.Resampling.BICUBIC)
    return 255 - np.asarray(big)


def test_a_digit_filling_its_picture_is_not_taken_for_the_table_around_a_sheet(digits):
    """Its strokes cross the edges in short stretches, or lie along one (a 2's base cropped flush), and
    nothing else is written beside them; a table runs along a whole side or all round a written sheet."""
    images, labels = digits
    for u8, label in zip(images, labels, strict=True):
        picture = tight_crop(u8, 200)
        out = prep(png_bytes(picture))  # never refused as empty
        if label != 1:  # a 1 cropped to its stroke is nearly all ink: no sheet to speak of either way
            as_is = to_mnist(picture.astype(np.float32) / 255.0)  # no table step: the digit itself
            assert similarity(out, as_is) > 0.99, label


@pytest.mark.parametrize("side", [10, 14, 20, 40, 200])
@pytest.mark.parametrize("light_on_dark", [False, True])
def test_a_digit_cropped_flush_to_its_ink_keeps_every_stroke(digits, side, light_on_dark):
    """Cropped before sending, from a thumbnail to a photo: the frame is no longer all paper, and a small
    picture is mostly strokes. The paper is still the paper (not a surface the strokes raise, nor a
    table round a sheet), and no stroke is cut as grain."""
    images, _ = digits
    scores = []
    for u8 in images:
        picture = tight_crop(u8, side)
        scores.append(similarity(prep(png_bytes(255 - picture if light_on_dark else picture)), u8 / 255.0))
    assert np.median(scores) > 0.85 and min(scores) > 0.7, np.round(scores, 3)


def test_a_digit_cut_from_a_page_is_preprocessed_like_the_same_page_uploaded(digits):
    """The crops /read cuts (white ink on a black margin) are never taken for a sheet on a table."""
    from model_store.segment import segment

    images, _ = digits
    for u8 in images:
        page = np.pad(tight_crop(u8, 200), 28, constant_values=255)
        (crop,) = segment(page.astype(np.float32) / 255.0)
        assert similarity(crop.pixels, prep(png_bytes(page))) > 0.9


def note_on_a_table(
    u8: np.ndarray, share: float, seed: int, table: float | None, texture: float = 1.0
) -> bytes:
    """A phone photo of a note (``share`` of the frame) with the digit written on it, tilted, lying on a
    grained table ``table`` as bright as the note (None: on white paper as large as the frame), its grain
    ``texture`` times a wooden one's; light falling off across the frame, blur, grain, JPEG. The same
    seed gives the same note, digit and light."""
    rng = np.random.default_rng(seed)
    height, width = 900, 1200
    yy, xx = np.mgrid[0:height, 0:width]
    grain = rng.normal(0, 1, (height // 8, width // 8)).astype(np.float32)
    grain = np.asarray(Image.fromarray(grain).resize((width, height), Image.Resampling.BICUBIC))
    picture = np.full((height, width), 255.0)
    if table is not None:
        picture = 255 * table * (1 + 0.12 * texture * grain) + 20 * texture * np.sin(xx / 37.0)
    side = int(np.sqrt(share * height * width))
    note = np.full((side, side), 255.0)
    d = int(side * rng.uniform(0.5, 0.7))
    at = (side - d) // 2
    note[at : at + d, at : at + d] *= 1 - 0.85 * upscale(u8, d) / 255.0
    angle = rng.uniform(-20, 20)
    tilted = np.asarray(Image.fromarray(note.astype(np.uint8)).rotate(angle, expand=True), np.float64)
    cover = np.asarray(Image.new("L", (side, side), 255).rotate(angle, expand=True), np.float64) / 255
    h, w = tilted.shape
    y, x = int(rng.uniform(0.2, 0.8) * (height - h)), int(rng.uniform(0.2, 0.8) * (width - w))
    window = picture[y : y + h, x : x + w]
    picture[y : y + h, x : x + w] = window * (1 - cover) + tilted * cover
    light = 1.0 - 0.25 * (xx / width + yy / height) / 2
    photo = np.clip(picture * light + rng.normal(0, 4, picture.shape), 0, 255).astype(np.uint8)
    return png_bytes(Image.fromarray(photo).filter(ImageFilter.GaussianBlur(1.2)), fmt="JPEG", quality=88)


@pytest.mark.parametrize(("table", "texture"), [(0.25, 1.0), (0.5, 1.0), (0.8, 0.6)])
def test_a_note_smaller_than_the_table_around_it_is_read_as_if_on_a_white_page(digits, table, texture):
    """The table, not the note, is then the photo's dominant level: the note is found as the light,
    convex, written region, and the table painted over; nothing of the note's outline is left as ink.
    A pale desk (0.8, a finer grain) too: the note stands out of it less, but across a sharp outline."""
    images, _ = digits
    for share in (0.06, 0.15, 0.35):
        scores = []
        for seed, u8 in enumerate(images):
            on_white = prep(note_on_a_table(u8, share, seed, None))
            scores.append(similarity(prep(note_on_a_table(u8, share, seed, table, texture)), on_white))
        assert np.median(scores) > 0.95 and min(scores) > 0.85, (share, np.round(scores, 3))


def written_up_to_the_tables_edge(u8: np.ndarray, gap: int, seed: int) -> tuple[bytes, bytes]:
    """A phone photo (800x600) of a sheet with a grained table along its left side, the digit written
    ``gap`` px from the sheet's edge; and the same digit on a sheet filling the frame. Blur, grain, JPEG."""
    rng = np.random.default_rng(seed)
    height, width = 600, 800
    edge, d = int(rng.uniform(0.2, 0.35) * width), int(rng.uniform(0.4, 0.55) * height)
    digit = upscale(u8, d)
    y, x = int(rng.uniform(0.15, 0.85) * (height - d)), edge + gap - int(np.flatnonzero(digit.max(0) > 60)[0])
    on_sheet = np.full((height, width), 235.0)
    on_sheet[y : y + d, x : x + d] *= 1 - 0.85 * digit / 255.0
    by_table = on_sheet.copy()
    by_table[:, :edge] = 255 * 0.45 * (1 + 0.05 * rng.normal(0, 1, (height, edge)))

    def photo(picture: np.ndarray) -> bytes:
        noisy = np.clip(picture + rng.normal(0, 3, picture.shape), 0, 255).astype(np.uint8)
        return png_bytes(Image.fromarray(noisy).filter(ImageFilter.GaussianBlur(1.0)), fmt="JPEG", quality=90)

    return photo(by_table), photo(on_sheet)


@pytest.mark.parametrize("gap", [4, 15, 30])
def test_a_digit_written_up_to_the_sheets_edge_keeps_its_strokes(digits, gap):
    """The table is painted over with the band over the sheet's blurred edge, but the strokes in that
    band, darker than the table, are the pen's: they stay, and the paper continued over the table is
    paper, not the ink beside it spread into a streak. (Before: medians 0.42-0.92, single digits down to
    0.22.) Written against the edge, the digit makes the table look written on (a shadow): not here."""
    images, _ = digits
    scores = [
        similarity(*map(prep, written_up_to_the_tables_edge(u8, gap, seed))) for seed, u8 in enumerate(images)
    ]
    assert np.median(scores) > 0.9 and min(scores) > 0.85, np.round(scores, 3)


@pytest.mark.xfail(
    strict=True,
    reason="known limit: a stroke as fine as MNIST's, 4 px from the table and "
    "blurred, is lighter than the table's edge and goes with it (one digit of 12)",
)
def test_a_fine_stroke_written_against_the_sheets_edge_keeps_its_strokes():
    """As above, the digits drawn with the page's pen for small writing (about MNIST's stroke, finer
    than the marker's) and written 4 px from the sheet's edge."""
    images, _ = drawn_mnist_digits(12, pen=None)
    pairs = [written_up_to_the_tables_edge(u8, 4, seed) for seed, u8 in enumerate(images)]
    scores = [similarity(*map(prep, pair)) for pair in pairs]
    assert min(scores) > 0.85, np.round(scores, 3)


def sheet_on_a_pale_desk(
    u8: np.ndarray, seed: int, desk: float | None, shadow: float = 0.0, falloff: float = 0.15
) -> bytes:
    """A phone photo of a sheet filling 60-75% of a 1200x900 frame, wholly in view, slightly tilted, on a
    grained desk ``desk`` as bright as the sheet (None: the sheet fills the frame); the digit on it; light
    falling off by ``falloff`` across it; ``shadow``: that much darker beyond a straight hard edge across
    the picture (not the digit). Blur, grain, JPEG. The same seed gives the same sheet, digit and light."""
    rng = np.random.default_rng(seed)
    height, width = 900, 1200
    yy, xx = np.mgrid[0:height, 0:width]
    grain = rng.normal(0, 1, (height // 8, width // 8)).astype(np.float32)
    grain = np.asarray(Image.fromarray(grain).resize((width, height), Image.Resampling.BICUBIC))
    sheet = Image.new("L", (width, height), 0)
    a, b, turn = (
        rng.uniform(0.39, 0.43) * width,
        rng.uniform(0.39, 0.43) * height,
        np.radians(rng.uniform(-4, 4)),
    )
    c, s = np.cos(turn), np.sin(turn)
    corners = [
        (width / 2 + x * c - y * s, height / 2 + x * s + y * c)
        for x, y in ((-a, -b), (a, -b), (a, b), (-a, b))
    ]
    ImageDraw.Draw(sheet).polygon(corners, fill=255)
    on_sheet = np.asarray(sheet, np.float64) / 255 if desk is not None else np.ones((height, width))
    paper = on_sheet + (1 - on_sheet) * (desk or 1.0) * (1 + 0.04 * grain)
    d = int(height * rng.uniform(0.15, 0.25))
    top, left = (
        int(height / 2 + rng.uniform(-0.15, 0.05) * height),
        int(width / 2 + rng.uniform(-0.2, 0.1) * width),
    )
    paper[top : top + d, left : left + d] *= 1 - 0.85 * upscale(u8, d) / 255.0
    light = 1.0 - falloff * (xx / width + yy / height) / 2
    if shadow:
        light = light * (1 - shadow * (xx + 0.6 * yy > 1.2 * width))
    photo = np.clip(255 * paper * light + rng.normal(0, 4, paper.shape), 0, 255).astype(np.uint8)
    return png_bytes(Image.fromarray(photo).filter(ImageFilter.GaussianBlur(1.2)), fmt="JPEG", quality=88)


def test_a_sheet_wholly_in_view_on_a_pale_desk_is_read_as_if_it_filled_the_frame(digits):
    """The sheet is the dominant level and the desk only a little darker all round it, across a sharp
    outline: the desk is painted over, and not taken for ink beside the digit."""
    images, _ = digits
    scores = []
    for seed, u8 in enumerate(images):
        on_desk = prep(sheet_on_a_pale_desk(u8, seed, 0.82))
        scores.append(similarity(on_desk, prep(sheet_on_a_pale_desk(u8, seed, None))))
    assert np.median(scores) > 0.95 and min(scores) > 0.85, np.round(scores, 3)


@pytest.mark.parametrize(("shadow", "falloff"), [(0.0, 0.4), (0.15, 0.15)])
def test_light_falling_off_or_a_faint_shadow_is_not_taken_for_a_desk(digits, shadow, falloff):
    """Across a page filling the frame, light falling off is a slope, not an outline, and a faint hard
    shadow leaves part of the frame's edge on the page: the surface step leaves the picture as it is."""
    images, _ = digits
    for seed, u8 in enumerate(images[:4]):
        data = sheet_on_a_pale_desk(u8, seed, None, shadow, falloff)
        gray = np.asarray(Image.open(io.BytesIO(data)).convert("L"), np.float32) / 255.0
        assert surface_removed(gray) is gray


def test_a_drawing_apps_screenshot_reads_like_its_canvas(digits):
    """A white canvas filling most of a gray window, with a title bar and a panel of dark buttons beside
    it: the window, all round the canvas and across a sharp outline, is painted over, buttons and all
    (darker marks on it would otherwise say a shadow, not a surface)."""
    images, _ = digits
    rng = np.random.default_rng(3)
    scores = []
    for u8 in images:
        canvas = np.full((560, 760), 255, np.uint8)
        d = int(rng.integers(250, 450))
        y, x = int(rng.integers(20, 560 - d - 20)), int(rng.integers(20, 760 - d - 20))
        canvas[y : y + d, x : x + d] = 255 - upscale(u8, d)
        window = np.full((700, 1000), int(rng.integers(190, 235)), np.uint8)
        window[:30] -= 30  # the title bar
        for i in range(6):  # the tool panel
            window[70 + 45 * i : 102 + 45 * i, 16:56] = int(rng.integers(60, 160))
        window[70:630, 120:880] = canvas
        scores.append(similarity(prep(png_bytes(window)), prep(png_bytes(canvas))))
    assert np.median(scores) > 0.95 and min(scores) > 0.85, np.round(scores, 3)


def test_light_strokes_on_a_dark_board_are_not_taken_for_a_note(digits):
    """A bold chalk digit encloses dark (a 0's hole, a 9's loop) in a light shape, and a 1 is a light bar:
    neither is a note, so the picture is preprocessed as it is, the board its background."""
    images, _ = digits
    rng = np.random.default_rng(0)
    for u8 in images:
        for bold in (1, 5, 9):
            chalk = np.asarray(
                Image.fromarray(upscale(u8, 160)).filter(ImageFilter.MaxFilter(bold)), np.float64
            )
            board = np.pad(40 + 0.8 * chalk, 20, constant_values=40) + rng.normal(0, 5, (200, 200))
            picture = np.clip(board, 0, 255).astype(np.uint8)
            as_is = to_mnist(picture.astype(np.float32) / 255.0)  # no table step
            assert similarity(prep(png_bytes(picture)), as_is) > 0.99


def chalk_on_a_board(
    u8: np.ndarray, share: float, seed: int, wall: float, falloff: float = 0.0, right: float = 0.0
) -> bytes:
    """A phone photo (1200x900) of the digit chalked on a dark board (0.18) covering ``share`` of the
    frame, tilted up to 8 degrees, with a wall ``wall`` light round it; the light falls off across the
    frame by ``falloff`` of its level; the board's centre ``right`` of the frame's width right of its
    middle. Blur, grain, JPEG."""
    rng = np.random.default_rng(seed)
    height, width = 900, 1200
    picture = np.full((height, width), 255.0 * wall)
    h, w = int(np.sqrt(share) * height), int(np.sqrt(share) * width)
    board = np.full((h, w), 0.18 * 255)
    d = h // 2
    y, x = (h - d) // 2, (w - d) // 2
    board[y : y + d, x : x + d] += (0.85 * 255 - board[y : y + d, x : x + d]) * upscale(u8, d) / 255.0
    angle = rng.uniform(-8, 8)
    tilted = np.asarray(Image.fromarray(board.astype(np.uint8)).rotate(angle, expand=True), np.float64)
    cover = np.asarray(Image.new("L", (w, h), 255).rotate(angle, expand=True), np.float64) / 255
    th, tw = tilted.shape
    top, left = (height - th) // 2, int((0.5 + right) * width) - tw // 2  # negative: it reaches beyond
    rows, cols = slice(max(0, top), min(height, top + th)), slice(max(0, left), min(width, left + tw))
    inner = (slice(rows.start - top, rows.stop - top), slice(cols.start - left, cols.stop - left))
    picture[rows, cols] = picture[rows, cols] * (1 - cover[inner]) + tilted[inner] * cover[inner]
    yy, xx = np.mgrid[0:height, 0:width] / np.array([height, width])[:, None, None]
    towards = rng.uniform(0, 2 * np.pi)
    picture *= 1 - falloff * (np.cos(towards) * xx + np.sin(towards) * yy + 1) / 2
    photo = np.clip(picture + rng.normal(0, 4, picture.shape), 0, 255).astype(np.uint8)
    return png_bytes(Image.fromarray(photo).filter(ImageFilter.GaussianBlur(1.2)), fmt="JPEG", quality=88)


@pytest.mark.parametrize("wall", [0.6, 0.85])
def test_chalk_on_a_board_with_the_wall_round_it_is_read_as_the_digit(digits, wall):
    """The wall, lighter than the board, is then the photo's paper to every other step, and the board a
    huge stroke. Inverted, it is a light sheet on a darker surface with dark writing: the wall is painted
    over with the board's level, and the chalk read as the digit written on paper is. A board filling 90%
    of the frame, tilted, shows the wall in slivers and corners only (failed before: read as the ink)."""
    images, _ = digits
    for share in (0.3, 0.5, 0.8, 0.9):
        scores = []
        for seed, u8 in enumerate(images):
            on_paper = prep(png_bytes(Image.fromarray(255 - upscale(u8, 200))))
            scores.append(similarity(prep(chalk_on_a_board(u8, share, seed, wall)), on_paper))
        assert np.median(scores) > 0.9 and min(scores) > 0.8, (share, np.round(scores, 3))


@pytest.mark.parametrize("wall", [0.6, 0.85])
@pytest.mark.parametrize(("share", "right"), [(0.9, 0.0), (1.2, 0.08)])
def test_chalk_on_a_board_in_light_falling_off_is_read_as_the_digit(digits, wall, share, right):
    """A light wall's light falls off across the frame by far more than a dark table's: inverted, its far
    side is darker than the rest by more than writing on a table would be. A board nearly filling the
    frame (the wall in slivers and corners), or running off it but for a sliver of wall along one side
    (under a quarter of the frame's border), is still found and its chalk read (both failed before)."""
    images, _ = digits
    scores = []
    for seed, u8 in enumerate(images):
        on_paper = prep(png_bytes(Image.fromarray(255 - upscale(u8, 200))))
        photo = chalk_on_a_board(u8, share, seed, wall, falloff=0.3, right=right)
        scores.append(similarity(prep(photo), on_paper))
    assert np.median(scores) > 0.9 and min(scores) > 0.8, np.round(scores, 3)


def test_the_shadowed_part_of_a_page_is_not_taken_for_a_board(digits):
    """A hard shadow across a page, inverted, is a light region on a darker surface, and the digit's
    paper beside or inside it is lighter writing on it: a board, but for the digit's ink, which is much
    darker than the shadow (nothing on a board is darker than the board). So the picture is never read
    inverted; and the inverted picture did offer such a surface in some of them."""
    images, _ = digits
    offered = 0
    for seed in range(4):
        for k, u8 in enumerate(images):
            gray = to_gray(Image.open(io.BytesIO(corrupt("hard_shadow", u8, 100 * seed + k))))
            coarse, f = coarse_copy(gray)
            if sheet_module._on_surface(gray, coarse, f) is not gray:
                continue  # painted as a sheet on a table: the board step is not reached
            inverted = 1.0 - gray
            offered += sheet_module._on_surface(inverted, 1.0 - coarse, f, board=True) is not inverted
            assert surface_removed(gray) is gray, (seed, k)
    assert offered > 0


def _scanned(u8: np.ndarray, side: int, paper: float, ink: float) -> Image.Image:
    """The digit scanned in gray: ``paper`` where there is no ink, ``ink`` where it is full."""
    gray = paper + (ink - paper) * upscale(u8, side) / 255.0
    return Image.fromarray(np.round(gray * 255).astype(np.uint8))


def test_a_dithered_digit_is_read_as_the_grays_its_dots_draw(digits, monkeypatch):
    """A 1-bit scan, fax or two-colour GIF draws light paper with scattered black dots. Taken as they
    are, the dots are ink round the digit; blurred back to gray, the digit comes out like the same
    digit scanned in gray."""
    images, _ = digits
    shades = [(0.92, 0.1), (0.85, 0.3), (0.97, 0.0)] * 4  # paper, ink

    def scores() -> list[float]:
        scans = [_scanned(u8, 160, paper, ink) for u8, (paper, ink) in zip(images, shades, strict=True)]
        # convert("1") dithers by error diffusion (Floyd-Steinberg)
        return [similarity(prep(png_bytes(s.convert("1"))), prep(png_bytes(s))) for s in scans]

    descreened = scores()
    assert min(descreened) > 0.85 and np.median(descreened) > 0.92, np.round(descreened, 3)
    monkeypatch.setattr("model_store.decode._dots_to_gray", lambda img: img)  # the dots taken as ink
    dotted = scores()
    assert np.median(dotted) < np.median(descreened) - 0.05, np.round(dotted, 3)
    assert min(dotted) < min(descreened) - 0.1, np.round(dotted, 3)


def test_a_drawing_in_two_colours_is_not_blurred(digits):
    """Only dots are undone: a digit drawn in black on white without antialiasing (strokes, no lone
    dots) reaches the preprocessing pixel for pixel."""
    from model_store.decode import decode_image, to_gray

    u8 = digits[0][0]
    two = np.where(upscale(u8, 200) > 128, 0, 255).astype(np.uint8)
    assert np.array_equal(to_gray(decode_image(png_bytes(Image.fromarray(two)), MAX_PIXELS)), two / 255.0)


@pytest.mark.parametrize("fmt", ["PNG", "JPEG", "TIFF"])
def test_a_small_digit_on_a_whole_page_scan_reads_like_the_digit_alone(digits, fmt):
    """A digit 1 cm tall on an A4 page at 300 dpi is 8 px tall in the 256-px copy the picture is looked
    at in, its strokes under a pixel wide: it is cut out of the page anew, at full resolution (a JPEG
    decoded again whole). Left in the copy, 1 cm digits read 83% right and a gray scan's were taken
    for no ink at all."""
    images, _ = digits
    rng = np.random.default_rng(0)
    scores = []
    for u8 in images:
        alone = prep(png_bytes(255 - upscale(u8, 168)))
        page = np.full((3508, 2480), 245, np.uint8)
        top, left = int(rng.integers(300, 3000)), int(rng.integers(300, 2000))
        page[top : top + 168, left : left + 168] = 245 - (0.8 * upscale(u8, 168)).astype(np.uint8)
        stored = Image.fromarray(page)
        save = {"quality": 90} if fmt == "JPEG" else {}
        if fmt == "TIFF":  # a fax or a 1-bit office scan
            stored, save = stored.convert("1", dither=Image.Dither.NONE), {"compression": "group4"}
        scores.append(similarity(prep(png_bytes(stored, fmt=fmt, **save)), alone))
    assert min(scores) > 0.8 and np.median(scores) > 0.9, np.round(scores, 3)


def test_a_page_with_its_digit_large_is_not_cut_anew(digits, monkeypatch):
    """Only writing that the reduced copy leaves too small is cut out again: a digit the copy still
    shows 20 px or more tall is read from the copy (no second decode)."""
    u8 = digits[0][0]
    page = np.full((1200, 1600), 245, np.uint8)
    page[300:900, 500:1100] = 245 - (0.8 * upscale(u8, 600)).astype(np.uint8)
    calls = []
    monkeypatch.setattr(preprocess, "cut_out", lambda *a: calls.append(a))
    prep(png_bytes(page))
    assert calls == []
