"""Real digits by other writers, at very low resolution: scikit-learn's 8x8 digits (UCI optdigits).

1,797 digits written by 43 people, scanned, normalised to 32x32 bitmaps by NIST's programs and reduced
to 8x8 blocks whose 17 gray levels count the ink in each (Alpaydin & Kaynak 1998). Other writers than
MNIST's, another normalisation (the digit fills its frame, the strokes are bold) and a sixteenth of MNIST's
pixels: what a thumbnail or a crop sent as it is looks like. Each goes through the upload path as a PNG,
dark on white, at two sizes: as stored (8 px) and enlarged 4x (32 px, bilinear, as a viewer zooms it);
then the model's ``ServingHead`` with its threshold. Nothing is fitted on them.

The digits ship inside scikit-learn (``sklearn.datasets.load_digits``, no download); without it the
check is skipped with a line that says how to get it.
"""

from __future__ import annotations

import logging

import numpy as np

from model_store.serving import ServingHead

from .drawn import ink_upload
from .evaluate import preprocess_uploads, served_answers

log = logging.getLogger("training")

UPLOAD_SIZES = (8, 32)  # px


def load_optdigits() -> tuple[np.ndarray, np.ndarray] | None:
    """(1797, 8, 8) uint8 ink (0 paper .. 255 full) and the labels; None without scikit-learn."""
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        return None
    data = load_digits()
    return np.round(data.images * (255 / 16)).astype(np.uint8), data.target.astype(np.int64)


def optdigits_uploads(ink: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """(N, 8, 8) ink -> model inputs (N, 28, 28) and a mask of the pictures refused as empty, each sent
    as a dark-on-white PNG ``size`` px across."""
    return preprocess_uploads((ink_upload(d, size) for d in ink), len(ink))


def optdigits_check(heads: dict[str, ServingHead], limit: int | None = None) -> dict | None:
    """Per upload size and model: the share read right and the share called not a digit; None without
    scikit-learn."""
    loaded = load_optdigits()
    if loaded is None:
        log.info("skipping the optdigits check (real digits by other writers, 8x8): pip install scikit-learn")
        return None
    ink, labels = (part[:limit] for part in loaded)
    result: dict = {"digits": len(labels), "sizes": {}}
    for size in UPLOAD_SIZES:
        x, refused = optdigits_uploads(ink, size)
        row: dict = {"refused": int(refused.sum()), "read": {}, "not_a_digit": {}}
        for m, head in heads.items():
            classes, not_digit = served_answers(head, x)
            row["read"][m] = float(((classes == labels) & ~refused).mean())
            row["not_a_digit"][m] = float((not_digit & ~refused).mean())
            log.info("optdigits %2d px %s reads %.1f%% (not a digit %.1f%%, %d refused)", size, m,
                     100 * row["read"][m], 100 * row["not_a_digit"][m], row["refused"])  # fmt: skip
        result["sizes"][f"{size}px"] = row
    return result


def markdown(result: dict, models: list[str]) -> str:
    """Per upload size: read right / called not a digit, per model."""
    head = "| upload | " + " | ".join(f"{m}: read / not a digit" for m in models) + " |"
    rows = [
        f"| {size}, dark on white | "
        + " | ".join(f"{100 * row['read'][m]:.1f}% / {100 * row['not_a_digit'][m]:.1f}%" for m in models)
        + " |"
        for size, row in result["sizes"].items()
    ]
    return "\n".join([head, f"|---|{'---:|' * len(models)}", *rows])
