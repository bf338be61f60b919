"""Letters in shapes the detector's pen letters do not hold, drawn on the page's square pad, as a check of
``is_digit``: how the service answers a person who draws a letter to see what it says.

The detector is fitted against letters written with ``training.pen_letters``' templates
(``training.outliers``' ``pen_letters`` family). The templates here are written apart from those, in other
shapes a hand gives the same letters (a round-topped A, an E written as two arcs, a looped k, an x of two
arcs back to back, a t crossed high), in the same units, and drawn as that family draws its letters
(``outliers.drawn_letter``: a writer's hand, the pad's placing and pen, a 280-px PNG), through the upload
preprocessing and the model's ``ServingHead`` with its threshold. Per letter: the share called "not a
digit", and the digit the others are taken for.
"""

from __future__ import annotations

import numpy as np

from model_store.serving import ServingHead

from .drawn import png_bytes
from .evaluate import preprocess_uploads, served_answers
from .outliers import drawn_letter
from .pen_numbers import Stroke, arc

# In ``pen_letters``' units: 1 tall from a capital's top to the baseline, x-height from 0.45.
OTHER_LETTERS: dict[str, list[Stroke]] = {
    "A, round-topped": [[(0.0, 1.0), *arc(0.3, 0.35, 0.25, 0.35, 180, 0), (0.6, 1.0)],
                        [(0.05, 0.6), (0.55, 0.6)]],
    "E, two arcs": [arc(0.35, 0.27, 0.25, 0.25, 60, 270) + arc(0.35, 0.75, 0.3, 0.25, 90, 300)],
    "F, in one stroke": [[(0.05, 1.0), (0.05, 0.0), (0.55, 0.0)], [(0.05, 0.45), (0.4, 0.45)]],
    "K, its arms apart": [[(0.05, 0.0), (0.05, 1.0)], [(0.5, 0.05), (0.05, 0.5)], [(0.2, 0.38), (0.55, 1.0)]],
    "N, slanting sides": [[(0.05, 1.0), (0.1, 0.0), (0.5, 1.0), (0.55, 0.0)]],
    "W, in one zigzag": [[(0.0, 0.0), (0.2, 1.0), (0.4, 0.0), (0.6, 1.0), (0.8, 0.0)]],
    "Y, its arms meeting low": [[(0.0, 0.0), (0.3, 0.55), (0.6, 0.0)], [(0.3, 0.55), (0.3, 1.0)]],
    "e, a bar and a loop": [[(0.05, 0.7), (0.45, 0.62), *arc(0.25, 0.7, 0.22, 0.28, 60, 320)]],
    "h, its shoulder lifted off": [[(0.05, 0.0), (0.05, 1.0)],
                                   [*arc(0.28, 0.62, 0.23, 0.2, 180, 0), (0.5, 1.0)]],
    "k, looped": [[(0.05, 0.0), (0.05, 1.0)],
                  [(0.05, 0.75), *arc(0.25, 0.6, 0.18, 0.15, 220, -60), (0.45, 1.0)]],
    "m, from the baseline": [[(0.0, 0.45), (0.0, 1.0)],
                             [(0.0, 0.6), *arc(0.17, 0.6, 0.17, 0.15, 180, 0), (0.34, 1.0)],
                             [(0.34, 0.6), *arc(0.51, 0.6, 0.17, 0.15, 180, 0), (0.68, 1.0)]],
    "n, its shoulder lifted off": [[(0.05, 0.45), (0.05, 1.0)],
                                   [*arc(0.28, 0.62, 0.23, 0.2, 180, 0), (0.5, 1.0)]],
    "r, a wide arm": [[(0.05, 0.45), (0.05, 1.0)], [(0.05, 0.62), *arc(0.3, 0.62, 0.25, 0.15, 180, 30)]],
    "t, crossed high": [[(0.25, 0.0), (0.25, 1.0)], [(0.0, 0.35), (0.5, 0.35)]],
    "w, rounded": [arc(0.15, 0.6, 0.15, 0.4, 180, 360) + arc(0.45, 0.6, 0.15, 0.4, 180, 360)],
    "x, two arcs back to back": [arc(0.0, 0.72, 0.25, 0.27, 60, -60), arc(0.55, 0.72, 0.25, 0.27, 120, 240)],
}  # fmt: skip


def letter_uploads(name: str, count: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``count`` hands of one letter as model inputs (N, 28, 28) 0..1, and a mask of the ones the
    preprocessing refused (none expected: they are plain strokes on white)."""
    rng = np.random.default_rng([seed, 300 + list(OTHER_LETTERS).index(name)])
    return preprocess_uploads(
        (png_bytes(drawn_letter(OTHER_LETTERS[name], rng)) for _ in range(count)), count
    )


def other_letters_check(heads: dict[str, ServingHead], per_letter: int, seed: int) -> dict:
    """Per letter and model: the share called not a digit (of ``per_letter``), and the digits the others
    are read as (most common first)."""
    result: dict = {"per_letter": per_letter, "seed": seed, "letters": {}}
    for name in OTHER_LETTERS:
        x, refused = letter_uploads(name, per_letter, seed)
        row: dict = {"refused": int(refused.sum()), "not_a_digit": {}, "taken_for": {}}
        for m, head in heads.items():
            classes, not_digit = served_answers(head, x)
            passed = ~not_digit & ~refused
            row["not_a_digit"][m] = float(not_digit[~refused].mean()) if (~refused).any() else 0.0
            digits, counts = np.unique(classes[passed], return_counts=True)
            row["taken_for"][m] = [str(d) for d in digits[np.argsort(-counts, kind="stable")]]
        result["letters"][name] = row
    flagged = {m: float(np.mean([r["not_a_digit"][m] for r in result["letters"].values()])) for m in heads}
    result["not_a_digit"] = flagged
    return result


def markdown(result: dict, models: list[str]) -> str:
    def cell(row: dict, m: str) -> str:
        taken = row["taken_for"][m]
        return f"{row['not_a_digit'][m]:.0%}" + (f" (else {', '.join(taken)})" if taken else "")

    rows = [
        f"| letter | {' | '.join(f'{m}: not a digit' for m in models)} |",
        f"|---|{'---:|' * len(models)}",
    ]
    for name, row in result["letters"].items():
        rows.append(f"| {name} | {' | '.join(cell(row, m) for m in models)} |")
    total = " | ".join(f"**{result['not_a_digit'][m]:.1%}**" for m in models)
    rows.append(f"| **all** | {total} |")
    return "\n".join(rows)
