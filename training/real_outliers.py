"""Real pictures that are not digits, as a held-out check of ``is_digit``: Fashion-MNIST's test set.

The digit score's detector is fitted on generated outliers (``training.outliers``: letters, symbols,
shapes, scribbles, noise, several digits, smudges, shaded solid silhouettes standing in for photographed
objects). Real clothes, shoes and bags are never generated nor fitted on, so the share of them called
"not a digit" says how the detector does on real pictures of things it has never seen. Each goes
through the upload path, the item dark on white (``preprocess_bytes`` decides polarity itself), at two
sizes: as stored (28 px, what a client holding the dataset sends) and enlarged to 112 px (a picture of
the item, like the robustness suite's 64-200 px uploads); then the model's ``ServingHead`` with its
threshold.

Needs Fashion-MNIST under the data root (``FashionMNIST/raw/``); without it the check is skipped with a
line that says where to put the files.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from model_store.serving import ServingHead

from .data import FASHION_LABELS, DatasetNotFoundError, load_split
from .drawn import ink_upload
from .evaluate import preprocess_uploads, served_answers

log = logging.getLogger("training")

UPLOAD_SIZES = (28, 112)  # px


def fashion_uploads(items: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """(N, 28, 28) uint8 items, white on black as stored -> model inputs (N, 28, 28) and a mask of the
    pictures the preprocessing refused (no ink found: the service answers 422, not a digit either)."""
    return preprocess_uploads((ink_upload(item, size) for item in items), len(items))


def fashion_check(heads: dict[str, ServingHead], data_root: Path, limit: int, seed: int) -> dict | None:
    """Share of ``limit`` Fashion-MNIST test pictures each model calls "not a digit", overall and per
    class; None when Fashion-MNIST is not on this machine."""
    try:
        test = load_split("fashion-mnist", data_root, train=False, download=False)
    except DatasetNotFoundError:
        log.info("skipping the Fashion-MNIST check (real pictures that are not digits): put its four test "
                 "and train files into %s/", data_root / "FashionMNIST" / "raw")  # fmt: skip
        return None
    pick = np.random.default_rng([seed, 1]).permutation(len(test))[:limit]
    items, labels = test.images[pick, 0].numpy(), test.labels[pick].numpy()
    return {
        f"{size}px": _flag_rates(heads, *fashion_uploads(items, size), labels, size) for size in UPLOAD_SIZES
    }


def _flag_rates(
    heads: dict[str, ServingHead], x: np.ndarray, refused: np.ndarray, labels: np.ndarray, size: int
) -> dict:
    kept = ~refused
    result: dict = {"images": len(x), "refused": int(refused.sum()), "flagged": {}, "per_class": {}}
    for m, head in heads.items():
        not_digit = served_answers(head, x[kept])[1] if kept.any() else np.zeros(0, bool)
        result["flagged"][m] = float(not_digit.mean()) if kept.any() else 0.0
        result["per_class"][m] = {
            FASHION_LABELS[c]: float(not_digit[labels[kept] == c].mean())
            for c in range(len(FASHION_LABELS)) if (labels[kept] == c).any()
        }  # fmt: skip
        log.info("fashion-mnist   %s calls %.1f%% of %d pictures (%d px) not a digit (%d refused as empty)",
                 m, 100 * result["flagged"][m], int(kept.sum()), size, result["refused"])  # fmt: skip
    return result


def markdown(result: dict, models: list[str]) -> str:
    """Per class, model and upload size: the share called not a digit."""
    cols = [(size, m) for size in result for m in models]
    names = " | ".join(f"{m}, {size}" for size, m in cols)
    head = f"| Fashion-MNIST class | {names} |\n|---|{'---:|' * len(cols)}"
    classes = list(result[cols[0][0]]["per_class"][models[0]])
    rows = [
        f"| {c} | " + " | ".join(f"{100 * result[size]['per_class'][m][c]:.1f}" for size, m in cols) + " |"
        for c in classes
    ]
    rows.append("| **all** | " + " | ".join(f"**{100 * result[size]['flagged'][m]:.1f}**" for size, m in cols)
                + " |")  # fmt: skip
    refused = ", ".join(f"{r['refused']} of {r['images']} at {size}" for size, r in result.items())
    return "\n".join([head, *rows, "", f"Refused as empty (the service answers 422): {refused}."])
