"""How the served models read single digits on seven-segment displays (``training.display_fonts``).

Every digit in every DSEG7 face, in each look, at a random size (24-160 px tall, a phone's crop of a
meter to a screenshot), sent through the upload path as the service receives it; per look, the share
read right and the share called "not a digit". Part of ``python -m training robustness``.
"""

from __future__ import annotations

import logging

import numpy as np

from model_store.serving import ServingHead

from .display_fonts import INSTALL, LOOKS, display_fonts, display_picture
from .evaluate import preprocess_uploads, served_answers

log = logging.getLogger("training")

SIZES = (24, 160)  # px, the digits' height


def display_check(heads: dict[str, ServingHead], repeats: int, seed: int) -> dict | None:
    """Per look, ``repeats`` x 10 digits x every face: read right and "not a digit" per model (a picture
    refused as empty counts as not read and as flagged, as the service answers 422). None without the
    fonts."""
    fonts = display_fonts()
    if not fonts or repeats <= 0:
        if repeats > 0:
            log.info("skipping the seven-segment display check: %s", INSTALL)
        return None
    rng = np.random.default_rng([seed, 11])
    out: dict = {"faces": len(fonts), "looks": {}}
    for look in LOOKS:
        uploads, labels = [], []
        for _ in range(repeats):
            for font in fonts:
                for digit in range(10):
                    size = int(rng.integers(*SIZES))
                    uploads.append(display_picture(str(digit), rng, font, look, size))
                    labels.append(digit)
        x, refused = preprocess_uploads(uploads, len(uploads))
        y = np.array(labels)
        out["looks"][look] = {"images": len(y), "models": {}}
        for name, head in heads.items():
            classes, flagged = served_answers(head, x)
            flagged |= refused
            out["looks"][look]["models"][name] = {
                "read": float(np.mean((classes == y) & ~refused)),
                "not_a_digit": float(np.mean(flagged)),
                "per_digit": [float(np.mean(classes[y == d] == d)) for d in range(10)],
            }
    return out


def markdown(result: dict) -> str:
    models = list(next(iter(result["looks"].values()))["models"])
    lines = [
        f"| look ({result['faces']} DSEG7 faces) | images | "
        + " | ".join(f"{m}: read / not a digit" for m in models) + " |",
        "|---|---:|" + "---:|" * len(models),
    ]  # fmt: skip
    for look, r in result["looks"].items():
        cells = " | ".join(
            f"{100 * s['read']:.1f}% / {100 * s['not_a_digit']:.1f}%" for s in r["models"].values()
        )
        lines.append(f"| {look} | {r['images']} | {cells} |")
    for m in models:
        worst = sorted(
            (
                (r["models"][m]["per_digit"][d], look, d)
                for look, r in result["looks"].items()
                for d in range(10)
            )
        )[:3]
        lines.append(
            f"\n{m}, least read: " + ", ".join(f"{d} ({look}) {100 * p:.0f}%" for p, look, d in worst)
        )
    return "\n".join(lines)
