"""``read-eval``: how often stored models read a whole number exactly, through the served pipeline.

Each picture of ``training.numbers`` is PNG-encoded and split as ``POST /v1/models/{name}/read`` does:
``model_store.reading.candidates_bytes`` makes every alternative digit, the model's ``ServingHead``
answers all of them, and ``choose`` picks the reading (``--rules-only``: the rule-based digits of
``model_store.segment`` alone, no alternatives). A number counts as read when the digits, in order,
spell it exactly (a missed or extra digit is an error). Prints a markdown table: exact-read rate per
family and model, and per model how often the digit count is right. The pen families are read a second
time as the demo page sends them, as their strokes (``candidates_drawing``; rows "..., sent as strokes";
``marks``: its numbers written with the pen, ``training.numbers.make_drawings``). Then how sure each
reading is (``model_store.text_confidence``) beside whether it is exact, and how the models answer
pictures that are not numbers (``training.not_numbers``: letters, words, symbols, shapes, photos of
things), where any text read is wrong.
"""

from __future__ import annotations

import argparse
import logging
import time
from collections.abc import Callable

import numpy as np
import torch
from PIL import Image

from model_store.drawing import Drawing
from model_store.preprocess import ImageError
from model_store.reading import (
    ENGINE_CALLS,
    WEIGHTS,
    Candidates,
    Weights,
    best_path,
    candidates_bytes,
    candidates_drawing,
    choose,
    path_scores,
)
from model_store.serving import ServingHead
from model_store.text_confidence import CONFIDENCE, FEATURES, TextConfidence, reading_features

from .calibration_metrics import auroc, sureness_error
from .data import load_split
from .display_fonts import DisplayFontsMissing
from .drawn import png_bytes
from .evaluate import (
    UPLOAD_MAX_PIXELS,
    add_store_args,
    preprocess_drawings,
    preprocess_uploads,
    serving_heads,
)
from .not_numbers import DRAWN as DRAWN_NOT_NUMBERS
from .not_numbers import FAMILIES as NOT_NUMBERS
from .not_numbers import make_not_numbers, pen_drawings
from .number_hints import hint_rates, named, other_drawings, other_uploads
from .number_hints import markdown as hints_markdown
from .numbers import DRAWN_FAMILIES, FAMILIES, make_drawings, make_family

log = logging.getLogger("training")

MAX_CROPS = 64  # the service's default: max(max_batch_images, max_digits) images per engine call
TARGET = 0.97  # exact reads on the pen-stroke family
SURE = 0.9  # the confidence the table reports keeping readings from
Sureness = dict[str, tuple[np.ndarray, np.ndarray]]  # per model: each reading's confidence, and whether exact


def add_read_eval_args(p: argparse.ArgumentParser, settings) -> None:
    p.add_argument("models", nargs="*", help="model names (default: every model in the store)")
    add_store_args(p, settings)
    p.add_argument("--count", type=int, default=300, help="numbers per family; default: 300")
    p.add_argument("--families", nargs="+", choices=FAMILIES, default=list(FAMILIES),
                   help="families to read; default: all")  # fmt: skip
    p.add_argument("--seed", type=int, default=0, help="generator seed; default: 0")
    p.add_argument("--rules-only", action="store_true",
                   help="the rules' split alone, no alternatives for the model to choose from")  # fmt: skip
    p.add_argument("--not-numbers", type=int, default=100, metavar="PER_FAMILY",
                   help="pictures of each family that is not a number (training.not_numbers) to read; "
                   "default: 100, 0 skips them")  # fmt: skip
    p.add_argument("--hints", type=int, default=0, metavar="PER_FAMILY",
                   help="also measure /predict's hint (training.number_hints) on the numbers of two "
                   "digits or more and on PER_FAMILY outliers of each family; default: 0 (skip)")  # fmt: skip


def family_or_none(
    family: str, count: int, seed: int, mnist: tuple[np.ndarray, np.ndarray] | None
) -> list[tuple[np.ndarray, str]] | None:  # fmt: skip
    """``make_family``'s numbers; None (said in the log) for the display families without their fonts."""
    try:
        return make_family(family, count, seed, mnist)
    except DisplayFontsMissing as exc:
        log.info("skipping %s: %s", family, exc)
        return None


def encoded(samples: list[tuple[np.ndarray, str]]) -> list[bytes]:
    """The pictures as the PNG uploads the service would get."""
    return [png_bytes(Image.fromarray(image)) for image, _ in samples]


def _budget(rules_only: bool) -> dict[str, int]:
    """The candidates the service lays out (``max_crops``, ``calls``); the rules' alone for --rules-only."""
    return {"max_crops": 0, "calls": 1} if rules_only else {"max_crops": MAX_CROPS, "calls": ENGINE_CALLS}


def split_uploads(uploads: list[bytes], rules_only: bool = False) -> list[Candidates | None]:
    """Every upload's candidate digits (None where the segmenter refused the picture)."""
    out: list[Candidates | None] = []
    for data in uploads:
        try:
            out.append(candidates_bytes(data, UPLOAD_MAX_PIXELS, **_budget(rules_only)))
        except ImageError:
            out.append(None)
    return out


def split_drawings(drawings: list[Drawing], rules_only: bool = False) -> list[Candidates | None]:
    """Every drawing's candidate digits, as ``/read`` splits a number sent as its strokes."""
    out: list[Candidates | None] = []
    for drawing in drawings:
        try:
            out.append(candidates_drawing(drawing, **_budget(rules_only)))
        except ImageError:
            out.append(None)
    return out


def split_all(samples: list[tuple[np.ndarray, str]], rules_only: bool = False) -> list[Candidates | None]:
    """Every picture's candidate digits (None where the segmenter refused the picture)."""
    return split_uploads(encoded(samples), rules_only)


@torch.inference_mode()
def answer(head: ServingHead, pictures: list[Candidates | None], batch: int = 512) -> list[np.ndarray | None]:
    """The ServingHead's rows for each picture's crops: all crops of all pictures in batches."""
    flat = [c.pixels for cands in pictures if cands is not None for c in cands.crops]
    if not flat:
        return [None for _ in pictures]
    x = torch.from_numpy(np.stack(flat)).unsqueeze(1)
    rows = torch.cat([head(x[i : i + batch]) for i in range(0, len(x), batch)]).numpy()
    out: list[np.ndarray | None] = []
    k = 0
    for cands in pictures:
        n = len(cands.crops) if cands is not None else 0
        out.append(rows[k : k + n] if cands is not None else None)
        k += n
    return out


def text_of(cands: Candidates, rows: np.ndarray, chosen: list[int], num_classes: int) -> str:
    """The text ``/read`` answers: the chosen crops' classes and the marks between them."""
    return cands.spelled(chosen, [str(int(rows[i, :num_classes].argmax())) for i in chosen])[0]


def read(
    head: ServingHead, pictures: list[Candidates | None], weights: Weights = WEIGHTS,
    answered: list[np.ndarray | None] | None = None,
) -> list[str]:  # fmt: skip
    """The text the model reads in each picture, each picture's reading chosen from its own rows
    (``answered``: the rows ``answer`` gave already)."""
    return [
        "" if cands is None or rows is None
        else text_of(cands, rows, choose(cands, rows, head.digit_threshold, weights), head.num_classes)
        for cands, rows in zip(pictures, answered or answer(head, pictures), strict=True)
    ]  # fmt: skip


def evidence(
    head: ServingHead, pictures: list[Candidates | None], answered: list[np.ndarray | None], texts: list[str]
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """For every picture the model read (not refused): what ``model_store.text_confidence`` weighs of its
    reading (n, len(FEATURES)), and whether the text is exactly right (n,)."""
    features, right = [], []
    for cands, rows, text in zip(pictures, answered, texts, strict=True):
        if cands is not None and rows is not None and head.digit_threshold is not None:
            scored = path_scores(cands, rows, head.digit_threshold)
            chosen = best_path(cands, *scored)
            features.append(reading_features(cands, rows, head.digit_threshold, chosen, scored))
            right.append(text_of(cands, rows, chosen, head.num_classes) == text)
    return np.array(features).reshape(len(right), len(FEATURES)), np.array(right, dtype=bool)


def not_number_evidence(
    head: ServingHead, pictures: list[Candidates | None], answered: list[np.ndarray | None]
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """For pictures that are not numbers, every reading that reads some text (each one wrong): what
    ``model_store.text_confidence`` weighs of it (n, len(FEATURES)), and (len(pictures),) whether the
    picture was refused or read as no text (the right answer); neither for a checkpoint without a digit
    score, which gets no confidence."""
    if head.digit_threshold is None:
        return np.empty((0, len(FEATURES))), np.empty(0, bool)
    features, none_read = evidence(head, pictures, answered, [""] * len(pictures))
    refused = len(pictures) - len(none_read)
    return features[~none_read], np.r_[np.ones(refused, bool), none_read]


def weigh_not_numbers(
    evidence_of: dict[str, dict[str, tuple[np.ndarray, np.ndarray]]], confidence: TextConfidence = CONFIDENCE
) -> dict[str, dict[str, tuple[np.ndarray, np.ndarray]]]:  # fmt: skip
    """``read_not_numbers``' evidence with each reading's features weighed by ``confidence``: per family and
    model, (the readings' confidences, whether each picture was read as no number)."""
    return {label: {m: (confidence.probabilities(f), none) for m, (f, none) in per_model.items()}
            for label, per_model in evidence_of.items()}  # fmt: skip


def not_number_markdown(rows: dict[str, dict[str, tuple[np.ndarray, np.ndarray]]], models: list[str]) -> str:
    """Per family of pictures that are not numbers and per model (from each reading's confidence, and
    each picture's whether it was read as no number): the share read as no number (refused or no text),
    the shares read as a number with a confidence of 0.5 and of SURE or more, and the mean confidence of
    those read as a number; then the same over all of them."""
    cells = [f"{m}: {what}" for m in models for what in ("no number", ">= 0.5", f">= {SURE}", "mean")]
    lines = [f"| not a number | pictures | {' | '.join(cells)} |", f"|---|---:|{'---:|' * len(cells)}"]
    everything = {m: (np.concatenate([r[m][0] for r in rows.values()]),
                      np.concatenate([r[m][1] for r in rows.values()])) for m in models}  # fmt: skip
    for label, per_model in [*rows.items(), ("**all**", everything)]:
        out = []
        for m in models:
            p, none_read = per_model[m]
            n = none_read.size
            if not n:  # a checkpoint without a digit score: no confidence
                out += ["-"] * 4
                continue
            out += [f"{100 * none_read.mean():.1f}%", f"{100 * (p >= 0.5).sum() / n:.1f}%",
                    f"{100 * (p >= SURE).sum() / n:.1f}%", f"{p.mean():.3f}" if p.size else "-"]  # fmt: skip
        pictures = max(per_model[m][1].size for m in models)
        lines.append(f"| {label} | {pictures} | {' | '.join(out)} |")
    return "\n".join(lines)


def _sureness(
    heads: dict[str, ServingHead], pictures: list[Candidates | None],
    answered: dict[str, list[np.ndarray | None]], texts: list[str],
) -> Sureness:  # fmt: skip
    """Per model: each reading's confidence and whether it is exact."""
    out = {}
    for m, head in heads.items():
        features, right = evidence(head, pictures, answered[m], texts)
        out[m] = (CONFIDENCE.probabilities(features), right)
    return out


def confidence_markdown(sureness: dict[str, Sureness], models: list[str]) -> str:
    """Per family and model, the mean confidence beside the share read exactly (of the readings made);
    over all of them, per model, the calibration error, how well it ranks right above wrong, and what
    keeping the readings at SURE or above keeps."""
    head = " | ".join(f"{m}: confidence / exact" for m in models)
    lines = [f"| family | {head} |", f"|---|{'---:|' * len(models)}"]
    for label, per_model in sureness.items():
        cells = [f"{p.mean():.3f} / {right.mean():.3f}" if p.size else "-" for p, right in per_model.values()]
        lines.append(f"| {label} | {' | '.join(cells)} |")
    for m in models:
        p = np.concatenate([per_model[m][0] for per_model in sureness.values()])
        right = np.concatenate([per_model[m][1] for per_model in sureness.values()])
        kept = p >= SURE
        exact_kept = 100 * right[kept].mean() if kept.any() else 0.0
        both = 0 < right.sum() < right.size
        ranked = auroc(torch.from_numpy(p[right]), torch.from_numpy(p[~right])) if both else float("nan")
        lines.append(
            f"{m}: {right.size} readings, {100 * right.mean():.1f}% exact, mean confidence {p.mean():.3f}, "
            f"calibration error {sureness_error(p, right):.3f}, AUROC {ranked:.3f}; confidence >= {SURE}: "
            f"{100 * kept.mean():.1f}% kept, {exact_kept:.1f}% of them exact"
        )
    return "\n".join(lines)


def hint_table(
    heads: dict[str, ServingHead], one_digit: OneDigit, texts: list[str],
    pictures: list[Candidates | None], answered: dict[str, list[np.ndarray | None]],
) -> dict[str, dict[str, float]]:  # fmt: skip
    """Per model, how often /predict's hint names these texts (``training.number_hints``):
    ``one_digit``, the inputs through the one-digit preprocessing (``preprocess_uploads`` or
    ``preprocess_drawings``), answered once for every model; the split and its rows are the reading's
    own."""
    singles, refused = one_digit
    hints = {m: named(head, singles, refused, pictures, answered[m]) for m, head in heads.items()}
    return {m: hint_rates(h, texts) for m, h in hints.items()}


def _row(
    label: str, heads: dict[str, ServingHead], texts: list[str], split: Callable[[], list[Candidates | None]]
) -> tuple[list[Candidates | None], dict[str, list[np.ndarray | None]], dict[str, float], str]:
    """Split the numbers (``split``), answer and read them with every model: (the splits, every model's
    rows, the exact-read rate per model, the table's row)."""
    t0 = time.perf_counter()
    pictures = split()
    per_picture_ms = 1000 * (time.perf_counter() - t0) / len(texts)
    crops = np.mean([len(c.crops) if c is not None else 0 for c in pictures])
    answered = {m: answer(head, pictures) for m, head in heads.items()}
    rates, counted = {}, {}
    for m, head in heads.items():
        got = read(head, pictures, answered=answered[m])
        rates[m] = float(np.mean([g == t for g, t in zip(got, texts, strict=True)]))
        counted[m] = float(np.mean([len(g) == len(t) for g, t in zip(got, texts, strict=True)]))
    log.info("%s: %d numbers, segmentation %.1f ms and %.1f crops per picture", label, len(texts),
             per_picture_ms, crops)  # fmt: skip
    cells = " | ".join(f"{100 * rates[m]:.1f}%" for m in heads)
    count_cells = " | ".join(f"{100 * counted[m]:.1f}%" for m in heads)
    return pictures, answered, rates, f"| {label} | {len(texts)} | {cells} | {count_cells} |"


def read_not_numbers(
    heads: dict[str, ServingHead], count: int, seed: int, families: tuple[str, ...] = NOT_NUMBERS
) -> dict[str, dict[str, tuple[np.ndarray, np.ndarray]]]:  # fmt: skip
    """Per family of pictures that are not numbers (and per family sent as strokes) and model:
    ``not_number_evidence`` of ``count`` of them."""
    out = {}
    for family in families:
        for drawn in (False, True) if family in DRAWN_NOT_NUMBERS else (False,):
            label = f"{family}, sent as strokes" if drawn else family
            pictures = (
                split_drawings(pen_drawings(family, count, seed)) if drawn
                else split_uploads(make_not_numbers(family, count, seed))
            )  # fmt: skip
            out[label] = {}
            for m, head in heads.items():
                out[label][m] = not_number_evidence(head, pictures, answer(head, pictures))
            log.info("%s: %d pictures that are not numbers read", label, len(pictures))
    return out


OneDigit = tuple[np.ndarray, np.ndarray]  # inputs through the one-digit preprocessing, and those refused
# label, texts, how to split them, how the one-digit routes take them (``hint_table``'s ``one_digit``)
Row = tuple[str, list[str], Callable[[], list[Candidates | None]], Callable[[], OneDigit]]


def number_rows(
    family: str, samples: list[tuple[np.ndarray, str]], uploads: list[bytes], count: int, seed: int,
    rules_only: bool = False,
) -> list[Row]:  # fmt: skip
    """A family's rows: its pictures (``uploads``, the ``samples`` encoded) and, for a pen family, the
    numbers as the page sends them, their strokes (``make_drawings``)."""
    rows: list[Row] = [
        (
            family, [text for _, text in samples], lambda: split_uploads(uploads, rules_only),
            lambda: preprocess_uploads(uploads, len(uploads)),
        )
    ]  # fmt: skip
    if family in DRAWN_FAMILIES:
        drawn = make_drawings(family, count, seed)
        strokes = [d for d, _ in drawn]
        rows.append(
            (
                f"{family}, sent as strokes", [t for _, t in drawn],
                lambda: split_drawings(strokes, rules_only), lambda: preprocess_drawings(strokes),
            )
        )  # fmt: skip
    return rows


def run_read_eval(args: argparse.Namespace) -> dict[str, dict[str, float]]:
    heads = serving_heads(args)
    models = list(heads)
    mnist = None
    if "mnist" in args.families:
        test = load_split("mnist", args.data_root, train=False, download=False)
        mnist = (test.images[:, 0].numpy(), test.labels.numpy())
    rates: dict[str, dict[str, float]] = {}
    hinted: dict[str, dict[str, dict[str, float]]] = {}
    hint_counts: dict[str, int] = {}
    sureness: dict[str, Sureness] = {}
    counts = " | ".join(f"count right ({m})" for m in models)
    lines = [f"| family | numbers | {' | '.join(models)} | {counts} |",
             f"|---|---:|{'---:|' * 2 * len(models)}"]  # fmt: skip
    if args.hints and args.rules_only:
        raise SystemExit("--hints measures the service's split: leave out --rules-only")

    def measure(
        label: str, texts: list[str], split: Callable[[], list[Candidates | None]]
    ) -> tuple[list[Candidates | None], dict[str, list[np.ndarray | None]]]:  # fmt: skip
        """One row of the table (and of the confidence's): the splits and every model's rows."""
        pictures, answered, rates[label], row = _row(label, heads, texts, split)
        lines.append(row)
        sureness[label] = _sureness(heads, pictures, answered, texts)
        return pictures, answered

    for family in args.families:
        samples = family_or_none(family, args.count, args.seed, mnist)
        if samples is None:
            continue
        uploads = encoded(samples)
        for label, texts, split, one_digit in number_rows(
            family, samples, uploads, args.count, args.seed, args.rules_only
        ):  # fmt: skip
            pictures, answered = measure(label, texts, split)
            if args.hints:  # the numbers of two digits or more, split and answered above
                several = [i for i, text in enumerate(texts) if len(text) >= 2]
                singles, refused = one_digit()
                hinted[label] = hint_table(
                    heads, (singles[several], refused[several]), [texts[i] for i in several],
                    [pictures[i] for i in several], {m: [a[i] for i in several] for m, a in answered.items()},
                )  # fmt: skip
                hint_counts[label] = len(several)
    print("\n".join(lines))
    if not args.rules_only:  # the confidence was fitted on the service's split
        print(f"\nHow sure each reading is (model_store.text_confidence), seed {args.seed}:")
        print(confidence_markdown(sureness, models))
        if args.not_numbers:
            print(f"\nPictures that are not numbers (training.not_numbers), seed {args.seed}:")
            print(
                not_number_markdown(
                    weigh_not_numbers(read_not_numbers(heads, args.not_numbers, args.seed)), models
                )
            )
    if args.hints:

        def other_row(
            family: str, texts: list[str], pictures: list[Candidates | None], one_digit: OneDigit
        ) -> None:
            answered = {m: answer(head, pictures) for m, head in heads.items()}
            hinted[family] = hint_table(heads, one_digit, texts, pictures, answered)
            hint_counts[family] = len(texts)

        for family, items in other_uploads(args.hints, args.seed).items():
            uploads = [u for u, _ in items]
            texts = [t for _, t in items]
            other_row(family, texts, split_uploads(uploads), preprocess_uploads(uploads, len(uploads)))
        for family, drawings in other_drawings(args.hints, args.seed).items():
            other_row(family, [""] * len(drawings), split_drawings(drawings), preprocess_drawings(drawings))
        print("\n" + hints_markdown(hinted, hint_counts, models))
    if "strokes" in rates:
        for m in models:
            ok = rates["strokes"][m] >= TARGET
            print(f"{m}: strokes {100 * rates['strokes'][m]:.1f}% (target >= {100 * TARGET:.0f}%: "
                  f"{'pass' if ok else 'FAIL'})")  # fmt: skip
    return rates
