"""``evaluate`` and ``compare``: score stored checkpoints on the official test set."""

from __future__ import annotations

import argparse
import json
import logging
import time
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import torch

from model_store import ModelStore
from model_store.drawing import Drawing, preprocess_drawing
from model_store.preprocess import NoInk, preprocess_bytes
from model_store.serving import ServingHead, resolve_device

from .data import load_data
from .engine import evaluate

log = logging.getLogger("training")

UPLOAD_MAX_PIXELS = 25_000_000  # the service's default MAX_IMAGE_PIXELS: uploads are checked as served


def preprocess_uploads(uploads: Iterable[bytes], count: int) -> tuple[np.ndarray, np.ndarray]:
    """``count`` encoded uploads through the serving preprocessing: (count, 28, 28) 0..1 inputs and a mask
    of the pictures it refused as empty (the service answers 422: no digit score)."""
    x = np.zeros((count, 28, 28), np.float32)
    refused = np.zeros(count, bool)
    for i, data in enumerate(uploads):
        try:
            x[i] = preprocess_bytes(data, UPLOAD_MAX_PIXELS)
        except NoInk:
            refused[i] = True
    return x, refused


def preprocess_drawings(drawings: list[Drawing]) -> tuple[np.ndarray, np.ndarray]:
    """Drawings sent as strokes to a one-digit route, through its preprocessing: ``preprocess_uploads``'
    (inputs, refused), none refused (a drawing has its strokes' ink)."""
    x = np.stack([preprocess_drawing(d) for d in drawings]) if drawings else np.zeros((0, 28, 28), np.float32)
    return x.astype(np.float32), np.zeros(len(drawings), bool)


def add_store_args(p: argparse.ArgumentParser, settings) -> None:
    p.add_argument(
        "--store-dir",
        type=Path,
        default=settings.model_store_dir,
        help="model store to read (env MODEL_STORE_DIR)",
    )
    p.add_argument(
        "--data-root",
        type=Path,
        default=settings.data_root,
        help="folder holding MNIST/raw/ (env DATA_ROOT)",
    )
    p.add_argument("--device", default="auto", help="auto, cpu or cuda; default: auto")
    p.add_argument("--limit-test", type=int, help="evaluate on only this many test images")


def serving_heads(args: argparse.Namespace) -> dict[str, ServingHead]:
    """The store's models (or `--models`) on the CPU behind their serving head, calibrated as served."""
    store = ModelStore(args.store_dir)
    models = args.models or store.names()
    if not models:
        raise SystemExit(f"no models in {args.store_dir}")
    heads = {}
    for name in models:
        model, card = store.load(name, "cpu")
        heads[name] = ServingHead(model.eval(), card, store.path(name)).eval()
    return heads


@torch.inference_mode()
def served_outputs(head: ServingHead, x: np.ndarray, batch: int = 500) -> torch.Tensor:
    """(N, 28, 28) 0..1 inputs -> the ServingHead's (N, C + 1) rows: calibrated probabilities, digit score."""
    return torch.cat([head(torch.from_numpy(x[i : i + batch]).unsqueeze(1)) for i in range(0, len(x), batch)])


def answers_of(head: ServingHead, out: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """Served rows -> (classes, not a digit), as the service answers: the top class of each input, and
    whether its digit score is under the checkpoint's threshold (all False without one)."""
    classes = out[:, : head.num_classes].argmax(1).numpy()
    if head.digit_threshold is None:
        return classes, np.zeros(len(out), bool)
    return classes, (out[:, head.num_classes] < head.digit_threshold).numpy()


def served_answers(head: ServingHead, x: np.ndarray, batch: int = 500) -> tuple[np.ndarray, np.ndarray]:
    """(N, 28, 28) 0..1 inputs -> (classes, not a digit), as the service answers (``answers_of``)."""
    return answers_of(head, served_outputs(head, x, batch))


@torch.inference_mode()
def time_per_image(model, device: torch.device, batch: int, image_size: int, repeats: int = 20) -> float:
    """Milliseconds per image at a given batch size (median of repeats)."""
    x = torch.randn(batch, 1, image_size, image_size, device=device)
    for _ in range(3):
        model(x)
    times = []
    for _ in range(repeats):
        if device.type == "cuda":
            torch.cuda.synchronize()
        t = time.perf_counter()
        model(x)
        if device.type == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t)
    return sorted(times)[len(times) // 2] * 1000 / batch


def run_evaluate(args: argparse.Namespace) -> list[dict]:
    device = resolve_device(args.device)
    store = ModelStore(args.store_dir)
    names = args.models or store.names()
    if not names:
        raise SystemExit(f"no models in {args.store_dir}")
    rows = []
    data_cache: dict[str, object] = {}
    for name in names:
        model, card = store.load(name, device)
        ds = card.dataset.get("name", "mnist")
        if ds not in data_cache:
            data_cache[ds] = load_data(ds, args.data_root, limit_test=args.limit_test)
        data = data_cache[ds]
        test = data.test.to(device)
        loss, acc, logits = evaluate(model, test, mean=card.preprocessing.mean, std=card.preprocessing.std)
        row = {"model": name, "arch": card.arch, "params": card.num_params, "test_loss": loss,
               "test_accuracy": acc, "errors": int((logits.argmax(1) != test.labels).sum())}  # fmt: skip
        if getattr(args, "timing", False):
            row["ms_per_image_bs1"] = time_per_image(model, device, 1, card.preprocessing.image_size)
            row["ms_per_image_bs256"] = time_per_image(model, device, 256, card.preprocessing.image_size, 5)
        rows.append(row)
        if getattr(args, "plots_dir", None):
            from .plots import write_all_plots

            write_all_plots(model, test, logits, [], data, Path(args.plots_dir) / name)
        log.info(
            "%s: test loss %.4f accuracy %.4f (%d errors of %d)",
            name,
            loss,
            acc,
            row["errors"],
            len(test),
        )
    return rows


def format_table(rows: list[dict], device: str) -> str:
    nan = float("nan")
    lines = [
        f"| model | arch | params | test loss | test accuracy | errors "
        f"| ms/image bs=1 ({device}) | ms/image bs=256 |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['model']} | {r['arch']} | {r['params']:,} | {r['test_loss']:.4f} "
            f"| {100 * r['test_accuracy']:.2f}% | {r['errors']} "
            f"| {r.get('ms_per_image_bs1', nan):.3f} | {r.get('ms_per_image_bs256', nan):.4f} |"
        )
    return "\n".join(lines)


def run_compare(args: argparse.Namespace) -> str:
    args.models = None
    args.timing = True
    if resolve_device(args.device).type == "cpu":
        torch.set_num_threads(max(1, torch.get_num_threads()))
    rows = run_evaluate(args)
    table = format_table(rows, resolve_device(args.device).type)
    if args.output:
        Path(args.output).write_text(json.dumps(rows, indent=2) + "\n")
    return table
