"""A check no reader step was chosen on: `read-eval`'s numbers photographed on glossy paper, a lamp's or
the flash's highlight over part of them (``training.photo_corruptions.lamp_highlight``, as `robustness`'s
`glare` corruption lights one digit: a soft ellipse adding 0.25-0.6 of the paper's light to paper and ink
alike, clipped at white), sent as JPEG and read through the served path. Prints how many are read
exactly, per family and model.

    .venv/bin/python scripts/glare_numbers.py                # 150 numbers per family, seed 5
    .venv/bin/python scripts/glare_numbers.py --count 300 --seed 6
"""

from __future__ import annotations

import argparse
import io

import numpy as np
from PIL import Image

from training.evaluate import serving_heads
from training.numbers import make_family
from training.photo_corruptions import lamp_highlight
from training.read_eval import read, split_uploads

FAMILIES = ("fonts", "strokes", "photos", "notebook")


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


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--store-dir", default="model_store/checkpoints")
    p.add_argument("--count", type=int, default=150, help="numbers per family; default: 150")
    p.add_argument("--seed", type=int, default=5, help="numbers' seed; default: 5")
    args = p.parse_args()
    heads = serving_heads(argparse.Namespace(store_dir=args.store_dir, models=[]))
    rng = np.random.default_rng(args.seed)
    print("| family | numbers | " + " | ".join(heads) + " |")
    print("|---|---:|" + "---:|" * len(heads))
    for family in FAMILIES:
        samples = make_family(family, args.count, args.seed, None)
        pictures = split_uploads([glared(image, rng) for image, _ in samples])
        exact = [np.mean([t == text for t, (_, text) in zip(read(h, pictures), samples, strict=True)])
                 for h in heads.values()]  # fmt: skip
        print(f"| {family} | {len(samples)} | " + " | ".join(f"{e:.1%}" for e in exact) + " |")


if __name__ == "__main__":
    main()
