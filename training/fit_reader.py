"""``fit-reader``: fit the weights of ``model_store.reading.choose`` to numbers generated in code.

The pictures of ``training.numbers`` (every family; seed 1 by default, while ``read-eval`` reports
seed 0; the ``mnist`` family built from MNIST's training digits here, its test digits there) are
split and answered by the stored models as the service does (``training.read_eval``). An averaged
structured perceptron (Collins, 2002) then moves the weights, picture by picture, from the
best-scoring reading towards the best-scoring reading that spells the number whenever the two
differ (a reading's terms are its candidates' terms, summed). A picture in which no reading spells
the number (the split never offers the right digits) teaches nothing. One set of weights serves
every model.

Prints exact reads on the fitting seed with the weights now and the fitted ones, the fitted
``Weights(...)`` to put into ``model_store/reading.py``, and the per-class widths (``CLASS_WIDTH``).
``--only TERM`` fits one term's weight alone, the others kept as shipped.
Needs MNIST.
"""

from __future__ import annotations

import argparse
import logging
from dataclasses import dataclass, fields, replace

import numpy as np

from model_store.reading import TERMS, WEIGHTS, Candidates, Weights, best_path, terms

from .data import load_split
from .evaluate import add_store_args, serving_heads
from .numbers import DIGIT_FAMILIES, make_family
from .read_eval import answer, split_all

log = logging.getLogger("training")

INK = 76  # a pixel of an MNIST digit is ink from 30% of full scale (for CLASS_WIDTH)
# The weights ``--only`` tries for its term; the best on the fitting seed wins, the smaller on a tie.
LINE_SEARCH = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 12.0, 20.0)
# Where the fit starts (the hand-set weights it replaced), so that rerunning it gives the same weights.
START = Weights(rules=0.3, wide=8.0, wider=0.0, wide_for_class=0.0, short=16.0, cut=1.0, hole=5.0,
                not_a_digit=4.0, unlike=0.0, atypical=0.0, split=0.0, per_digit=-0.5, confidence=1.0,
                skip=-4.0)  # fmt: skip


def add_fit_reader_args(p: argparse.ArgumentParser, settings) -> None:
    p.add_argument("models", nargs="*", help="model names (default: every model in the store)")
    add_store_args(p, settings)
    p.add_argument("--count", type=int, default=200, help="numbers per family; default: 200")
    p.add_argument("--seed", type=int, default=1, help="generator seed; default: 1 (read-eval reports 0)")
    p.add_argument("--epochs", type=int, default=10, help="passes over the pictures; default: 10")
    p.add_argument("--lr", type=float, default=0.2, help="perceptron step; default: 0.2")
    searchable = [t for t in TERMS if t not in ("confidence", "per_digit")]  # weights >= 0, as LINE_SEARCH
    p.add_argument("--only", choices=searchable, metavar="TERM",
                   help="fit this one term's weight alone, by a line search over LINE_SEARCH with "
                   "the other weights as shipped (a new term added without refitting the rest)")  # fmt: skip


@dataclass(slots=True)
class Example:
    """One picture as the fit sees it: its candidates, their score terms and classes, the number."""

    cands: Candidates
    terms: np.ndarray  # (n, len(TERMS))
    classes: np.ndarray  # (n,) the class each crop is read as
    text: str
    family: str

    def reading(self, weights: np.ndarray, skip: float) -> list[int]:
        return best_path(self.cands, self.terms @ weights, skip)

    def spells(self, chosen: list[int]) -> bool:
        return "".join(str(c) for c in self.classes[chosen]) == self.text


def spelling_path(ex: Example, score: np.ndarray, skip: float) -> list[int] | None:
    """The best-scoring reading that spells ``ex.text`` (None when none does): ``best_path``'s
    dynamic programme with the number of digits spelled so far added to its state."""
    cands, text = ex.cands, ex.text
    starting: dict[tuple[int, int], list[int]] = {}
    for k, (line, start, _) in enumerate(cands.spans):
        starting.setdefault((line, start), []).append(k)
    carried: _States = {0: (0.0, [])}
    for line, n in enumerate(cands.pieces):
        states: list[_States] = [carried] + [{} for _ in range(n)]
        for j in range(n):  # states[j] is final: every path ending at piece j started before it
            for spelled, (value, crops) in states[j].items():
                _offer(states[j + 1], spelled, value + skip, crops)
                for k in starting.get((line, j), []):
                    if spelled < len(text) and str(ex.classes[k]) == text[spelled]:
                        _offer(states[cands.spans[k][2]], spelled + 1, value + score[k], [*crops, k])
        carried = states[n]
    return carried[len(text)][1] if len(text) in carried else None


_States = dict[int, tuple[float, list[int]]]  # digits spelled so far -> best (score, crops)


def _offer(state: _States, spelled: int, value: float, crops: list[int]) -> None:
    if spelled not in state or value > state[spelled][0]:
        state[spelled] = (value, crops)


def fit(examples: list[Example], start: Weights, epochs: int, lr: float, seed: int = 0) -> Weights:
    """Averaged structured perceptron from ``start``: the average of the weights after every picture.

    ``confidence`` and ``skip`` stay as they are: they fix the scale (log-probability units) and
    keep an unsure digit in the reading rather than leaving it out. The other terms are penalties
    or bonuses and stay so (non-negative): a worse shape never scores better."""
    w = start.vector()
    moves = np.array([t != "confidence" for t in TERMS])
    signed = np.array([t == "per_digit" for t in TERMS])
    w_sum, steps = np.zeros_like(w), 0
    rng = np.random.default_rng(seed)
    for _ in range(epochs):
        for i in rng.permutation(len(examples)):
            ex = examples[i]
            score = ex.terms @ w
            guess = best_path(ex.cands, score, start.skip)
            if not ex.spells(guess):
                gold = spelling_path(ex, score, start.skip)
                if gold is not None:
                    w = w + lr * moves * (ex.terms[gold].sum(axis=0) - ex.terms[guess].sum(axis=0))
                    w = np.where(signed, w, np.maximum(w, 0.0))
            w_sum += w
            steps += 1
    return Weights(**dict(zip(TERMS, (w_sum / steps).tolist(), strict=True)), skip=start.skip)


def line_search(examples: list[Example], weights: Weights, term: str) -> Weights:
    """``weights`` with ``term``'s weight set to the LINE_SEARCH value that reads the most numbers
    exactly (mean over families), the other terms unchanged."""
    tried = [replace(weights, **{term: v}) for v in LINE_SEARCH]
    reads = [float(np.mean(list(exact_reads(examples, w).values()))) for w in tried]
    for w, r in zip(tried, reads, strict=True):
        log.info("%s=%g: %.2f%% read exactly (mean over families)", term, getattr(w, term), 100 * r)
    return tried[int(np.argmax(reads))]  # argmax: the first, so the smaller weight, of equals


def exact_reads(examples: list[Example], weights: Weights) -> dict[str, float]:
    w = weights.vector()
    out: dict[str, list[bool]] = {}
    for ex in examples:
        out.setdefault(ex.family, []).append(ex.spells(ex.reading(w, weights.skip)))
    return {family: float(np.mean(v)) for family, v in out.items()}


def class_widths(images: np.ndarray, labels: np.ndarray) -> tuple[float, ...]:
    """Median width over height of the ink of each class's digits (uint8 (N, 28, 28) images)."""
    ink = images > INK

    def extent(any_ink: np.ndarray) -> np.ndarray:
        idx = np.arange(any_ink.shape[1])
        last = np.where(any_ink, idx, -1).max(axis=1)
        return last - np.where(any_ink, idx, any_ink.shape[1]).min(axis=1) + 1

    ratio = extent(ink.any(axis=1)) / extent(ink.any(axis=2))
    return tuple(round(float(np.median(ratio[labels == c])), 2) for c in range(int(labels.max()) + 1))


def run_fit_reader(args: argparse.Namespace) -> Weights:
    heads = serving_heads(args)
    train = load_split("mnist", args.data_root, train=True, download=False)  # the CLI reports its absence
    mnist = (train.images[:, 0].numpy(), train.labels.numpy())  # read-eval's are the test digits
    widths = class_widths(*mnist)
    examples: list[Example] = []
    for family in DIGIT_FAMILIES:  # punctuation plays no part in choosing the digits
        samples = make_family(family, args.count, args.seed, mnist)
        pictures = split_all(samples)
        for head in heads.values():
            for (_, text), cands, rows in zip(samples, pictures, answer(head, pictures), strict=True):
                if cands is not None and rows is not None:
                    classes = rows[:, : head.num_classes].argmax(axis=1)
                    score_terms = terms(cands, rows, head.digit_threshold)
                    examples.append(Example(cands, score_terms, classes, text, family))
        log.info("%s: %d numbers split and answered", family, len(samples))
    if args.only:
        fitted = line_search(examples, WEIGHTS, args.only)
    else:
        fitted = fit(examples, START, args.epochs, args.lr)
    before, after = exact_reads(examples, WEIGHTS), exact_reads(examples, fitted)
    print(f"exact reads on seed {args.seed} ({', '.join(heads)} together): weights now -> fitted")
    for family in before:
        print(f"  {family:9s} {100 * before[family]:5.1f}% -> {100 * after[family]:5.1f}%")
    print(f"CLASS_WIDTH = {widths}")
    body = ", ".join(f"{f.name}={getattr(fitted, f.name):.3g}" for f in fields(fitted))
    print(f"Weights({body})")
    return fitted
