"""Seven-segment digits for training: the digits of clocks, meters, scales, pumps and calculators.

A photo of a meter or a clock is a photo of digits, and MNIST has none of them: its models read a
segment display's 6 (a 5 with one more bar) as a 5 and call its square 0 "not a digit". Here each digit
is lit from the seven segments of a display whose geometry is drawn at random: width, bar thickness, the
gap between the bars, slant, the bars' ends (pointed, square or bevelled), the variants displays differ
in (a 6 and a 9 with or without their tails, a 7 with or without its left bar), and the unlit bars a
liquid-crystal display still shows faintly. Drawn dark on white and fitted to 28x28 by the serving
preprocessing, as ``training.pen_digits`` draws its digits, which mixes these in.

The segment shapes are drawn here and nowhere else; what measures them (``training.display_eval``)
renders a third party's display fonts instead, so nothing is tuned to this generator's look.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

from model_store.preprocess import to_mnist

CANVAS = 96  # px, as the pen digits'
SUPERSAMPLE = 3
# Segments a-g: a top, b upper right, c lower right, d bottom, e lower left, f upper left, g middle.
LIT: dict[int, list[str]] = {
    0: ["abcdef"],
    1: ["bc"],
    2: ["abged"],
    3: ["abgcd"],
    4: ["fgbc"],
    5: ["afgcd"],
    6: ["afgedc", "fgedc"],  # with or without its top bar
    7: ["abc", "abcf"],  # with or without the left bar
    8: ["abcdefg"],
    9: ["abcdfg", "abcfg"],  # with or without its bottom bar
}
# Each segment from one corner of the display's box to another: (x, y) in widths and heights.
ENDS = {
    "a": ((0, 0), (1, 0)),
    "b": ((1, 0), (1, 0.5)),
    "c": ((1, 0.5), (1, 1)),
    "d": ((0, 1), (1, 1)),
    "e": ((0, 0.5), (0, 1)),
    "f": ((0, 0), (0, 0.5)),
    "g": ((0, 0.5), (1, 0.5)),
}
BAR_ENDS = ("pointed", "square", "bevelled")


def _bar(p0: np.ndarray, p1: np.ndarray, thick: float, end: str) -> list[tuple[float, float]]:
    """The outline of one bar from p0 to p1, ``thick`` wide; pointed or bevelled ends stay between them."""
    length = float(np.linalg.norm(p1 - p0))
    u = (p1 - p0) / length
    n = np.array([-u[1], u[0]]) * thick / 2
    inset = u * min(thick / 2, 0.4 * length)
    if end == "square":
        pts = [p0 + n, p1 + n, p1 - n, p0 - n]
    elif end == "pointed":
        pts = [p0, p0 + inset + n, p1 - inset + n, p1, p1 - inset - n, p0 + inset - n]
    else:  # bevelled: one long side shorter than the other, as the bars of a classic LCD
        bevel = u * min(thick / 2, 0.3 * length)
        pts = [p0 + n, p1 + n, p1 - bevel - n, p0 + bevel - n]
    return [(float(x), float(y)) for x, y in pts]


@dataclass(frozen=True)
class Display:
    """A display's geometry, in px: each digit ``width`` x ``height``, its bars ``thick``, shortened by
    ``gap`` at each end, leaning right by ``slant`` per unit of height, with ``end``-shaped ends."""

    height: float
    width: float
    thick: float
    gap: float
    slant: float
    end: str


def random_display(rng: np.random.Generator) -> Display:
    height = rng.uniform(56, 74)
    width = height * rng.uniform(0.42, 0.66)
    thick = min(height * rng.uniform(0.07, 0.17), 0.3 * width)
    gap = height * rng.choice([0.0, rng.uniform(0.005, 0.06)])
    slant = rng.uniform(0.0, 0.22) if rng.random() < 0.7 else 0.0
    return Display(height, width, thick, gap, slant, BAR_ENDS[int(rng.integers(len(BAR_ENDS)))])


def draw_lit(
    draw: ImageDraw.ImageDraw, lit: str, display: Display, left: float, top: float, ink: int,
    unlit: int | None = None, scale: int = 1,
) -> None:  # fmt: skip
    """The bars ``lit`` (of "abcdefg") of one digit whose box starts at (left, top), in ``ink``; the
    others in ``unlit`` (an LCD's faint bars) unless it is None; coordinates times ``scale``."""
    d = display
    # The bars' centre lines run thick / 2 inside the box, so the lit digit spans width x height.
    box_w, box_h = d.width - d.thick, d.height - d.thick
    left, top = left + d.thick / 2, top + d.thick / 2
    for name, ((x0, y0), (x1, y1)) in ENDS.items():
        if name not in lit and unlit is None:
            continue
        p0 = np.array([left + x0 * box_w, top + y0 * box_h])
        p1 = np.array([left + x1 * box_w, top + y1 * box_h])
        u = (p1 - p0) / np.linalg.norm(p1 - p0)
        p0, p1 = p0 + u * d.gap, p1 - u * d.gap
        for p in (p0, p1):  # slanted to the right: the higher, the further right
            p[0] += d.slant * (top + box_h - p[1])
        fill = ink if name in lit else unlit
        draw.polygon([(x * scale, y * scale) for x, y in _bar(p0, p1, d.thick, d.end)], fill=fill)


def display_canvas(digit: int, rng: np.random.Generator) -> Image.Image:
    """One digit lit on a seven-segment display of random geometry: dark on white, CANVAS px square."""
    lit = LIT[digit][int(rng.integers(len(LIT[digit])))]
    display = random_display(rng)
    ghost = rng.uniform(0.04, 0.14) if rng.random() < 0.25 else 0.0  # an LCD's unlit bars
    img = Image.new("L", (CANVAS * SUPERSAMPLE, CANVAS * SUPERSAMPLE), 255)
    ink = int(rng.integers(0, 60))
    unlit = round(255 - ghost * (255 - ink)) if ghost else None
    left = (CANVAS - display.width - display.slant * display.height) / 2
    top = (CANVAS - display.height) / 2
    draw_lit(ImageDraw.Draw(img), lit, display, left, top, ink, unlit, SUPERSAMPLE)
    img = img.resize((CANVAS, CANVAS), Image.Resampling.LANCZOS)
    if rng.random() < 0.5:
        img = img.filter(ImageFilter.GaussianBlur(rng.uniform(0.3, 1.2)))
    return img


def display_digit(digit: int, rng: np.random.Generator) -> np.ndarray:
    """``display_canvas`` as the serving preprocessing sees it: (28, 28) uint8, white ink on black."""
    fitted = to_mnist(np.asarray(display_canvas(digit, rng), np.float32) / 255.0)
    return np.round(fitted * 255).astype(np.uint8)
