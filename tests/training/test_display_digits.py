"""Seven-segment digits: the training generator (training.display_digits), its share of the pen digits,
and the display fonts that measure them (training.display_fonts)."""

from __future__ import annotations

import argparse
import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw

from training import display_eval, display_fonts, numbers, pen_digits
from training.display_digits import ENDS, LIT, Display, display_digit, draw_lit
from training.evaluate import serving_heads
from training.numbers import make_family

FONTS = display_fonts.display_fonts()
needs_fonts = pytest.mark.skipif(not FONTS, reason=display_fonts.INSTALL)


def bar_middles(display: Display, left: float, top: float) -> dict[str, tuple[int, int]]:
    box_w, box_h = display.width - display.thick, display.height - display.thick
    x, y = left + display.thick / 2, top + display.thick / 2
    return {
        name: (round(x + (a[0] + b[0]) / 2 * box_w), round(y + (a[1] + b[1]) / 2 * box_h))
        for name, (a, b) in ENDS.items()
    }


@pytest.mark.parametrize("digit", range(10))
def test_each_digit_lights_its_own_bars_and_the_others_only_faintly(digit: int) -> None:
    display = Display(height=100, width=56, thick=12, gap=3, slant=0.0, end="pointed")
    for lit in LIT[digit]:
        img = Image.new("L", (100, 140), 255)
        draw_lit(ImageDraw.Draw(img), lit, display, 20, 20, ink=0, unlit=230)
        px = np.asarray(img)
        for name, (x, y) in bar_middles(display, 20, 20).items():
            assert px[y, x] == (0 if name in lit else 230), (lit, name)


@pytest.mark.parametrize("digit", range(10))
def test_display_digits_are_framed_like_mnist(digit: int) -> None:
    rng = np.random.default_rng(digit)
    for _ in range(30):
        img = display_digit(digit, rng)
        ys, xs = np.nonzero(img > 20)
        assert img.shape == (28, 28) and img.max() == 255
        assert 18 <= max(np.ptp(ys), np.ptp(xs)) + 1 <= 21


def test_a_share_of_the_pen_digits_are_display_digits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pen_digits, "display_digit", lambda d, rng: np.full((28, 28), 7, np.uint8))
    monkeypatch.setattr(pen_digits, "pen_digit", lambda d, rng: np.zeros((28, 28), np.uint8))
    images, labels = pen_digits.pen_digits(2000, seed=1)
    share = float(np.mean(images[:, 0, 0] == 7))
    assert abs(share - pen_digits.DISPLAY_SHARE) < 0.03
    assert labels.tolist() == [i % 10 for i in range(2000)]


@needs_fonts
@pytest.mark.parametrize("look", display_fonts.LOOKS)
def test_a_display_font_renders_each_look(look: str) -> None:
    rng = np.random.default_rng(0)
    data = display_fonts.display_picture("2026", rng, FONTS[0], look, 60)
    gray = np.asarray(Image.open(io.BytesIO(data)).convert("L"), np.float32)
    dark_digits = look != "led"
    ink = gray < 100 if dark_digits else gray > 120
    assert 0.03 < ink.mean() < 0.4  # the lit bars, not the face
    if look == "lcd":  # the unlit bars show, faintly: levels between the face and the ink
        face = np.median(gray)
        assert np.mean((gray < face - 6) & (gray > face - 60)) > 0.01


@needs_fonts
def test_the_displays_family_is_numbers_on_displays() -> None:
    samples = make_family("displays", 6, seed=0)
    assert len(samples) == 6 and all(text.isdigit() for _, text in samples)
    assert all(img.ndim == 2 and img.dtype == np.uint8 for img, _ in samples)


def test_without_the_fonts_the_displays_family_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(numbers, "required_fonts", display_fonts.required_fonts)
    monkeypatch.setattr(display_fonts, "display_fonts", lambda: [])
    with pytest.raises(display_fonts.DisplayFontsMissing, match="fonts-dseg"):
        make_family("displays", 2, seed=0)


@needs_fonts
def test_shipped_models_read_display_digits_in_faces_they_never_trained_on(
    shipped_store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before the display step, the CNN read 72-80% of these and called 28-53% "not a digit"."""
    monkeypatch.setattr(display_eval, "display_fonts", lambda: FONTS[::6])  # 4 faces of 24
    heads = serving_heads(argparse.Namespace(models=["cnn-mnist", "vit-mnist"], store_dir=shipped_store))
    result = display_eval.display_check(heads, repeats=1, seed=0)
    assert result is not None
    for look, r in result["looks"].items():
        assert r["images"] == 40
        for name, s in r["models"].items():
            assert s["read"] >= 0.8 and s["not_a_digit"] <= 0.25, (look, name, s)
    table = display_eval.markdown(result)
    assert all(f"| {look} | 40 |" in table for look in display_fonts.LOOKS)
