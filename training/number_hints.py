"""How the one-digit routes' ``hint`` behaves: a number sent to ``/predict`` is named, nothing else.

Each picture goes the way ``POST /v1/models/{name}/predict`` takes it (``app.reading.number_hint``): the
upload preprocessing and the model's ``ServingHead``; when the digit score calls it not a digit, the
picture is split as ``/read`` splits it, its candidates answered by the same head, and
``model_store.reading.plain_number`` decides whether it is plainly a number. Counted per family:

- numbers (``training.numbers``' families and the ``multi_digit`` outliers, two digits or more): the share
  hinted with exactly the right number, and the share hinted with a wrong one;
- pictures that are not numbers (the other outlier families, digits drawn like the page): the share that
  got a hint at all (each one a false hint).
"""

from __future__ import annotations

import numpy as np
import torch
from PIL import Image

from model_store.preprocess import ImageError, preprocess_bytes
from model_store.reading import candidates_bytes, plain_number
from model_store.serving import ServingHead

from .drawn import drawn_digits, png_bytes
from .evaluate import UPLOAD_MAX_PIXELS
from .numbers import Sample
from .outliers import generate_outliers

MAX_CROPS = 64  # the service's default: what one engine call holds


@torch.inference_mode()
def hint(head: ServingHead, upload: bytes) -> str | None:
    """The number the service's one-digit routes would name for this upload, or None."""
    if head.digit_threshold is None:
        return None
    try:
        x = preprocess_bytes(upload, UPLOAD_MAX_PIXELS)
    except ImageError:
        return None  # refused (422/400): no answer, so no hint
    row = head(torch.from_numpy(x)[None, None]).numpy()[0]
    if row[-1] >= head.digit_threshold:
        return None
    try:
        cands = candidates_bytes(upload, UPLOAD_MAX_PIXELS, max_crops=MAX_CROPS)
    except ImageError:
        return None
    if len(cands.crops) < 2:
        return None
    rows = head(torch.from_numpy(np.stack([c.pixels for c in cands.crops])).unsqueeze(1)).numpy()
    return plain_number(cands, rows, head.digit_threshold, [str(d) for d in range(head.num_classes)])


def number_uploads(samples: list[Sample]) -> list[tuple[bytes, str]]:
    """The pictures of numbers of two digits or more as PNG uploads, with their text."""
    return [(png_bytes(Image.fromarray(image)), text) for image, text in samples if len(text) >= 2]


def other_uploads(per_family: int, seed: int) -> dict[str, list[tuple[bytes, str]]]:
    """The outlier families (``multi_digit`` with its digits as the text, the rest with none) and
    digits drawn like the page (``per_family`` in all), as uploads."""
    families: dict[str, list[tuple[bytes, str]]] = {}
    for o in generate_outliers(per_family, seed):
        # "drawn 123" / "printed 123 (DejaVuSans)": the digits are the second word
        text = o.what.split()[1] if o.family == "multi_digit" else ""
        families.setdefault(o.family, []).append((o.png, text))
    uploads, _ = drawn_digits(max(per_family // 10, 1), seed)
    families["drawn digits"] = [(u, "") for u in uploads]
    return families


def hint_rates(head: ServingHead, uploads: list[tuple[bytes, str]]) -> dict[str, float]:
    """``right`` / ``wrong``: shares of the uploads hinted with their text / with another (a picture
    whose text is empty is not a number: any hint is wrong)."""
    named = [hint(head, data) for data, _ in uploads]
    right = [h is not None and h == text for h, (_, text) in zip(named, uploads, strict=True)]
    wrong = [h is not None and h != text for h, (_, text) in zip(named, uploads, strict=True)]
    n = max(len(uploads), 1)
    return {"right": sum(right) / n, "wrong": sum(wrong) / n}


def markdown(rates: dict[str, dict[str, dict[str, float]]], counts: dict[str, int], models: list[str]) -> str:
    """Per family and model: "right / wrong" hint shares (for pictures that are not numbers, only
    wrong ones exist)."""
    cols = " | ".join(f"{m}: hinted right / wrong" for m in models)
    lines = [f"| pictures sent to /predict | n | {cols} |", f"|---|---:|{'---:|' * len(models)}"]
    for family, per_model in rates.items():
        cells = " | ".join(
            f"{100 * per_model[m]['right']:.1f}% / {100 * per_model[m]['wrong']:.1f}%" for m in models
        )
        lines.append(f"| {family} | {counts[family]} | {cells} |")
    return "\n".join(lines)
