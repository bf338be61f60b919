"""``read-eval``: how often stored models read a whole number exactly, through the served pipeline.

Each picture of ``training.numbers`` is PNG-encoded and split by ``model_store.segment.segment_bytes``
(what ``POST /v1/models/{name}/read`` runs); every digit is answered by the model's ``ServingHead``.
A number counts as read when the digits, in order, spell it exactly (a missed or extra digit is an
error). Prints a markdown table: exact-read rate per family and model, and the digit-count rate.
"""

from __future__ import annotations

import argparse
import io
import logging
import time

import numpy as np
import torch
from PIL import Image

from model_store import ModelStore
from model_store.preprocess import ImageError
from model_store.segment import DigitCrop, segment_bytes
from model_store.serving import ServingHead

from .data import load_split
from .evaluate import add_store_args
from .numbers import FAMILIES, make_family

log = logging.getLogger("training")

MAX_PIXELS = 25_000_000
TARGET = 0.97  # exact reads on the pen-stroke family


def add_read_eval_args(p: argparse.ArgumentParser, settings) -> None:
    p.add_argument("models", nargs="*", help="model names (default: every model in the store)")
    add_store_args(p, settings)
    p.add_argument("--count", type=int, default=300, help="numbers per family; default: 300")
    p.add_argument("--families", nargs="+", choices=FAMILIES, default=list(FAMILIES),
                   help="families to read; default: all")  # fmt: skip
    p.add_argument("--seed", type=int, default=0, help="generator seed; default: 0")


def png(image: np.ndarray) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(image).save(buf, "PNG")
    return buf.getvalue()


def split_all(samples: list[tuple[np.ndarray, str]]) -> list[list[DigitCrop]]:
    """Every picture's digits (an empty list where the segmenter refused the picture)."""
    out = []
    for image, _ in samples:
        try:
            out.append(segment_bytes(png(image), MAX_PIXELS))
        except ImageError:
            out.append([])
    return out


@torch.inference_mode()
def read(head: ServingHead, crops: list[list[DigitCrop]], batch: int = 512) -> list[str]:
    """The text each model reads: all digits of all pictures in batches, then regrouped."""
    flat = [c.pixels for cs in crops for c in cs]
    if not flat:
        return ["" for _ in crops]
    x = torch.from_numpy(np.stack(flat)).unsqueeze(1)
    digits = torch.cat([head(x[i : i + batch])[:, : head.num_classes].argmax(1)
                        for i in range(0, len(x), batch)]).tolist()  # fmt: skip
    texts, k = [], 0
    for cs in crops:
        texts.append("".join(str(d) for d in digits[k : k + len(cs)]))
        k += len(cs)
    return texts


def run_read_eval(args: argparse.Namespace) -> dict[str, dict[str, float]]:
    store = ModelStore(args.store_dir)
    models = args.models or [c.name for c in store.list()]
    if not models:
        raise SystemExit(f"no models in {args.store_dir}")
    heads = {}
    for m in models:
        model, card = store.load(m, "cpu")
        heads[m] = ServingHead(model.eval(), card, store.path(m)).eval()
    mnist = None
    if "mnist" in args.families:
        test = load_split("mnist", args.data_root, train=False, download=False)
        mnist = (test.images[:, 0].numpy(), test.labels.numpy())
    rates: dict[str, dict[str, float]] = {}
    lines = [f"| family | numbers | digit count right | {' | '.join(models)} |",
             f"|---|---:|---:|{'---:|' * len(models)}"]  # fmt: skip
    for family in args.families:
        samples = make_family(family, args.count, args.seed, mnist)
        t0 = time.perf_counter()
        crops = split_all(samples)
        per_picture_ms = 1000 * (time.perf_counter() - t0) / len(samples)
        counted = np.mean([len(c) == len(text) for c, (_, text) in zip(crops, samples, strict=True)])
        rates[family] = {}
        for m, head in heads.items():
            texts = read(head, crops)
            right = [t == text for t, (_, text) in zip(texts, samples, strict=True)]
            rates[family][m] = float(np.mean(right))
        log.info("%s: %d numbers, segmentation %.1f ms per picture", family, len(samples), per_picture_ms)
        cells = " | ".join(f"{100 * rates[family][m]:.1f}%" for m in models)
        lines.append(f"| {family} | {len(samples)} | {100 * counted:.1f}% | {cells} |")
    print("\n".join(lines))
    if "strokes" in rates:
        for m in models:
            ok = rates["strokes"][m] >= TARGET
            print(f"{m}: strokes {100 * rates['strokes'][m]:.1f}% (target >= {100 * TARGET:.0f}%: "
                  f"{'pass' if ok else 'FAIL'})")  # fmt: skip
    return rates
