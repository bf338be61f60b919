"""Pictures of whole numbers, generated in code (nothing committed), to measure reading them.

Families, each a list of (gray uint8 picture, the number's text), 1-8 digits (the pen's strokes:
``training.pen_numbers``; the sheets, forms and pages they are written on: ``training.number_scenes``):

- ``mnist``: MNIST test digits side by side (gaps, touching, overlapping a little), white on black;
- ``strokes``: pen strokes as the demo pad draws them (thick, round caps, ink on white), with
  broken digits (a 5's flag, a 7's bar, a 4 in two strokes) and natural spacing;
- ``touching``: the same pen strokes with neighbours run together;
- ``fonts``: the number typeset in DejaVu faces with tight and loose tracking;
- ``photos``: the pen strokes on a sheet photographed with a phone, the table in view in two of three;
- ``forms``: the pen strokes on a form: one digit per box of a row of boxes, per cell of a comb field, or
  the number written over an answer line;
- ``notebook``: the pen strokes on a photographed school notebook page: lined or squared paper, a red
  margin line down its side in most pages;
- ``marks``: numbers with punctuation (12.5, 1,000, 3,5, -42, 12:30, 10-20), written with the pen or
  typeset (one in four);
- ``turned_forms``: ``forms`` photographed turned 2-8 degrees either way;
- ``page_scans``: the pen strokes 0.6-1.5 cm tall on a whole page scanned at 150-300 dpi (A5 or A4, up to
  2480x3508), gray with grain, or thresholded to two levels in one scan of three;
- ``cropped``: the pen strokes cropped flush to their ink before sending (the strokes cross the border),
  at 35-100% of the pad's size, light on dark in one of five;
- ``displays``: the number on a seven-segment display (``training.display_fonts``: the DSEG7 faces, printed,
  on an LCD with its unlit segments showing, or lit LEDs), needs ``fonts-dseg``;
- ``display_marks``: the numbers of ``marks`` but the ones with a comma (12.5, -42, 12:30, 10-20) on the
  displays of ``displays``, where a clock, a meter or a scale shows them;
- ``hands``: pen numbers in other hands: each digit one of the page's drawn-digit templates or a writing
  style (a slashed zero, a 1 with flag and foot, a looped 2), not the skeletons of the families above;
  neighbours touching in half the numbers;
- ``plates``: a house number on its plate, photographed on the wall it hangs on
  (``training.plate_numbers``: 1-4 digits, light figures on a dark plate or dark on a light one, a
  printed border in half).

``fit-reader`` fits on ``DIGIT_FAMILIES``: digits alone, on level pages (not ``hands``, kept to check
that a fit does not lean on the pen families' shapes). ``make_drawings`` gives the pen families
(``DRAWN_FAMILIES``) as the page sends them for ``/read``, as their strokes: the same numbers
(``marks``: its numbers written with the pen, all of them).
"""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from model_store.drawing import Drawing

from .display_fonts import LOOKS, display_picture, required_fonts
from .number_scenes import (
    cropped_number,
    form_number,
    notebook_number,
    page_scan_number,
    photo_number,
    turned,
)
from .pen_numbers import (
    as_sent,
    marked_number,
    marked_paths,
    other_hand_paths,
    pad_drawing,
    stroke_number,
    stroke_paths,
)
from .plate_numbers import house_number, plate_number

Sample = tuple[np.ndarray, str]

DIGIT_FAMILIES = ("mnist", "strokes", "touching", "fonts", "photos", "forms", "notebook")
FAMILIES = (*DIGIT_FAMILIES, "marks", "turned_forms", "page_scans", "cropped", "displays", "display_marks",
            "hands", "plates")  # fmt: skip
DRAWN_FAMILIES = ("strokes", "touching", "marks", "hands")  # written with the pen: the page sends strokes
FONT_DIR = Path("/usr/share/fonts/truetype/dejavu")
FONTS = ("DejaVuSans.ttf", "DejaVuSans-Bold.ttf", "DejaVuSerif.ttf", "DejaVuSansMono.ttf",
         "DejaVuSansCondensed.ttf", "DejaVuSans-Oblique.ttf", "DejaVuSerif-Bold.ttf")  # fmt: skip


# ----------------------------------------------------------------------------------- mnist, fonts


def mnist_number(text: str, rng: np.random.Generator, pool: dict[int, np.ndarray]) -> np.ndarray:
    """MNIST test digits (uint8 28x28, white on black) side by side, at twice their size."""
    glyphs = []
    for c in text:
        choices = pool[int(c)]
        img = choices[rng.integers(len(choices))]
        cols = np.flatnonzero(img.max(axis=0) > 30)
        glyphs.append(img[:, cols[0] : cols[-1] + 1])
    gaps = [int(rng.choice([-2, -1, 0, 1, 2, 3, 4, 6, 8])) for _ in glyphs[1:]]
    width = sum(g.shape[1] for g in glyphs) + sum(gaps) + 16
    canvas = np.zeros((40, width), dtype=np.uint8)
    x = 8
    for i, g in enumerate(glyphs):
        y = 6 + int(rng.integers(-3, 4))
        region = canvas[y : y + 28, x : x + g.shape[1]]
        np.maximum(region, g, out=region)  # overlapping digits: the ink of both
        x += g.shape[1] + (gaps[i] if i < len(gaps) else 0)
    img = Image.fromarray(canvas).resize((width * 2, 80), Image.Resampling.BILINEAR)
    return np.asarray(img)


def font_number(text: str, rng: np.random.Generator) -> np.ndarray:
    """The number typeset in a DejaVu face, glyph by glyph with random tracking, dark on light."""
    font = ImageFont.truetype(str(FONT_DIR / FONTS[rng.integers(len(FONTS))]), int(rng.integers(60, 110)))
    tracking = rng.uniform(-0.04, 0.25) * font.size
    widths = [font.getlength(c) for c in text]
    width = int(sum(widths) + tracking * (len(text) - 1) + font.size)
    img = Image.new("L", (width, int(font.size * 1.6)), 245)
    draw = ImageDraw.Draw(img)
    x = font.size / 2
    for c, w in zip(text, widths, strict=True):
        draw.text((x, font.size * 0.25), c, fill=20, font=font)
        x += w + tracking
    return np.asarray(img)


def display_number(text: str, rng: np.random.Generator, fonts: list[Path]) -> np.ndarray:
    """The number on a seven-segment display in a random face and look, its digits 40-110 px tall, as
    the picture's gray levels."""
    font, look = fonts[int(rng.integers(len(fonts)))], LOOKS[int(rng.integers(len(LOOKS)))]
    data = display_picture(text, rng, font, look, int(rng.integers(40, 110)))
    return np.asarray(Image.open(io.BytesIO(data)).convert("L"))


# ---------------------------------------------------------------------------------------------- sets


def random_number(rng: np.random.Generator, max_digits: int = 8) -> str:
    n = int(rng.integers(1, max_digits + 1))
    return "".join(str(d) for d in rng.integers(0, 10, n))


def random_marked(rng: np.random.Generator) -> str:
    """A number written with punctuation: a decimal (point or comma), thousands, a negative number, a
    time of day or a range."""

    def digits(n: int, lead: bool = True) -> str:
        first = str(rng.integers(1, 10)) if lead and n > 1 else str(rng.integers(0, 10))
        return first + "".join(str(d) for d in rng.integers(0, 10, n - 1))

    kind = int(rng.integers(6))
    if kind == 0:  # decimal point
        return f"{digits(int(rng.integers(1, 4)))}.{digits(int(rng.integers(1, 3)), False)}"
    if kind == 1:  # decimal comma
        return f"{digits(int(rng.integers(1, 3)))},{digits(int(rng.integers(1, 3)), False)}"
    if kind == 2:  # thousands
        groups = [digits(3, False) for _ in range(int(rng.integers(1, 3)))]
        return ",".join([digits(int(rng.integers(1, 4))), *groups])
    if kind == 3:  # a negative number, whole or decimal
        body = digits(int(rng.integers(1, 4)))
        return f"-{body}" if rng.random() < 0.6 else f"-{body}.{digits(1, False)}"
    if kind == 4:  # a time of day
        return f"{rng.integers(0, 24)}:{rng.integers(0, 60):02d}"
    a = int(rng.integers(1, 100))
    return f"{a}-{a + int(rng.integers(1, 100))}"  # a range


def random_displayed(rng: np.random.Generator) -> str:
    """A number with punctuation as a display shows it: ``random_marked``'s without a comma (a display has
    none: a decimal point, a minus, a time of day, a range)."""
    while "," in (text := random_marked(rng)):
        pass
    return text


def make_family(
    family: str, count: int, seed: int = 0, mnist: tuple[np.ndarray, np.ndarray] | None = None
) -> list[Sample]:
    """``count`` numbers of one family. ``mnist``: test images (N, 28, 28) uint8 and labels."""
    rng = np.random.default_rng([seed, FAMILIES.index(family)])
    make: Callable[[str], np.ndarray]
    if family == "mnist":
        if mnist is None:
            raise ValueError("the mnist family needs the MNIST test images")
        images, labels = mnist
        pool = {d: images[labels == d] for d in range(10)}
        make = lambda t: mnist_number(t, rng, pool)  # noqa: E731
    elif family in ("strokes", "touching"):
        make = lambda t: stroke_number(t, rng, touching=family == "touching")  # noqa: E731
    elif family == "fonts":
        make = lambda t: font_number(t, rng)  # noqa: E731
    elif family == "photos":
        make = lambda t: photo_number(t, rng)  # noqa: E731
    elif family == "forms":
        make = lambda t: form_number(t, rng)  # noqa: E731
    elif family == "notebook":
        make = lambda t: notebook_number(t, rng)  # noqa: E731
    elif family == "turned_forms":
        make = lambda t: turned(form_number(t, rng), rng.uniform(2.0, 8.0) * rng.choice([-1, 1]))  # noqa: E731
    elif family == "marks":
        make = lambda t: font_number(t, rng) if rng.random() < 0.25 else marked_number(t, rng)  # noqa: E731
    elif family == "page_scans":
        make = lambda t: page_scan_number(t, rng)  # noqa: E731
    elif family == "cropped":
        make = lambda t: cropped_number(t, rng)  # noqa: E731
    elif family == "hands":
        make = lambda t: as_sent(other_hand_paths(t, rng))  # noqa: E731
    elif family == "plates":
        make = lambda t: plate_number(t, rng)  # noqa: E731
    elif family in ("displays", "display_marks"):
        fonts = required_fonts()
        make = lambda t: display_number(t, rng, fonts)  # noqa: E731
    else:
        raise ValueError(f"unknown family {family!r}; choose from {FAMILIES}")
    texts = {"marks": random_marked, "display_marks": random_displayed, "plates": house_number}
    pick = texts.get(family, random_number)
    out = []
    for _ in range(count):
        text = pick(rng)
        out.append((make(text), text))
    return out


def make_drawings(family: str, count: int, seed: int = 0) -> list[tuple[Drawing, str]]:
    """``count`` numbers of a pen family (``DRAWN_FAMILIES``) as the demo page sends them to ``/read``:
    their strokes (``model_store.drawing``). ``strokes``, ``touching`` and ``hands``: the numbers
    ``make_family`` draws; ``marks``: numbers with punctuation, all written with the pen (a quarter of
    ``make_family``'s are typeset), so not the same ones."""
    if family not in DRAWN_FAMILIES:
        raise ValueError(f"{family!r} is not drawn with the pen alone; choose from {DRAWN_FAMILIES}")
    rng = np.random.default_rng([seed, FAMILIES.index(family)])
    out = []
    for _ in range(count):
        if family == "marks":
            text = random_marked(rng)
            paths = marked_paths(text, rng)
        elif family == "hands":
            text = random_number(rng)
            paths = other_hand_paths(text, rng)
        else:
            text = random_number(rng)
            paths = stroke_paths(text, rng, touching=family == "touching")
        out.append((pad_drawing(paths), text))
    return out
