"""Checks no reader step was chosen on: `read-eval`'s numbers seen another way, read through the served
path. Prints how many are read exactly, per family and model.

- ``glare``: photographed on glossy paper, a lamp's or the flash's highlight over part of them
  (``training.photo_corruptions.lamp_highlight``, as `robustness`'s `glare` corruption lights one digit: a
  soft ellipse adding 0.25-0.6 of the paper's light to paper and ink alike, clipped at white), as JPEG.
- ``screenshot``: written in a drawing app and sent as a screenshot of it, the app's toolbars, palette and
  bars round the canvas (``training.screen_corruptions``, as `robustness`'s `app_screenshot` draws a digit).

    .venv/bin/python scripts/numbers_seen.py                     # glare, 150 numbers per family, seed 5
    .venv/bin/python scripts/numbers_seen.py --look screenshot --data-root .devdata
    .venv/bin/python scripts/numbers_seen.py --count 300 --seed 6
"""

from __future__ import annotations

import argparse
import io

import numpy as np
from PIL import Image

from training.data import load_split
from training.evaluate import serving_heads
from training.numbers import make_family
from training.photo_corruptions import lamp_highlight
from training.read_eval import read, split_uploads
from training.screen_corruptions import screenshot_of

FAMILIES = {
    "glare": ("fonts", "strokes", "photos", "notebook"),
    "screenshot": ("strokes", "mnist", "marks", "fonts"),
}


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
    away = np.abs(gray.astype(np.float32) - float(np.median(gray)))
    return screenshot_of(np.round(255 * away / max(float(away.max()), 1.0)).astype(np.uint8), rng)


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
    seen = {"glare": glared, "screenshot": screenshot}[args.look]
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
