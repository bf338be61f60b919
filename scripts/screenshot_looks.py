"""Checks the screenshot steps were not chosen on one look: MNIST test digits drawn in a drawing app and
sent as a screenshot of it, read through the served path (``preprocess_bytes`` -> ``ServingHead``).
Prints the share read right (and called "not a digit") per model:

- by look of `robustness`'s ``app_screenshot`` (``training.screen_corruptions``): a phone's light theme, its
  dark theme with a dark or a white canvas, a desktop window's light or dark theme;
- in six layouts that generator never draws: a rounded canvas with a drop shadow, an off-white canvas with
  grain, a dotted canvas, a tablet's side panel, a canvas with a border line, a browser window round a web
  page's small black canvas (30% of them sent as JPEG).

    .venv/bin/python scripts/screenshot_looks.py --data-root .devdata            # 400 digits, seed 1000
    .venv/bin/python scripts/screenshot_looks.py --data-root .devdata --count 200 --seed 7
"""

from __future__ import annotations

import argparse
import io
from collections.abc import Callable

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

from training.data import load_split
from training.evaluate import answers_of, preprocess_uploads, served_outputs, serving_heads
from training.screen_corruptions import screenshot_of

RGB = tuple[int, int, int]


def look_of(data: bytes) -> str:
    """Which look ``screenshot_of`` drew, read off the picture: a desktop window is wider than tall; its
    theme is its status line's colour, a phone's its gesture bar's; a phone's dark canvas is dark at its
    left edge halfway down."""
    gray = np.asarray(Image.open(io.BytesIO(data)).convert("L"))
    h, w = gray.shape
    if w > h:
        return "desktop, " + ("dark" if gray[h - 2, w - 3] < 128 else "light")
    if gray[h - 2, w // 2] >= 128:
        return "phone, light"
    return "phone, dark, " + ("dark canvas" if gray[h // 2, 2] < 128 else "white canvas")


def _written(shot: Image.Image, glyph: np.ndarray, box: tuple[float, ...], pen: RGB,
             rng: np.random.Generator) -> Image.Image:  # fmt: skip
    """The glyph (white ink on black) written with ``pen`` at 40-80% of the box's shorter side."""
    x0, y0, x1, y1 = box
    side = int(min(x1 - x0, y1 - y0) * rng.uniform(0.4, 0.8))
    cover = np.asarray(Image.fromarray(glyph).resize((side, side), Image.Resampling.BICUBIC), np.float32)
    cover = cover[..., None] / 255
    left = int(rng.integers(int(x0), max(int(x0), int(x1) - side) + 1))
    top = int(rng.integers(int(y0), max(int(y0), int(y1) - side) + 1))
    region = np.asarray(shot.crop((left, top, left + side, top + side)), np.float32)
    out = region * (1 - cover) + np.asarray(pen, np.float32) * cover
    shot.paste(Image.fromarray(np.round(out).astype(np.uint8)), (left, top))
    return shot


def _icons(draw: ImageDraw.ImageDraw, y0: float, y1: float, x0: float, x1: float, n: int, colour: RGB,
           rng: np.random.Generator) -> None:  # fmt: skip
    for k in range(n):
        cx, cy, r = x0 + (k + 0.5) * (x1 - x0) / n, (y0 + y1) / 2, 0.3 * (y1 - y0)
        kind = int(rng.integers(3))
        if kind == 0:
            draw.ellipse([cx - r, cy - r, cx + r, cy + r], outline=colour, width=3)
        elif kind == 1:
            draw.rectangle([cx - r, cy - r, cx + r, cy + r], fill=colour)
        else:
            draw.line([cx - r, cy + r, cx + r, cy - r], colour, 4)


def rounded_shadow(glyph: np.ndarray, rng: np.random.Generator) -> Image.Image:
    w, h = 1200, 900
    back = (230, 230, 235) if rng.random() < 0.5 else (40, 40, 44)
    shot = Image.new("RGB", (w, h), back)
    fore = (90, 90, 90) if back[0] > 128 else (200, 200, 200)
    _icons(ImageDraw.Draw(shot), 10, 90, 20, w - 20, 8, fore, rng)
    box = (80, 130, w - 80, h - 60)
    shadow = Image.new("L", (w, h), 0)
    ImageDraw.Draw(shadow).rounded_rectangle([b + 8 for b in box], 24, fill=120)
    shot.paste((0, 0, 0), mask=shadow.filter(ImageFilter.GaussianBlur(10)))
    ImageDraw.Draw(shot).rounded_rectangle(box, 24, fill=(255, 255, 255))
    return _written(shot, glyph, (box[0] + 40, box[1] + 40, box[2] - 40, box[3] - 40), (20, 20, 20), rng)


def off_white(glyph: np.ndarray, rng: np.random.Generator) -> Image.Image:
    w, h = 800, 1400
    shot = Image.new("RGB", (w, h), (245, 240, 230))
    draw = ImageDraw.Draw(shot)
    draw.rectangle([0, 0, w, 120], (70, 110, 170))
    _icons(draw, 40, 120, 20, w - 20, 6, (255, 255, 255), rng)
    draw.rectangle([0, h - 160, w, h], (225, 220, 210))
    _icons(draw, h - 150, h - 20, 30, w - 30, 7, (60, 60, 60), rng)
    pixels = np.asarray(shot, np.float32)
    pixels[120 : h - 160] += rng.normal(0, 1.5, pixels[120 : h - 160].shape)  # the paper's grain
    shot = Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8))
    return _written(shot, glyph, (40, 160, w - 40, h - 200), (30, 30, 120), rng)


def dotted(glyph: np.ndarray, rng: np.random.Generator) -> Image.Image:
    w, h = 1400, 1000
    shot = Image.new("RGB", (w, h), (250, 250, 250))
    draw = ImageDraw.Draw(shot)
    draw.rectangle([0, 0, w, 100], (235, 235, 240))
    _icons(draw, 20, 100, 20, w - 20, 10, (70, 70, 70), rng)
    for y in range(140, h, 40):
        for x in range(20, w, 40):
            draw.ellipse([x - 2, y - 2, x + 2, y + 2], (200, 200, 205))
    return _written(shot, glyph, (60, 140, w - 60, h - 40), (0, 0, 0), rng)


def tablet_panel(glyph: np.ndarray, rng: np.random.Generator) -> Image.Image:
    w, h = 1600, 1100
    dark = rng.random() < 0.5
    shot = Image.new("RGB", (w, h), (30, 30, 30) if dark else (242, 242, 247))
    draw = ImageDraw.Draw(shot)
    fore = (220, 220, 220) if dark else (50, 50, 50)
    draw.rectangle([0, 0, 260, h], (45, 45, 45) if dark else (230, 230, 235))
    for k in range(6):  # the pages' thumbnails
        draw.rounded_rectangle([20, 40 + k * 170, 240, 180 + k * 170], 12, outline=fore, width=3)
    _icons(draw, 0, 80, 280, w, 9, fore, rng)
    draw.rectangle([280, 100, w - 20, h - 20], (255, 255, 255))
    return _written(shot, glyph, (320, 140, w - 60, h - 60), (0, 0, 0), rng)


def bordered(glyph: np.ndarray, rng: np.random.Generator) -> Image.Image:
    w, h = 1000, 800
    shot = Image.new("RGB", (w, h), (200, 200, 200))
    draw = ImageDraw.Draw(shot)
    _icons(draw, 0, 70, 10, w - 10, 8, (40, 40, 40), rng)
    draw.rectangle([40, 90, w - 40, h - 40], (255, 255, 255), outline=(0, 0, 0), width=2)
    return _written(shot, glyph, (80, 130, w - 80, h - 80), (0, 0, 0), rng)


def web_page(glyph: np.ndarray, rng: np.random.Generator) -> Image.Image:
    w, h = 1280, 900
    shot = Image.new("RGB", (w, h), (255, 255, 255))
    draw = ImageDraw.Draw(shot)
    draw.rectangle([0, 0, w, 80], (222, 225, 230))
    draw.rounded_rectangle([200, 20, w - 200, 60], 18, (255, 255, 255))
    _icons(draw, 20, 60, 10, 150, 3, (90, 90, 90), rng)
    draw.text((100, 110), "Draw a digit", (30, 30, 30))
    side = 280 + int(rng.integers(0, 200))
    x0, y0 = (w - side) // 2, 180
    draw.rectangle([x0, y0, x0 + side, y0 + side], (0, 0, 0))
    draw.rounded_rectangle([x0, y0 + side + 20, x0 + 120, y0 + side + 60], 8, (37, 99, 235))
    return _written(shot, glyph, (x0 + 10, y0 + 10, x0 + side - 10, y0 + side - 10), (255, 255, 255), rng)


LAYOUTS: dict[str, Callable[[np.ndarray, np.random.Generator], Image.Image]] = {
    "rounded canvas, drop shadow": rounded_shadow,
    "off-white canvas with grain": off_white,
    "dotted canvas": dotted,
    "tablet, side panel": tablet_panel,
    "canvas with a border line": bordered,
    "web page, small black canvas": web_page,
}


def encoded(shot: Image.Image, rng: np.random.Generator) -> bytes:
    buf = io.BytesIO()
    shot.save(buf, "JPEG", quality=80) if rng.random() < 0.3 else shot.save(buf, "PNG")
    return buf.getvalue()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--store-dir", default="model_store/checkpoints")
    p.add_argument("--data-root", required=True, help="folder holding MNIST/raw/")
    p.add_argument("--count", type=int, default=400, help="digits; default: 400")
    p.add_argument("--seed", type=int, default=1000, help="default: 1000")
    args = p.parse_args()
    heads = serving_heads(argparse.Namespace(store_dir=args.store_dir, models=[]))
    test = load_split("mnist", args.data_root, train=False, download=False)
    pick = np.random.default_rng(args.seed).permutation(len(test))[: args.count]
    digits, labels = test.images[pick, 0].numpy(), test.labels[pick].numpy()
    print("| screenshots | digits | " + " | ".join(heads) + " |")
    print("|---|---:|" + "---:|" * len(heads))

    def row(name: str, uploads: list[bytes], truth: np.ndarray) -> None:
        x, refused = preprocess_uploads(uploads, len(uploads))
        cells = []
        for head in heads.values():
            classes, not_digit = answers_of(head, served_outputs(head, x))
            cells.append(f"{((classes == truth) & ~refused).mean():.1%} ({not_digit.mean():.1%})")
        print(f"| {name} | {len(uploads)} | " + " | ".join(cells) + " |", flush=True)

    shots = [screenshot_of(d, np.random.default_rng([args.seed, i])) for i, d in enumerate(digits)]
    looks = np.array([look_of(s) for s in shots])
    for look in sorted(set(looks)):
        keep = np.flatnonzero(looks == look)
        row(f"`app_screenshot`, {look}", [shots[i] for i in keep], labels[keep])
    for k, (name, layout) in enumerate(LAYOUTS.items()):
        rngs = [np.random.default_rng([args.seed, i, k]) for i in range(len(digits))]
        row(name, [encoded(layout(d, r), r) for d, r in zip(digits, rngs, strict=True)], labels)


if __name__ == "__main__":
    main()
