"""How the one-digit routes' ``hint`` behaves: a number sent to ``/predict`` is named, nothing else.

Each picture goes the way ``POST /v1/models/{name}/predict`` takes it (``app.reading.number_hint``): the
upload preprocessing and the model's ``ServingHead``; when the digit score calls it not a digit, the
picture is split as ``/read`` splits it, its candidates answered by the same head, and
``model_store.reading.plain_number`` decides whether it is plainly a number. Counted per family:

- numbers (``training.numbers``' families and the ``multi_digit`` outliers, two digits or more): the share
  hinted with exactly the right number, and the share hinted with a wrong one;
- pictures that are not numbers (the other outlier families, digits drawn like the page, and, where
  scikit-image is installed, real photos and faces: ``training.real_photos``): the share that got a hint
  at all (each one a false hint);
- letters and digits drawn alone on the page's square pad and sent as its strokes (``other_drawings``):
  split into strokes, a letter's or a digit's pieces can each be a whole digit (an a as its bowl and
  its stem, "01"), so the same share.
"""

from __future__ import annotations

import numpy as np

from model_store.drawing import Drawing
from model_store.reading import Candidates, plain_number
from model_store.serving import ServingHead

from .drawn import Stroke, drawn_digits, pad_strokes, placed_digit
from .evaluate import served_outputs
from .other_letters import OTHER_LETTERS
from .outliers import generate_outliers, placed_letter
from .pen_letters import LETTER_STROKES
from .real_photos import photo_uploads


def named(
    head: ServingHead, singles: np.ndarray, refused: np.ndarray, pictures: list[Candidates | None],
    answered: list[np.ndarray | None],
) -> list[str | None]:  # fmt: skip
    """The number the service's one-digit routes would name for each upload, or None. ``singles`` and
    ``refused``: the uploads through the one-digit preprocessing (``evaluate.preprocess_uploads``);
    ``pictures`` and ``answered``: their ``/read`` split and the head's rows for its crops (read-eval's
    ``split_uploads`` and ``answer``)."""
    if head.digit_threshold is None:
        return [None] * len(pictures)
    scores = served_outputs(head, singles)[:, head.num_classes].numpy()
    labels = [str(d) for d in range(head.num_classes)]
    out: list[str | None] = []
    for score, gone, cands, rows in zip(scores, refused, pictures, answered, strict=True):
        flagged = not gone and score < head.digit_threshold
        split = cands is not None and rows is not None and len(cands.crops) >= 2
        out.append(plain_number(cands, rows, head.digit_threshold, labels) if flagged and split else None)
    return out


def other_uploads(per_family: int, seed: int) -> dict[str, list[tuple[bytes, str]]]:
    """The outlier families (``multi_digit`` with its digits as the text, the rest with none), digits
    drawn like the page, real photos (whole and cropped) and faces (about ``per_family`` of each), as
    uploads."""
    families: dict[str, list[tuple[bytes, str]]] = {}
    for o in generate_outliers(per_family, seed):
        # "drawn 123" / "printed 123 (DejaVuSans)": the digits are the second word
        text = o.what.split()[1] if o.family == "multi_digit" else ""
        families.setdefault(o.family, []).append((o.png, text))
    uploads, _ = drawn_digits(max(per_family // 10, 1), seed)
    families["drawn digits"] = [(u, "") for u in uploads]
    photos = photo_uploads(crops=max(per_family // 20, 1), seed=seed)  # about per_family, with the wholes
    for family, pictures in (
        ("real photos, whole and cropped", photos["whole photos"] + photos["crops of them"]),
        ("faces", photos.get("faces", [])[:per_family]),
    ):
        if pictures:  # none without scikit-image, scikit-learn and matplotlib
            families[family] = [(u, "") for u in pictures]
    return families


def other_drawings(per_family: int, seed: int) -> dict[str, list[Drawing]]:
    """About ``per_family`` letters (``outliers.placed_letter``: the ``pen_letters`` family's, and
    ``other_letters``' shapes, which no fit has seen) and digits (``drawn.placed_digit``, as many of
    each) drawn alone on the square pad, as the page sends their strokes to ``/predict``."""
    rng = np.random.default_rng([seed, 7])  # its own stream: the upload families' bytes stay the same

    def hands(templates: list[list[Stroke]]) -> list[list[Stroke]]:
        return [placed_letter(templates[rng.integers(len(templates))], rng) for _ in range(per_family)]

    letters, shapes = hands(list(LETTER_STROKES.values())), hands(list(OTHER_LETTERS.values()))
    digits = [placed_digit(d, rng) for d in range(10) for _ in range(max(per_family // 10, 1))]
    return {
        "letters drawn on the pad (`pen_letters`), sent as strokes": [pad_strokes(s) for s in letters],
        "letters in other shapes (`other_letters`), sent as strokes": [pad_strokes(s) for s in shapes],
        "digits drawn on the pad, sent as strokes": [pad_strokes(s) for s in digits],
    }


def hint_rates(hints: list[str | None], texts: list[str]) -> dict[str, float]:
    """``right`` / ``wrong``: shares of the uploads hinted with their text / with another (a picture
    whose text is empty is not a number: any hint is wrong)."""
    n = max(len(texts), 1)
    right = sum(h is not None and h == t for h, t in zip(hints, texts, strict=True))
    wrong = sum(h is not None and h != t for h, t in zip(hints, texts, strict=True))
    return {"right": right / n, "wrong": wrong / n}


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
