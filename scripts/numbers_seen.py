"""Checks no reader step was chosen on: `read-eval`'s numbers seen another way, read through the served
path. Prints how many are read exactly, per family and model.

- ``glare``: photographed on glossy paper, a lamp's or the flash's highlight over part of them
  (``training.photo_corruptions.lamp_highlight``, as `robustness`'s `glare` corruption lights one digit: a
  soft ellipse adding 0.25-0.6 of the paper's light to paper and ink alike, clipped at white), as JPEG.
- ``screenshot``: written in a drawing app and sent as a screenshot of it, the app's toolbars, palette and
  bars round the canvas (``training.screen_corruptions``, as `robustness`'s `app_screenshot` draws a digit).
- ``large_screen``: written on a web demo's canvas (360-520 x 160-240 px), screenshotted whole on a large
  screen at 1x, as `scripts/screenshot_looks.py`'s `large_screen` draws a digit's (``screen_pad``'s small
  canvases).

    .venv/bin/python scripts/numbers_seen.py                     # glare, 150 numbers per family, seed 5
    .venv/bin/python scripts/numbers_seen.py --look screenshot --data-root .devdata
    .venv/bin/python scripts/numbers_seen.py --look large_screen --data-root .devdata
    .venv/bin/python scripts/numbers_seen.py --count 300 --seed 6
"""

from __future__ import annotations

import argparse
import io

import numpy as np
from PIL import Image, ImageDraw

from training.data import load_split
from training.evaluate import serving_heads
from training.numbers import make_family
from training.photo_corruptions import lamp_highlight
from training.read_eval import read, split_uploads
from training.screen_corruptions import screenshot_of, written_on

FAMILIES = {
    "glare": ("fonts", "strokes", "photos", "notebook"),
    "screenshot": ("strokes", "mnist", "marks", "fonts"),
    "large_screen": ("strokes", "mnist", "marks", "fonts"),
}
# The large screen's kinds: the page, the canvas, its outline (or none) and the pen.
SCREEN_KINDS = (
    ((255, 255, 255), (0, 0, 0), None, (255, 255, 255)),
    ((241, 243, 246), (255, 255, 255), None, (0, 0, 0)),
    ((255, 255, 255), (238, 238, 238), None, (0, 0, 0)),
    ((255, 255, 255), (255, 255, 255), (200, 203, 210), (0, 0, 0)),
)


def glared(gray: np.ndarray, rng: np.random.Generator) -> bytes:
    """A gray uint8 picture of a number with a highlight centred on a random pixel of its ink, as JPEG."""
    page = gray.astype(np.float32) / 255.0
    h, w = page.shape
    yy, xx = np.mgrid[0:h, 0:w]
    ys, xs = np.nonzero(page < 0.5)
    k = int(rng.integers(len(ys)))
    highlight = lamp_highlight(yy, xx, (ys[k], xs[k]), rng.uniform(0.1, 0.35) * min(h, w), rng)
    page = 0.85 * page + highlight + 0.015 * rng.standard_normal(page.shape)
    buf = io.BytesIO()
    Image.fromarray((np.clip(page, 0, 1) * 255).astype(np.uint8)).convert("RGB").save(buf, "JPEG", quality=85)
    return buf.getvalue()


def screenshot(gray: np.ndarray, rng: np.random.Generator) -> bytes:
    """A gray uint8 picture of a number (either polarity, on any paper) written in a drawing app: its ink,
    how far each pixel is from the paper (the picture's median), drawn with the app's pen."""
    return screenshot_of(glyph_of(gray), rng)


def glyph_of(gray: np.ndarray) -> np.ndarray:
    """A number's picture (either polarity, any paper) as white ink on black (uint8): how far each pixel
    is from its paper (the median)."""
    away = np.abs(gray.astype(np.float32) - float(np.median(gray)))
    return np.round(255 * (away / max(float(away.max()), 1.0))).astype(np.uint8)


def large_screen(gray: np.ndarray, rng: np.random.Generator) -> bytes:
    """A gray uint8 picture of a number written on a web reader's canvas and screenshotted whole at 1x
    (1920x1080 or 2560x1440): the browser's bar and address field, a heading, the canvas in one of
    SCREEN_KINDS, Clear and Read buttons and the answer as text; as PNG, or as JPEG one in three."""
    w, h = (1920, 1080) if rng.random() < 0.6 else (2560, 1440)
    page, canvas, outline, pen = SCREEN_KINDS[int(rng.integers(len(SCREEN_KINDS)))]
    shot = Image.new("RGB", (w, h), page)
    draw = ImageDraw.Draw(shot)
    draw.rectangle([0, 0, w, 84], (222, 225, 230))
    draw.rounded_rectangle([220, 22, w - 220, 62], 18, (255, 255, 255))
    cw, ch = int(rng.integers(360, 521)), int(rng.integers(160, 241))
    x0, y0 = int(rng.integers(40, w // 3)), 190
    draw.text((x0, 120), "Handwritten number reader", (30, 30, 30))
    draw.rectangle([x0, y0, x0 + cw, y0 + ch], canvas, outline=outline)
    draw.rounded_rectangle([x0, y0 + ch + 20, x0 + 90, y0 + ch + 56], 6, (230, 232, 236))
    draw.rounded_rectangle([x0 + 110, y0 + ch + 20, x0 + 220, y0 + ch + 56], 6, (37, 99, 235))
    draw.text((x0 + cw + 50, y0 + 30), f"Reading: {int(rng.integers(10, 1000))}", (30, 30, 30))
    written_on(shot, glyph_of(gray), (x0 + 20, y0 + 15, x0 + cw - 20, y0 + ch - 15), pen, rng)
    buf = io.BytesIO()
    shot.save(buf, "JPEG", quality=85) if rng.random() < 1 / 3 else shot.save(buf, "PNG")
    return buf.getvalue()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--look", choices=list(FAMILIES), default="glare", help="how the numbers are seen; default: glare"
    )
    p.add_argument("--store-dir", default="model_store/checkpoints")
    p.add_argument("--data-root", default=None, help="folder holding MNIST/raw/ (the mnist family)")
    p.add_argument("--count", type=int, default=150, help="numbers per family; default: 150")
    p.add_argument("--seed", type=int, default=5, help="numbers' seed; default: 5")
    args = p.parse_args()
    heads = serving_heads(argparse.Namespace(store_dir=args.store_dir, models=[]))
    seen = {"glare": glared, "screenshot": screenshot, "large_screen": large_screen}[args.look]
    rng = np.random.default_rng(args.seed)
    print("| family | numbers | " + " | ".join(heads) + " |")
    print("|---|---:|" + "---:|" * len(heads))
    for family in FAMILIES[args.look]:
        if family == "mnist" and args.data_root is None:
            print("| mnist | skipped: it needs --data-root (MNIST's test digits) |")
            continue
        test = load_split("mnist", args.data_root, train=False, download=False) if family == "mnist" else None
        mnist = (test.images[:, 0].numpy(), test.labels.numpy()) if test is not None else None
        samples = make_family(family, args.count, args.seed, mnist)
        pictures = split_uploads([seen(image, rng) for image, _ in samples])
        exact = [np.mean([t == text for t, (_, text) in zip(read(h, pictures), samples, strict=True)])
                 for h in heads.values()]  # fmt: skip
        print(f"| {family} | {len(samples)} | " + " | ".join(f"{e:.1%}" for e in exact) + " |")


if __name__ == "__main__":
    main()
