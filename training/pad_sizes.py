"""Digits written small and large on the page's square pad, and numbers in two small lines on its wide
pad, as a check of the page's pen.

The pad shows a marker 7.5% of its height wide whatever the size of the writing; a digit written in a
quarter of the pad would reach the server as a blob, so the picture the page sends draws small writing
with a finer pen (``training.drawn.upload_pen``, as app/static/pad.js). Per height of the writing (its
strokes' centre lines, as a share of the pad's height): for digits, the share read right and the share
called "not a digit"; for two lines of 2-4 digit numbers, the share read exactly (both lines); each sent as
the page sends it and, for comparison, drawn with the marker the pad shows.
"""

from __future__ import annotations

import numpy as np
from PIL import Image

from model_store.serving import ServingHead

from .drawn import DIGIT_STROKES, STROKE_FRACTION, Stroke, hand, png_bytes, render_strokes
from .evaluate import preprocess_uploads, served_answers
from .pen_numbers import PAD_HEIGHT, PAD_WIDTH, as_sent, draw_strokes, hand_digits, side_by_side
from .read_eval import read, split_uploads

HEIGHTS = (0.12, 0.16, 0.2, 0.3, 0.45, 0.65)  # of the pad's height
LINE_HEIGHTS = (0.15, 0.22, 0.3)  # a line of two on the wide pad
PENS = ("sent", "marker")  # the page's upload pen; the marker the pad shows (the page before it)


def sized(strokes: list[Stroke], height: float, rng: np.random.Generator) -> list[Stroke]:
    """``strokes`` scaled to ``height`` pad heights tall and put anywhere on the square pad with at least
    a marker's width of paper round them."""
    pts = np.concatenate([np.asarray(s) for s in strokes])
    lo, hi = pts.min(axis=0), pts.max(axis=0)
    k = height / max(hi[1] - lo[1], 1e-6)
    span = (hi - lo) * k
    margin = STROKE_FRACTION
    origin = [rng.uniform(margin, max(margin, 1.0 - margin - span[i])) for i in range(2)]
    return [[(float(x), float(y)) for x, y in (np.asarray(s) - lo) * k + origin] for s in strokes]


def size_uploads(height: float, per_digit: int, seed: int) -> dict[str, list[bytes]]:
    """``per_digit`` hands of each digit ``height`` tall, as PNG uploads drawn with each of PENS."""
    rng = np.random.default_rng([seed, round(1000 * height)])
    out: dict[str, list[bytes]] = {pen: [] for pen in PENS}
    for digit in range(10):
        for _ in range(per_digit):
            variants = DIGIT_STROKES[digit]
            strokes = sized(hand(variants[rng.integers(len(variants))], rng, scale=(1.0, 1.0)), height, rng)
            out["sent"].append(png_bytes(render_strokes(strokes)))
            out["marker"].append(png_bytes(render_strokes(strokes, stroke_fraction=STROKE_FRACTION)))
    return out


def two_line_uploads(height: float, count: int, seed: int) -> tuple[dict[str, list[bytes]], list[str]]:
    """``count`` pairs of 2-4 digit numbers written in two lines ``height`` pad heights tall on the wide
    pad, as PNG uploads drawn with each of PENS, and their texts (the lines joined by a newline)."""
    rng = np.random.default_rng([seed, 1, round(1000 * height)])
    out: dict[str, list[bytes]] = {pen: [] for pen in PENS}
    texts = []
    tall = height * PAD_HEIGHT
    for _ in range(count):
        lines = ["".join(map(str, rng.integers(0, 10, int(rng.integers(2, 5))))) for _ in range(2)]
        top, left = rng.uniform(0.1, 0.2) * PAD_HEIGHT, rng.uniform(0.1, 0.3) * PAD_WIDTH
        pixels: list[Stroke] = []
        for k, text in enumerate(lines):
            digits = hand_digits(text, rng)
            gaps = [rng.uniform(0.15, 0.4) for _ in digits[1:]]
            pixels += side_by_side(digits, gaps, left, top + k * tall * rng.uniform(1.4, 1.8), tall, rng)
        out["sent"].append(png_bytes(Image.fromarray(as_sent(pixels))))
        marker = draw_strokes(pixels, (PAD_WIDTH, PAD_HEIGHT), STROKE_FRACTION * PAD_HEIGHT)
        out["marker"].append(png_bytes(Image.fromarray(marker)))
        texts.append("\n".join(lines))
    return out, texts


def pad_sizes_check(heads: dict[str, ServingHead], per_digit: int, seed: int) -> dict:
    """Per height, pen and model: of the digits, the share read right and the share called not a digit
    (or refused as empty); of the two-line numbers (2 * ``per_digit`` per height), the share read exactly."""
    labels = np.repeat(np.arange(10), per_digit)
    result: dict = {"per_digit": per_digit, "seed": seed, "heights": {}}
    for height in HEIGHTS:
        row: dict = {}
        for pen, uploads in size_uploads(height, per_digit, seed).items():
            x, refused = preprocess_uploads(uploads, len(uploads))
            row[pen] = {}
            for m, head in heads.items():
                classes, not_digit = served_answers(head, x)
                row[pen][m] = {
                    "read": float(((classes == labels) & ~refused).mean()),
                    "not_a_digit": float((not_digit | refused).mean()),
                }
        result["heights"][str(height)] = row
    result["two_lines"] = {}
    for height in LINE_HEIGHTS:
        uploads, texts = two_line_uploads(height, 2 * per_digit, seed)
        result["two_lines"][str(height)] = {pen: {} for pen in PENS}
        for pen, pictures in uploads.items():
            pieces = split_uploads(pictures)
            for m, head in heads.items():
                hits = [got == want for got, want in zip(read(head, pieces), texts, strict=True)]
                result["two_lines"][str(height)][pen][m] = float(np.mean(hits))
    return result


def markdown(result: dict, models: list[str]) -> str:
    cols = " | ".join(f"{m}: read / not a digit (with the marker)" for m in models)
    rows = [f"| height of the writing | {cols} |", f"|---|{'---:|' * len(models)}"]
    for height, row in result["heights"].items():
        cells = " | ".join(
            "{:.1%} / {:.1%} ({:.1%} / {:.1%})".format(
                row["sent"][m]["read"], row["sent"][m]["not_a_digit"],
                row["marker"][m]["read"], row["marker"][m]["not_a_digit"],
            )
            for m in models
        )  # fmt: skip
        rows.append(f"| {float(height):.0%} of the pad | {cells} |")
    cols = " | ".join(f"{m}: read exactly (with the marker)" for m in models)
    rows += ["", f"| two lines, each | {cols} |", f"|---|{'---:|' * len(models)}"]
    for height, row in result["two_lines"].items():
        cells = " | ".join(f"{row['sent'][m]:.1%} ({row['marker'][m]:.1%})" for m in models)
        rows.append(f"| {float(height):.0%} of the pad | {cells} |")
    return "\n".join(rows)
