"""Pictures that are not a single digit, generated in code (seeded), to measure "is it a digit".

Families: letters and symbols rendered from fonts, shapes and a smiley drawn with the page's pen,
scribbles, noise, several digits side by side, smudges, photographed objects (shaded solid
silhouettes), photographed scenes (dead leaves: shapes of every size hiding each other), and letters
written with the page's pen (``training.pen_letters``' templates in a writer's hand). Each is a
PNG as a user would upload it (dark ink on white paper, or the scene's colours), so it goes through the
real upload preprocessing before the model sees it.

Left out on purpose, because they *are* digits to a reader or to MNIST (flagging them would be wrong):
circles and ellipses (0), single straight lines and the glyphs I l i | ! ( ) [ ] / \\ (1),
O o Q D (0), Z z (2), S s (5), b G (6), B (8), g q (9).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont

from .drawn import PAD_SIZE, Stroke, densify, drawn_digit, ellipse, jitter, png_bytes, render_strokes
from .pen_letters import LETTER_STROKES
from .pen_numbers import writers_hand

LETTERS = "ACEFHKLMNPRTUVWXYacdefhkmnprtuvwxy"
SYMBOLS = "#@%&*+=?$€<>~{}^×÷§¶¥£∞≈πΩ✓★♥☺♪"
# Appended, never reordered: each family draws from its own seeded stream (see generate_outliers).
FAMILIES = (
    "letters", "symbols", "shapes", "scribbles", "noise", "multi_digit", "smudges", "objects", "scenes",
    "pen_letters",
)  # fmt: skip
LETTER_SIZE = 0.6  # of the pad: a pen letter's larger side before the hand's jitter (a drawn digit's height)
DISPLAY_FONTS = "DSEG"  # the seven-segment faces (Debian's fonts-dseg), left out of the outliers
FONT_DIRS = ("/usr/share/fonts", "/usr/local/share/fonts", "/Library/Fonts", "C:/Windows/Fonts")


@dataclass(frozen=True)
class Outlier:
    family: str
    what: str  # e.g. "letter A (DejaVuSans)", "shape star"
    png: bytes


@cache
def font_files() -> tuple[str, ...]:
    """TrueType fonts on this machine (sorted, so a seed picks the same font); may be empty. Not the
    seven-segment display fonts (``training.display_fonts``): their letters are a display's bars, and
    their digits are digits, what the display check measures, not outliers to fit on."""
    found: list[str] = []
    for root in FONT_DIRS:
        if Path(root).is_dir():
            found += [str(p) for p in Path(root).rglob("*.ttf") if not p.name.startswith(DISPLAY_FONTS)]
    return tuple(sorted(found))


@cache
def _load_font(path: str | None, size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    # Pillow's bundled font when the machine has none: CI needs no font packages.
    return ImageFont.truetype(path, size) if path else ImageFont.load_default(size)


def _font(rng: np.random.Generator, size: int) -> tuple[ImageFont.FreeTypeFont | ImageFont.ImageFont, str]:
    size = 10 * (size // 10)  # few sizes, so the loaded fonts can be cached
    files = font_files()
    path = files[rng.integers(len(files))] if files else None
    return _load_font(path, size), Path(path).stem if path else "Pillow default"


def render_text(text: str, rng: np.random.Generator) -> tuple[Image.Image, str]:
    """Dark text on white, random font, size, rotation and position, like a photographed print."""
    font, name = _font(rng, int(rng.integers(110, 200)))
    img = Image.new("L", (2 * PAD_SIZE, PAD_SIZE), 255)
    draw = ImageDraw.Draw(img)
    left, top, right, bottom = draw.textbbox((0, 0), text, font=font)
    x = (img.width - (right - left)) / 2 - left + rng.uniform(-20, 20)
    y = (img.height - (bottom - top)) / 2 - top + rng.uniform(-20, 20)
    draw.text((x, y), text, fill=int(rng.integers(0, 60)), font=font)
    img = img.rotate(rng.uniform(-10, 10), resample=Image.Resampling.BILINEAR, fillcolor=255)
    return img, name


# ------------------------------------------------------------------------------------- shapes


def _polygon(n: int, r: float = 0.3, star: bool = False) -> Stroke:
    k = 2 * n if star else n
    radii = [r if i % 2 == 0 or not star else r * 0.42 for i in range(k)]
    pts = [(0.5 + radii[i] * math.sin(2 * math.pi * i / k), 0.5 - radii[i] * math.cos(2 * math.pi * i / k))
           for i in range(k)]  # fmt: skip
    return pts + pts[:2]  # closed, overshooting like a pen


def _heart() -> Stroke:
    ts = np.linspace(0, 2 * math.pi, 60)
    return [(0.5 + 0.018 * 16 * math.sin(t) ** 3,
             0.47 - 0.018 * (13 * math.cos(t) - 5 * math.cos(2 * t) - 2 * math.cos(3 * t) - math.cos(4 * t)))
            for t in ts]  # fmt: skip


def _spiral() -> Stroke:
    ts = np.linspace(0, 5 * math.pi, 80)
    return [(0.5 + 0.3 * t / ts[-1] * math.cos(t), 0.5 + 0.3 * t / ts[-1] * math.sin(t)) for t in ts]


SHAPES: dict[str, list[Stroke]] = {
    "triangle": [_polygon(3)],
    "square": [[(0.25, 0.25), (0.75, 0.25), (0.75, 0.75), (0.25, 0.75), (0.25, 0.25), (0.5, 0.25)]],
    "star": [_polygon(5, 0.34, star=True)],
    "cross": [[(0.25, 0.25), (0.75, 0.75)], [(0.75, 0.25), (0.25, 0.75)]],
    "plus": [[(0.5, 0.2), (0.5, 0.8)], [(0.2, 0.5), (0.8, 0.5)]],
    "heart": [_heart()],
    "arrow": [[(0.2, 0.5), (0.8, 0.5)], [(0.6, 0.32), (0.8, 0.5), (0.6, 0.68)]],
    "spiral": [_spiral()],
    "hash": [[(0.38, 0.2), (0.34, 0.8)], [(0.66, 0.2), (0.62, 0.8)],
             [(0.2, 0.4), (0.8, 0.4)], [(0.2, 0.62), (0.8, 0.62)]],
    "smiley": [ellipse(0.5, 0.5, 0.34, 0.34), [(0.39, 0.4)], [(0.61, 0.4)],
               [(0.36, 0.6), (0.43, 0.68), (0.5, 0.7), (0.57, 0.68), (0.64, 0.6)]],
    "house": [[(0.25, 0.8), (0.25, 0.45), (0.5, 0.2), (0.75, 0.45), (0.75, 0.8), (0.25, 0.8)]],
}  # fmt: skip


def shape(rng: np.random.Generator) -> tuple[Image.Image, str]:
    name = list(SHAPES)[rng.integers(len(SHAPES))]
    strokes = jitter(SHAPES[name], rng, scale=(0.7, 1.25), degrees=15)
    if rng.random() < 0.3 and name not in ("cross", "plus", "arrow", "hash", "smiley", "spiral"):
        img = Image.new("L", (PAD_SIZE, PAD_SIZE), 255)  # a filled (clip-art) version
        ImageDraw.Draw(img).polygon([(x * PAD_SIZE, y * PAD_SIZE) for x, y in strokes[0]], fill=17)
        return img, f"filled {name}"
    return render_strokes([densify(s) for s in strokes]), name


def scribble(rng: np.random.Generator) -> tuple[Image.Image, str]:
    """A tangle: 1-3 pen strokes through 8-20 random points each (fewer points can make a digit)."""
    strokes = [[(float(x), float(y)) for x, y in rng.uniform(0.12, 0.88, (int(rng.integers(8, 21)), 2))]
               for _ in range(int(rng.integers(1, 4)))]  # fmt: skip
    return render_strokes(strokes, stroke_fraction=rng.uniform(0.03, 0.08)), f"{len(strokes)} strokes"


def noise(rng: np.random.Generator) -> tuple[Image.Image, str]:
    kind = ("uniform", "gaussian", "salt-and-pepper", "blocks")[rng.integers(4)]
    side = int(rng.choice([28, 64, 280]))
    if kind == "uniform":
        x = rng.uniform(0, 255, (side, side))
    elif kind == "gaussian":
        x = rng.normal(rng.uniform(60, 200), rng.uniform(20, 70), (side, side))
    elif kind == "salt-and-pepper":
        x = np.where(rng.random((side, side)) < rng.uniform(0.05, 0.4), 0.0, 255.0)
    else:
        cells = rng.uniform(0, 255, (int(rng.integers(3, 9)),) * 2)
        x = np.kron(cells, np.ones((side // len(cells) + 1,) * 2))[:side, :side]
    return Image.fromarray(np.clip(x, 0, 255).astype(np.uint8), "L"), f"{kind} {side}px"


def multi_digit(rng: np.random.Generator) -> tuple[Image.Image, str]:
    """2-4 digits side by side: drawn with the pen on a wide pad, or printed from a font."""
    n = int(rng.integers(2, 5))
    digits = rng.integers(0, 10, n)
    text = "".join(map(str, digits))
    if rng.random() < 0.4:
        img, font = render_text(text, rng)
        return img, f"printed {text} ({font})"
    canvas = Image.new("L", (PAD_SIZE * n, PAD_SIZE), 255)
    for i, d in enumerate(digits):
        canvas.paste(drawn_digit(int(d), rng), (i * PAD_SIZE + int(rng.integers(-40, 41)), 0), None)
    scale = rng.uniform(0.55, 0.8)  # the digits overlap their neighbours' margins a little
    canvas = canvas.resize((int(canvas.width * scale), PAD_SIZE), Image.Resampling.BILINEAR)
    return canvas, f"drawn {text}"


def smudge(rng: np.random.Generator) -> tuple[Image.Image, str]:
    """Soft blobs: a thumb, a coffee stain, an eraser mark; dark on white, heavily blurred."""
    img = Image.new("L", (PAD_SIZE, PAD_SIZE), 255)
    draw = ImageDraw.Draw(img)
    count = int(rng.integers(1, 6))
    for _ in range(count):
        cx, cy = rng.uniform(60, 220, 2)
        rx, ry = rng.uniform(15, 70, 2)
        draw.ellipse((cx - rx, cy - ry, cx + rx, cy + ry), fill=int(rng.integers(0, 150)))
    return img.filter(ImageFilter.GaussianBlur(float(rng.uniform(6, 25)))), f"{count} blobs"


def _silhouette(rng: np.random.Generator) -> Image.Image:
    """A solid "thing": 2-5 overlapping ellipses, boxes and polygons as one mask (255 inside), between
    1:2 and 2:1 and without holes, so that no mask is a bar or a ring (a marker-drawn 1 or 0)."""
    for _ in range(20):
        mask = Image.new("L", (PAD_SIZE, PAD_SIZE), 0)
        draw = ImageDraw.Draw(mask)
        for _ in range(int(rng.integers(2, 6))):
            cx, cy = rng.uniform(0.3, 0.7, 2) * PAD_SIZE
            rx, ry = rng.uniform(0.08, 0.3, 2) * PAD_SIZE
            _random_shape(draw, rng, (cx, cy), (rx, ry), 255)
        left, top, right, bottom = mask.getbbox() or (0, 0, 1, 1)
        if 0.5 <= (right - left) / max(1, bottom - top) <= 2.0 and not _has_hole(mask):
            break
    return mask


def _random_shape(
    draw: ImageDraw.ImageDraw,
    rng: np.random.Generator,
    centre: tuple[float, float],
    radii: tuple[float, float],
    fill: int | tuple[int, int, int],
) -> None:
    """An ellipse, a box or a polygon of 3-7 corners, ``radii`` across from ``centre``."""
    (cx, cy), (rx, ry) = centre, radii
    kind = int(rng.integers(3))
    if kind == 0:
        draw.ellipse((cx - rx, cy - ry, cx + rx, cy + ry), fill=fill)
    elif kind == 1:
        draw.rectangle((cx - rx, cy - ry, cx + rx, cy + ry), fill=fill)
    else:
        angles = np.sort(rng.uniform(0, 2 * math.pi, int(rng.integers(3, 8))))
        draw.polygon([(cx + rx * math.cos(a), cy + ry * math.sin(a)) for a in angles], fill=fill)


def _has_hole(mask: Image.Image) -> bool:
    """Paper enclosed by the mask: flood the paper in from outside the frame; any left unreached is a hole."""
    flooded = Image.new("L", (mask.width + 2, mask.height + 2), 0)
    flooded.paste(mask, (1, 1))
    ImageDraw.floodfill(flooded, (0, 0), 128)
    return 0 in np.asarray(flooded)


def photographed_object(rng: np.random.Generator) -> tuple[Image.Image, str]:
    """A photo of a thing that is not a digit (a shoe, a mug, a bag): a solid silhouette, shaded by a
    light falling across it, with a smooth surface texture and the camera's grain, on light paper or a
    table. No holes, no inner marks: a dark ring would be a 0."""
    mask = _silhouette(rng)
    yy, xx = np.mgrid[0:PAD_SIZE, 0:PAD_SIZE] / PAD_SIZE
    angle = rng.uniform(0, 2 * math.pi)
    light = (xx - 0.5) * math.cos(angle) + (yy - 0.5) * math.sin(angle)  # -0.7..0.7 across the frame
    cells = int(rng.integers(3, 10))
    texture = _coarse_noise(rng, cells, PAD_SIZE)  # the surface's texture
    tone = rng.uniform(15, 140) + rng.uniform(0, 80) * light + rng.uniform(0, 60) * texture
    paper = rng.uniform(190, 250) + rng.uniform(0, 20) * light
    inside = np.asarray(mask, np.float32) / 255
    img = inside * tone + (1 - inside) * paper + rng.normal(0, rng.uniform(1, 6), inside.shape)
    img = Image.fromarray(np.clip(img, 0, 255).astype(np.uint8), "L")
    return img.filter(
        ImageFilter.GaussianBlur(float(rng.uniform(0.5, 2.0)))
    ), f"object {cells}x{cells} texture"


def photographed_scene(rng: np.random.Generator) -> tuple[Image.Image, str]:
    """A photo of a scene, not of writing: a dead-leaves picture (Lee, Mumford & Huang 2001, a model of
    natural images' statistics), 3-80 shapes in random colours hiding each other, their sizes from a
    power law (few large, more small), under a light falling across the frame, with a surface texture,
    the camera's grain and soft focus; the whole frame or a crop of it, sent at 28-400 px."""
    side = 320
    img = Image.new("RGB", (side, side), _colour(rng))
    draw = ImageDraw.Draw(img)
    count = int(rng.integers(3, 81))
    lo, hi = 0.05 * side, 0.7 * side  # radii with density ~ r^-3 between these (inverse transform)
    radii = (lo**-2 - rng.random(count) * (lo**-2 - hi**-2)) ** -0.5
    for r in np.sort(radii)[::-1]:  # the large ones first, the small ones in front
        cx, cy = rng.uniform(-0.1, 1.1, 2) * side
        ry = r * rng.uniform(0.4, 1.0)
        _random_shape(draw, rng, (cx, cy), (r, ry), _colour(rng))
    yy, xx = np.mgrid[0:side, 0:side] / side
    angle = rng.uniform(0, 2 * math.pi)
    light = (xx - 0.5) * math.cos(angle) + (yy - 0.5) * math.sin(angle)
    texture = _coarse_noise(rng, int(rng.integers(4, 40)), side)
    x = np.asarray(img, np.float32) * (1 + rng.uniform(0, 0.6) * light)[..., None]
    x += rng.uniform(0, 50) * texture[..., None] + rng.normal(0, rng.uniform(1, 8), x.shape)
    img = Image.fromarray(np.clip(x, 0, 255).astype(np.uint8), "RGB")
    img = img.filter(ImageFilter.GaussianBlur(float(rng.uniform(0.3, 2.5))))
    if rng.random() < 0.5:
        s = int(rng.uniform(0.25, 0.8) * side)
        left, top = (int(v) for v in rng.integers(0, side - s, 2))
        img = img.crop((left, top, left + s, top + s))
    size = int(rng.choice([28, 64, 128, 256, 400]))
    return img.resize((size, size), Image.Resampling.BILINEAR), f"scene of {count} shapes, {size}px"


def pen_letter(rng: np.random.Generator) -> tuple[Image.Image, str]:
    """A letter drawn on the page's square pad: one of ``pen_letters``' templates (none a letter a reader
    takes for a digit), as ``drawn_letter`` draws it."""
    ch = list(LETTER_STROKES)[rng.integers(len(LETTER_STROKES))]
    return drawn_letter(LETTER_STROKES[ch], rng), f"pen letter {ch}"


def drawn_letter(template: list[Stroke], rng: np.random.Generator) -> Image.Image:
    """A letter template (``pen_letters``' units) drawn with the page's pen as ``placed_letter`` puts it
    on the pad."""
    return render_strokes(placed_letter(template, rng))


def placed_letter(template: list[Stroke], rng: np.random.Generator) -> list[Stroke]:
    """A letter template in a writer's hand, written as large as a digit is (a small letter too: alone
    on the pad, a person fills it) and placed as the drawn digits are (``drawn.jitter``): its strokes in
    0..1 of the pad."""
    strokes = writers_hand(template, rng)
    pts = np.concatenate([np.asarray(s) for s in strokes])
    lo, hi = pts.min(0), pts.max(0)
    (cx, cy), scale = (lo + hi) / 2, LETTER_SIZE / max(hi - lo)
    centred = [[(0.5 + (x - cx) * scale, 0.5 + (y - cy) * scale) for x, y in s] for s in strokes]
    # The writer's hand has wobbled every point already: the pad's jitter adds none, and a curve's
    # neighbouring points move together (a hand wavers, it does not zigzag). A stroke of a few corners is
    # sampled along its length, as pointer events are.
    return [_steadied(s) if len(s) >= 8 else densify(s) for s in jitter(centred, rng, noise=0.0)]


def _steadied(stroke: Stroke) -> Stroke:
    """Each inner point moved to the mean of itself and its two neighbours; the ends stay."""
    pts = np.asarray(stroke)
    pts[1:-1] = (pts[:-2] + pts[1:-1] + pts[2:]) / 3
    return [(float(x), float(y)) for x, y in pts]


def _colour(rng: np.random.Generator) -> tuple[int, int, int]:
    r, g, b = (int(v) for v in rng.integers(0, 256, 3))
    return r, g, b


def _coarse_noise(rng: np.random.Generator, cells: int, side: int) -> np.ndarray:
    """Noise of ``cells`` x ``cells`` values smoothly enlarged to ``side`` px, -0.5..0.5."""
    small = Image.fromarray(rng.uniform(0, 255, (cells, cells)).astype(np.uint8), "L")
    return np.asarray(small.resize((side, side), Image.Resampling.BICUBIC), np.float32) / 255 - 0.5


def _text_family(chars: str, label: str):
    def make(rng: np.random.Generator) -> tuple[Image.Image, str]:
        ch = chars[rng.integers(len(chars))]
        img, font = render_text(ch, rng)
        return img, f"{label} {ch} ({font})"

    return make


GENERATORS = {
    "letters": _text_family(LETTERS, "letter"),
    "symbols": _text_family(SYMBOLS, "symbol"),
    "shapes": shape,
    "scribbles": scribble,
    "noise": noise,
    "multi_digit": multi_digit,
    "smudges": smudge,
    "objects": photographed_object,
    "scenes": photographed_scene,
    "pen_letters": pen_letter,
}


def generate_outliers(per_family: int = 150, seed: int = 0) -> list[Outlier]:
    """``per_family`` uploads of each family; the same seed gives the same bytes."""
    out = []
    for i, family in enumerate(FAMILIES):
        rng = np.random.default_rng([seed, i])  # one stream per family: adding one changes no other
        for _ in range(per_family):
            img, what = GENERATORS[family](rng)
            out.append(Outlier(family, what, png_bytes(img)))
    return out
