"""``robustness``: stored models scored on corrupted uploads, through the real upload preprocessing.

Each corruption (``training.corruptions``) turns the same seeded sample of MNIST test digits into
encoded images; ``model_store.preprocess.preprocess_bytes`` (what the server runs on every upload)
turns them back into 28x28 inputs, and each model answers through its ``ServingHead``. A picture the
preprocessing refuses (no ink found) counts as an error. Also counted: how often the model's digit
score calls a corrupted digit "not a digit" (``is_digit`` false, as the service would answer), how far
the served confidence is from the accuracy (ECE per corruption and pooled), and, where Fashion-MNIST is
on the machine, how often the digit score calls real pictures that are not digits so
(``training.real_outliers``), and real photographs (``training.real_photos``), and how it answers digits
in other writers' styles (``training.writing_styles``), letters drawn in shapes the detector was not
fitted on (``training.other_letters``), digits written small and large on the page's
pad (``training.pad_sizes``) and, where scikit-learn is installed, real 8x8 digits by other writers
(``training.optdigits``), and, where the DSEG7 fonts are, digits on seven-segment displays
(``training.display_eval``).
Results: a markdown table on stdout, and ``robustness.json`` and ``robustness.png`` in the output
folder.
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from pathlib import Path

import numpy as np
import torch

from .calibration_metrics import expected_calibration_error
from .corruptions import CORRUPTIONS, FAMILIES, FAMILY_OF, corrupt
from .data import load_split
from .display_eval import display_check
from .display_eval import markdown as displays_markdown
from .evaluate import add_store_args, answers_of, preprocess_uploads, served_outputs, serving_heads
from .optdigits import markdown as optdigits_markdown
from .optdigits import optdigits_check
from .other_letters import markdown as letters_markdown
from .other_letters import other_letters_check
from .pad_sizes import markdown as sizes_markdown
from .pad_sizes import pad_sizes_check
from .real_outliers import fashion_check
from .real_outliers import markdown as fashion_markdown
from .real_photos import markdown as photos_markdown
from .real_photos import photo_check
from .writing_styles import markdown as styles_markdown
from .writing_styles import writing_styles_check

log = logging.getLogger("training")

TARGETS = {"mean": 0.97, "each": 0.90, "low_res": 0.95}


def add_robustness_args(p: argparse.ArgumentParser, settings) -> None:
    p.add_argument("models", nargs="*", help="model names (default: every model in the store)")
    add_store_args(p, settings)
    p.add_argument("--limit", type=int, default=1000, help="test digits per corruption; default: 1000")
    p.add_argument("--corruptions", nargs="+", metavar="NAME", choices=[*CORRUPTIONS, *FAMILIES],
                   help="corruptions or families to run; default: all")  # fmt: skip
    p.add_argument("--seed", type=int, default=0, help="digit sample and corruption seed; default: 0")
    p.add_argument(
        "--no-fashion",
        action="store_true",
        help="skip the Fashion-MNIST check (real pictures that are not digits, --limit of them)",
    )
    p.add_argument("--per-style", type=int, default=100,
                   help="digits per writing style (training.writing_styles), 0 to skip; "
                        "default: 100")  # fmt: skip
    p.add_argument("--per-letter", type=int, default=20,
                   help="letters of each shape (training.other_letters: letters drawn on the pad in shapes "
                        "the detector was not fitted on), 0 to skip; default: 20")  # fmt: skip
    p.add_argument("--per-size", type=int, default=30,
                   help="digits of each class per height of writing on the pad (training.pad_sizes), "
                        "0 to skip; default: 30")  # fmt: skip
    p.add_argument("--no-optdigits", action="store_true",
                   help="skip the optdigits check (scikit-learn's 8x8 digits by other writers)")  # fmt: skip
    p.add_argument("--photo-crops", type=int, default=40,
                   help="crops of each real photo (training.real_photos: photos that are not digits), 0 to "
                        "skip the check; default: 40")  # fmt: skip
    p.add_argument("--per-face", type=int, default=2,
                   help="digits of each class per DSEG7 face and look (training.display_eval: seven-segment "
                        "displays), 0 to skip; default: 2")  # fmt: skip
    p.add_argument("--out-dir", type=Path, default=Path("docs/robustness"),
                   help="where robustness.json and robustness.png go; default: docs/robustness")  # fmt: skip


def _selected(names: list[str] | None) -> list[str]:
    if not names:
        return list(CORRUPTIONS)
    wanted = {c for n in names for c in (FAMILIES[n] if n in FAMILIES else [n])}
    return [c for c in CORRUPTIONS if c in wanted]  # table order


def preprocess_corrupted(name: str, digits: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Corrupt and preprocess every digit: (N, 28, 28) inputs and a mask of those refused."""
    rng = np.random.default_rng([seed, list(CORRUPTIONS).index(name)])
    return preprocess_uploads((corrupt(name, u8, rng) for u8 in digits), len(digits))


def summarise(
    acc: dict[str, dict[str, float]], models: list[str], flagged: dict[str, dict[str, float]] | None = None
) -> dict:
    """Family means, overall mean (over corruptions, the clean one excluded) and the targets; with
    ``flagged``, also its mean over the same corruptions (``flagged_mean``)."""
    names = [n for n in acc if FAMILY_OF[n] != "clean"]
    out: dict = {"families": {}, "mean": {}, "targets": {}}
    if flagged is not None:
        out["flagged_mean"] = {m: float(np.mean([flagged[n][m] for n in names])) if names else 0.0
                               for m in models}  # fmt: skip
    for m in models:
        fams = {f: float(np.mean([acc[n][m] for n in acc if FAMILY_OF[n] == f])) for f in FAMILIES
                if any(FAMILY_OF[n] == f for n in acc)}  # fmt: skip
        out["families"][m] = fams
        mean = float(np.mean([acc[n][m] for n in names])) if names else float("nan")
        out["mean"][m] = mean
        targets = {}  # only what this run measured: a target over corruptions that did not run is no pass
        if names:
            targets["mean>=97"] = mean >= TARGETS["mean"]
            targets["each>=90"] = min(acc[n][m] for n in names) >= TARGETS["each"]
        if "low_res" in fams:
            targets["low_res>=95"] = fams["low_res"] >= TARGETS["low_res"]
        out["targets"][m] = targets
    return out


def calibration_of(probs: torch.Tensor, truth: torch.Tensor) -> dict[str, float]:
    """How far the served confidence is from the accuracy on some uploads: ECE (15 bins), the mean
    confidence, the accuracy."""
    if len(truth) == 0:
        return {"ece": 0.0, "confidence": 0.0, "accuracy": 0.0}
    return {
        "ece": expected_calibration_error(probs, truth),
        "confidence": float(probs.max(1).values.mean()),
        "accuracy": float((probs.argmax(1) == truth).float().mean()),
    }


def calibration_markdown(confidence: dict, summary: dict, models: list[str], worst: int = 5) -> str:
    """Pooled over the corruptions (the clean one excluded), then the corruptions with the largest ECE."""
    lines = [f"| calibration on corrupted uploads | {' | '.join(models)} |", f"|---|{'---:|' * len(models)}"]
    for m_key, label in (("ece", "ECE (15 bins), pooled"), ("confidence", "mean confidence"),
                         ("accuracy", "accuracy of the uploads read")):  # fmt: skip
        cells = " | ".join(f"{100 * summary['calibration_pooled'][m][m_key]:.1f}%"
                           for m in models if m in summary["calibration_pooled"])  # fmt: skip
        if cells:
            lines.append(f"| {label} | {cells} |")
    for m in models:
        ranked = sorted(confidence, key=lambda n: -confidence[n][m]["ece"])[:worst]
        cells = ", ".join(f"`{n}` {100 * confidence[n][m]['ece']:.1f}%" for n in ranked)
        lines.append(f"| largest ECE, {m} | {cells} |" + " |" * (len(models) - 1))
    return "\n".join(lines)


def markdown(
    acc: dict[str, dict[str, float]], flagged: dict[str, dict[str, float]], summary: dict, models: list[str]
) -> str:
    """Accuracy per corruption and model, then the share called not a digit (``flagged``)."""
    flags = " | ".join(f"{m}: not a digit" for m in models)
    head = f"| corruption | family | {' | '.join(models)} | {flags} |\n|---|---|{'---:|' * 2 * len(models)}"
    rows = [f"| {n} | {FAMILY_OF[n]} | " + " | ".join(f"{100 * acc[n][m]:.1f}" for m in models) + " | "
            + " | ".join(f"{100 * flagged[n][m]:.1f}" for m in models) + " |" for n in acc]  # fmt: skip
    blank = " |" * len(models)
    for f in summary["families"][models[0]]:
        vals = " | ".join(f"{100 * summary['families'][m][f]:.1f}" for m in models)
        rows.append(f"| *{f} (mean)* | | {vals} |{blank}")
    if any(FAMILY_OF[n] != "clean" for n in acc):  # a clean-only run has no mean over corruptions
        rows.append("| **mean over corruptions** | | " +
                    " | ".join(f"**{100 * summary['mean'][m]:.1f}**" for m in models) + " | " +
                    " | ".join(f"{100 * summary['flagged_mean'][m]:.1f}" for m in models) + " |")  # fmt: skip
    return "\n".join([head, *rows])


def plot(acc: dict[str, dict[str, float]], models: list[str], path: Path) -> Path:
    from .plots import _save, plt

    names = list(acc)
    fig, ax = plt.subplots(figsize=(max(8, 0.5 * len(names) * len(models)), 4.5))
    width = 0.8 / len(models)
    for k, m in enumerate(models):
        xs = np.arange(len(names)) + (k - (len(models) - 1) / 2) * width
        ax.bar(xs, [100 * acc[n][m] for n in names], width, label=m)
    for level, style in ((100 * TARGETS["each"], ":"), (100 * TARGETS["mean"], "--")):
        ax.axhline(level, color="gray", linestyle=style, linewidth=1)
    ax.set_xticks(np.arange(len(names)), names, rotation=60, ha="right")
    ax.set(ylabel="accuracy (%)", ylim=(min(80, 100 * min(min(v.values()) for v in acc.values()) - 2), 100),
           title="Accuracy on corrupted uploads (through the upload preprocessing)")  # fmt: skip
    ax.grid(axis="y", alpha=0.3)
    ax.legend(loc="lower left")
    return _save(fig, path)


def run_robustness(args: argparse.Namespace) -> dict:
    heads = serving_heads(args)
    models = list(heads)
    test = load_split("mnist", args.data_root, train=False, download=False)
    pick = np.random.default_rng(args.seed).permutation(len(test))[: args.limit]
    digits, labels = test.images[pick, 0].numpy(), test.labels[pick].numpy()
    acc: dict[str, dict[str, float]] = {}
    flagged: dict[str, dict[str, float]] = {}  # share of the (accepted) digits called not a digit
    refused: dict[str, int] = {}
    confidence: dict[str, dict[str, dict[str, float]]] = {}  # the served confidence against accuracy
    pooled: dict[str, list[tuple[torch.Tensor, torch.Tensor]]] = {m: [] for m in models}
    for name in _selected(args.corruptions):
        t0 = time.perf_counter()
        x, no_ink = preprocess_corrupted(name, digits, args.seed)
        t_prep = time.perf_counter() - t0
        acc[name], flagged[name], confidence[name] = {}, {}, {}
        for m, head in heads.items():
            out = served_outputs(head, x)
            classes, not_digit = answers_of(head, out)
            acc[name][m] = float(((classes == labels) & ~no_ink).mean())
            flagged[name][m] = float(not_digit[~no_ink].mean()) if (~no_ink).any() else 0.0
            probs, truth = out[~no_ink, : head.num_classes], torch.from_numpy(labels[~no_ink]).long()
            confidence[name][m] = calibration_of(probs, truth)
            if FAMILY_OF[name] != "clean":
                pooled[m].append((probs, truth))
        refused[name] = int(no_ink.sum())
        log.info("%-15s %s  (generate+preprocess %.0f us/image, %d refused)", name,
                 "  ".join(f"{m} {100 * a:.1f} (not a digit {100 * flagged[name][m]:.1f})"
                           for m, a in acc[name].items()),
                 1e6 * t_prep / len(digits), refused[name])  # fmt: skip
    summary = summarise(acc, models, flagged)
    summary["calibration_pooled"] = {
        m: calibration_of(torch.cat([p for p, _ in pooled[m]]), torch.cat([t for _, t in pooled[m]]))
        for m in models if pooled[m]
    }  # fmt: skip
    fashion = None if args.no_fashion else fashion_check(heads, args.data_root, args.limit, args.seed)
    styles = writing_styles_check(heads, args.per_style, args.seed) if args.per_style else None
    letters = other_letters_check(heads, args.per_letter, args.seed) if args.per_letter else None
    sizes = pad_sizes_check(heads, args.per_size, args.seed) if args.per_size else None
    optdigits = None if args.no_optdigits else optdigits_check(heads)
    photos = photo_check(heads, args.photo_crops, args.seed) if args.photo_crops else None
    displays = display_check(heads, args.per_face, args.seed)
    result = {"limit": len(digits), "seed": args.seed, "models": models, "accuracy": acc,
              "not_a_digit": flagged, "refused": refused, "calibration": confidence, **summary,
              "fashion_mnist": fashion, "photos": photos,
              "writing_styles": styles, "other_letters": letters, "pad_sizes": sizes, "optdigits": optdigits,
              "displays": displays}  # fmt: skip
    args.out_dir.mkdir(parents=True, exist_ok=True)
    (args.out_dir / "robustness.json").write_text(json.dumps(result, indent=2) + "\n")
    plot(acc, models, args.out_dir / "robustness.png")
    print(markdown(acc, flagged, summary, models))
    print("\n" + calibration_markdown(confidence, summary, models))
    if fashion is not None:
        print("\nCalled not a digit, real pictures never generated nor fitted (Fashion-MNIST test):\n")
        print(fashion_markdown(fashion, models))
    if photos is not None:
        print(f"\nCalled not a digit, real photos never generated nor fitted ({args.photo_crops} crops of "
              "each):\n")  # fmt: skip
        print(photos_markdown(photos, models))
    if styles is not None:
        print(f"\nOther writers' styles, drawn like the page ({args.per_style} each):\n")
        print(styles_markdown(styles, models))
    if letters is not None:
        print(f"\nLetters drawn on the pad in shapes the detector was not fitted on ({args.per_letter} "
              "each):\n")  # fmt: skip
        print(letters_markdown(letters, models))
    if sizes is not None:
        print(f"\nDigits written small and large on the page's pad ({10 * args.per_size} per height):\n")
        print(sizes_markdown(sizes, models))
    if optdigits is not None:
        print(f"\nReal digits by other writers, 8x8 (scikit-learn's {optdigits['digits']} optdigits):\n")
        print(optdigits_markdown(optdigits, models))
    if displays is not None:
        print(f"\nDigits on seven-segment displays ({args.per_face} of each per face and look):\n")
        print(displays_markdown(displays))
    for m in models:
        checked = ", ".join(f"{k} {'ok' if v else 'MISSED'}" for k, v in summary["targets"][m].items())
        print(f"targets {m}: {checked or 'none checked (no corruption ran)'}")
    return result
