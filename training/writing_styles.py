"""Digits in writing styles the page's drawn-digit templates do not hold, as a check of reading and of
``is_digit``: how the service answers other writers.

Each style is a stroke template in the page's coordinates (``training.drawn``), jittered and drawn the way
the page draws (its pen, its 280-px PNG) and sent through the upload preprocessing, then the model's
``ServingHead`` with its threshold. Per style: the share read right and the share called "not a digit".
The templates are written here, apart from the training generator (``training.pen_digits``), whose
styles are skeletons of its own: a style both hold (the slashed zero) is still drawn differently by each.
"""

from __future__ import annotations

import math

import numpy as np

from model_store.serving import ServingHead

from .drawn import Stroke, drawn_hand, ellipse, png_bytes
from .evaluate import preprocess_uploads, served_answers

RING = ellipse(0.5, 0.5, 0.2, 0.31)  # a zero's outline: x 0.30-0.70, y 0.19-0.81
LOOPED_TWO = [(0.3, 0.3), (0.5, 0.16), (0.68, 0.28), (0.56, 0.5), (0.38, 0.72), (0.28, 0.8), (0.2, 0.74),
              (0.22, 0.6), (0.34, 0.6), (0.42, 0.76), (0.5, 0.82), (0.76, 0.8)]  # fmt: skip
NINE_LOOP = ellipse(0.49, 0.33, 0.17, 0.15, start=math.pi / 2, turn=1.0)

# name -> (digit, strokes)
STYLES: dict[str, tuple[int, list[Stroke]]] = {
    "zero slashed through its outline": (0, [RING, [(0.27, 0.87), (0.73, 0.13)]]),
    "zero slashed inside": (0, [RING, [(0.4, 0.66), (0.6, 0.34)]]),
    "zero with a dot": (0, [RING, [(0.5, 0.49), (0.505, 0.51)]]),
    "one with a long up-stroke": (1, [[(0.37, 0.36), (0.54, 0.16), (0.5, 0.84)]]),
    "one with flag and foot": (1, [[(0.37, 0.3), (0.53, 0.16), (0.5, 0.83)], [(0.36, 0.84), (0.66, 0.84)]]),
    "two with a loop": (2, [LOOPED_TWO]),
    "seven with a tick": (7, [[(0.27, 0.3), (0.28, 0.19), (0.73, 0.2), (0.47, 0.84)]]),
    "eight of two rings": (8, [ellipse(0.5, 0.33, 0.13, 0.15), ellipse(0.5, 0.66, 0.16, 0.17)]),
    "nine with a curved tail": (9, [NINE_LOOP + [(0.65, 0.45), (0.6, 0.72), (0.4, 0.84)]]),
}


def style_uploads(name: str, count: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``count`` hands of one style as model inputs (N, 28, 28) 0..1, and a mask of the ones the
    preprocessing refused (none expected: they are plain strokes on white)."""
    _, strokes = STYLES[name]
    rng = np.random.default_rng([seed, list(STYLES).index(name)])
    return preprocess_uploads((png_bytes(drawn_hand(strokes, rng)) for _ in range(count)), count)


def writing_styles_check(heads: dict[str, ServingHead], per_style: int, seed: int) -> dict:
    """Per style and model: the share read right and the share called not a digit (of ``per_style``)."""
    result: dict = {"per_style": per_style, "seed": seed, "styles": {}}
    for name, (digit, _) in STYLES.items():
        x, refused = style_uploads(name, per_style, seed)
        row: dict = {"digit": digit, "refused": int(refused.sum()), "read": {}, "not_a_digit": {}}
        for m, head in heads.items():
            classes, not_digit = served_answers(head, x)
            row["read"][m] = float(((classes == digit) & ~refused).mean())
            row["not_a_digit"][m] = float(not_digit[~refused].mean()) if (~refused).any() else 0.0
        result["styles"][name] = row
    return result


def markdown(result: dict, models: list[str]) -> str:
    cols = " | ".join(f"{m}: read / not a digit" for m in models)
    rows = [f"| writing style | {cols} |", f"|---|{'---:|' * len(models)}"]
    for name, row in result["styles"].items():
        cells = " | ".join(f"{row['read'][m]:.0%} / {row['not_a_digit'][m]:.0%}" for m in models)
        rows.append(f"| {name} | {cells} |")
    return "\n".join(rows)
