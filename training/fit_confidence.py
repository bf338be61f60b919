"""``fit-confidence``: fit ``model_store.text_confidence.CONFIDENCE``, how sure ``/read`` is that a
reading's text is exactly right.

The numbers of ``training.numbers`` (every family but ``hands`` and ``plates``, kept to check the fit
on pictures it never saw; seed 1 by default, while ``read-eval`` reports seed 0; the ``mnist`` family
from MNIST's training digits) are split and answered by the stored models as the service does
(``training.read_eval``), the pen's numbers also as the page sends them, as strokes. Each reading gives
what ``reading_features`` measures and whether its text is exact. Pictures that are not numbers
(``training.not_numbers``, the pen's words as strokes too; the same seed; all but ``lone_letters``, one
letter written alone, kept to check the fit on) are read as well: every
reading of some text in one is wrong, and together they weigh as if one picture in ten sent to
``/read`` (OTHER_SHARE) were not a number (a reading of no text is not fitted on: its confidence is
that of no digit read). A weighted logistic regression
(``calibration_metrics.fit_logistic``) over every model's readings together fits one model for all.

Prints the fitted ``TextConfidence(...)`` to put into ``model_store/text_confidence.py`` and, on the
fitting seed, the confidence beside the exact reads per family (``read-eval`` prints the same table on
its own seed). Needs MNIST; the display families need ``fonts-dseg`` and are skipped without it.
"""

from __future__ import annotations

import argparse
import logging

import numpy as np

from model_store.text_confidence import FEATURES, TextConfidence

from .calibration_metrics import fit_logistic
from .data import load_split
from .evaluate import add_store_args, serving_heads
from .not_numbers import FAMILIES as NOT_NUMBERS
from .numbers import FAMILIES
from .read_eval import (
    Sureness,
    answer,
    confidence_markdown,
    encoded,
    evidence,
    family_or_none,
    not_number_markdown,
    number_rows,
    read_not_numbers,
    weigh_not_numbers,
)

log = logging.getLogger("training")

HELD_OUT = ("hands", "plates")  # families left out of the fit, to check it on
OTHERS_HELD_OUT = ("lone_letters",)  # as much, of the pictures that are not numbers
OTHER_SHARE = 0.1  # the share of /read's pictures assumed not to be numbers


def add_fit_confidence_args(p: argparse.ArgumentParser, settings) -> None:
    p.add_argument("models", nargs="*", help="model names (default: every model in the store)")
    add_store_args(p, settings)
    p.add_argument("--count", type=int, default=200, help="numbers per family; default: 200")
    p.add_argument("--seed", type=int, default=1, help="generator seed; default: 1 (read-eval reports 0)")
    fitted = [f for f in FAMILIES if f not in HELD_OUT]
    p.add_argument("--families", nargs="+", choices=FAMILIES, default=fitted,
                   help=f"families to fit on; default: all but {', '.join(HELD_OUT)}")  # fmt: skip
    p.add_argument("--not-numbers", type=int, default=150, metavar="PER_FAMILY",
                   help="pictures of each family that is not a number (training.not_numbers) to fit on; "
                   "default: 150, 0: numbers alone")  # fmt: skip


def run_fit_confidence(args: argparse.Namespace) -> TextConfidence:
    heads = serving_heads(args)
    train = load_split("mnist", args.data_root, train=True, download=False)  # the CLI reports its absence
    mnist = (train.images[:, 0].numpy(), train.labels.numpy())  # read-eval's are the test digits
    rows: list[np.ndarray] = []
    exact: list[np.ndarray] = []
    per_family: dict[str, dict[str, tuple[np.ndarray, np.ndarray]]] = {}
    for family in args.families:
        samples = family_or_none(family, args.count, args.seed, mnist)
        if samples is None:
            continue
        for label, texts, split, _ in number_rows(family, samples, encoded(samples), args.count, args.seed):
            pictures = split()
            per_family[label] = {}
            for m, head in heads.items():
                features, right = evidence(head, pictures, answer(head, pictures), texts)
                rows.append(features)
                exact.append(right)
                per_family[label][m] = (features, right)
            log.info("%s: %d numbers split, answered and read", label, len(texts))
    fitted_others = tuple(f for f in NOT_NUMBERS if f not in OTHERS_HELD_OUT)
    others = read_not_numbers(heads, args.not_numbers, args.seed, fitted_others) if args.not_numbers else {}
    pictures_of_others = sum(none.size for per_model in others.values() for _, none in per_model.values())
    read_others = [f for per_model in others.values() for f, _ in per_model.values()]
    x = np.concatenate([*rows, *read_others])
    y = np.concatenate([*exact, *(np.zeros(len(f), bool) for f in read_others)])
    numbers = sum(len(r) for r in rows)
    # Each picture that is not a number weighs as much as makes them OTHER_SHARE of all pictures.
    other_weight = OTHER_SHARE / (1 - OTHER_SHARE) * numbers / max(pictures_of_others, 1)
    weights = np.r_[np.ones(numbers), np.full(len(y) - numbers, other_weight)]
    bias, coefficients = fit_logistic(x, y.astype(np.float64), weights)
    fitted = TextConfidence(round(bias, 4), tuple(round(float(c), 4) for c in coefficients))
    sureness: dict[str, Sureness] = {
        family: {m: (fitted.probabilities(feats), right) for m, (feats, right) in per_model.items()}
        for family, per_model in per_family.items()
    }
    print(
        f"fitted on seed {args.seed}, {numbers} readings of numbers ({100 * y[:numbers].mean():.1f}% "
        f"exact) and {len(y) - numbers} readings of pictures that are not numbers (of {pictures_of_others}, "
        "those read as some text); on them:"
    )
    print(confidence_markdown(sureness, list(heads)))
    if others:
        print(not_number_markdown(weigh_not_numbers(others, fitted), list(heads)))
    print("features:", ", ".join(FEATURES))
    print(f"CONFIDENCE = TextConfidence(bias={fitted.bias}, coefficients={fitted.coefficients})")
    return fitted
