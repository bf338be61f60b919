"""Digits on a seven-segment display, rendered in a third party's display fonts, to measure reading them.

The fonts are DSEG7 (Keshikan, SIL Open Font License; Debian's ``fonts-dseg``): Classic and Modern, each
with its Mini cut, in six weights and slants, 24 faces. Nothing is fitted on them: the models train on
``training.display_digits``, drawn segment by segment in code, so these measure displays the training
never drew. Three looks, as a phone photographs or a screen shows them:

- ``print``: dark segments on white (a screenshot, a printed display font);
- ``lcd``: dark segments on the gray-green of a liquid-crystal display, its unlit segments faintly
  visible (an 8 under every digit), blurred, grainy, JPEG;
- ``led``: lit red, green, amber or white segments on a dark face, glowing, JPEG.

Without the fonts (``apt install fonts-dseg``) these measurements are skipped with a line that says so.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont

FONT_DIRS = (Path("/usr/share/fonts/truetype/dseg"), Path("/usr/local/share/fonts"), Path.home() / ".fonts")
FACES = ("DSEG7Classic*.ttf", "DSEG7Modern*.ttf")  # not the cartoon faces (SEGG-CHAN) the package adds
LOOKS = ("print", "lcd", "led")
LED_COLOURS = ((255, 40, 30), (60, 255, 90), (255, 170, 20), (235, 240, 255))
INSTALL = "apt install fonts-dseg (the DSEG7 display fonts)"


class DisplayFontsMissing(RuntimeError):
    """The DSEG7 fonts are not on this machine."""


def display_fonts() -> list[Path]:
    """The DSEG7 faces found on this machine (Classic, Modern and their Mini cuts), sorted."""
    found = {
        p.name: p for d in FONT_DIRS if d.is_dir() for pattern in FACES for p in d.rglob(pattern)
    }  # fmt: skip
    return [found[name] for name in sorted(found)]


def required_fonts() -> list[Path]:
    fonts = display_fonts()
    if not fonts:
        raise DisplayFontsMissing(f"no DSEG7 fonts under {', '.join(map(str, FONT_DIRS))}: {INSTALL}")
    return fonts


def display_picture(text: str, rng: np.random.Generator, font_path: Path, look: str, size: int) -> bytes:
    """``text`` (digits, '.', '-', ':') on a display in ``look``, the digits ``size`` px tall: encoded
    bytes as a phone or a screenshot would send them (PNG for ``print``, JPEG otherwise)."""
    font = ImageFont.truetype(str(font_path), size)
    ghost_text = "".join("8" if c.isdigit() else c for c in text)
    left, top, right, bottom = font.getbbox(ghost_text)
    margin = int(size * rng.uniform(0.3, 1.0))
    shape = (right - left + 2 * margin, bottom - top + 2 * margin)
    origin = (margin - left, margin - top)
    if look == "print":
        img = Image.new("L", shape, int(rng.integers(235, 256)))
        ImageDraw.Draw(img).text(origin, text, font=font, fill=int(rng.integers(0, 50)))
        return _encoded(img, "PNG")
    if look == "lcd":
        face = np.array([rng.uniform(150, 200), rng.uniform(165, 210), rng.uniform(140, 185)])
        lit = face * rng.uniform(0.1, 0.35)
        unlit = face - (face - lit) * rng.uniform(0.05, 0.15)
        img = Image.new("RGB", shape, tuple(int(v) for v in face))
        draw = ImageDraw.Draw(img)
        draw.text(origin, ghost_text, font=font, fill=tuple(int(v) for v in unlit))
        draw.text(origin, text, font=font, fill=tuple(int(v) for v in lit))
        img = img.filter(ImageFilter.GaussianBlur(rng.uniform(0.3, 1.2) * size / 60))
        return _encoded(_grainy(img, rng, rng.uniform(2, 6)), "JPEG", int(rng.integers(75, 93)))
    if look == "led":
        colour = np.array(LED_COLOURS[int(rng.integers(len(LED_COLOURS)))], float)
        dark = rng.uniform(5, 35)
        img = Image.new("RGB", shape, (int(dark),) * 3)
        draw = ImageDraw.Draw(img)
        unlit = dark + (colour - dark) * rng.uniform(0.0, 0.08)
        draw.text(origin, ghost_text, font=font, fill=tuple(int(v) for v in unlit))
        draw.text(origin, text, font=font, fill=tuple(int(v) for v in colour))
        glow = img.filter(ImageFilter.GaussianBlur(size * rng.uniform(0.03, 0.08)))
        img = Image.blend(img, glow, rng.uniform(0.2, 0.5))
        return _encoded(_grainy(img, rng, rng.uniform(1, 5)), "JPEG", int(rng.integers(75, 93)))
    raise ValueError(f"unknown look {look!r}; choose from {LOOKS}")


def _grainy(img: Image.Image, rng: np.random.Generator, sigma: float) -> Image.Image:
    x = np.asarray(img, np.float32) + rng.normal(0, sigma, (img.height, img.width, 1))
    return Image.fromarray(np.clip(x, 0, 255).astype(np.uint8))


def _encoded(img: Image.Image, fmt: str, quality: int = 90) -> bytes:
    buf = io.BytesIO()
    img.save(buf, fmt, quality=quality) if fmt == "JPEG" else img.save(buf, fmt)
    return buf.getvalue()
