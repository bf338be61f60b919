"""``python -m training calibrate``: temperature and "is it a digit" for stored checkpoints.

For each model: fit the temperature on the validation split the card names (Guo et al. 2017); fit
class means and a shared covariance of the features on training images (Lee et al. 2018); fit the
detector MLP (``model_store.digit_detector``) on layer summaries of training digits, pen digits (the
writing styles training teaches), drawn digits and corrupted training digits against generated outliers,
all from *fitting* seeds (``--seed`` + 1, ...);
give every candidate digit score (detector, Mahalanobis, energy, max-softmax) the threshold that flags
a fixed small share of validation digits; measure each on MNIST test digits and on drawn digits,
corrupted test digits and outliers generated with ``--seed`` (never fitted on); keep the best; write
calibration.json + ood.safetensors beside the weights and record the sha256, the measurements and
this command in the card. ``--leave-one-family-out`` also refits the detector without each outlier
family in turn and measures it on that family: how it does on kinds of outlier it never saw.
"""

from __future__ import annotations

import argparse
import logging
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

from model_store import ModelStore, load_checkpoint, read_card
from model_store.calibration import (
    METHODS,
    Calibration,
    digit_score,
    fit_mahalanobis,
    save_calibration,
)
from model_store.digit_detector import DETECTOR_KEYS
from model_store.serving import ServingHead, resolve_device

from .calibration_inputs import Inputs, Outputs, make_inputs, model_outputs, u8_to_01
from .calibration_metrics import auroc, expected_calibration_error, fit_temperature, flag_rate, threshold_at
from .data import DataBundle, load_data
from .detector_fit import fit_detector
from .outliers import FAMILIES

log = logging.getLogger("training")

DOCS_DIR = Path("docs/calibration")


def add_calibrate_args(p: argparse.ArgumentParser, settings) -> None:
    p.add_argument("models", nargs="*", help="model names (default: every model in the store)")
    p.add_argument("--store-dir", type=Path, default=settings.model_store_dir, help="env MODEL_STORE_DIR")
    p.add_argument(
        "--data-root", type=Path, default=settings.data_root, help="holds MNIST/raw/ (env DATA_ROOT)"
    )
    p.add_argument("--method", default="auto", choices=["auto", *METHODS],
                   help="digit score; auto: most outliers flagged within the digit targets")  # fmt: skip
    p.add_argument(
        "--val-flag-rate",
        type=float,
        default=0.0025,
        help="share of validation digits below the threshold; default: 0.0025",
    )
    p.add_argument(
        "--fit-images",
        type=int,
        default=20000,
        help="training images for the feature statistics; default: 20000",
    )
    p.add_argument("--outliers-per-family", type=int, default=150, help="default: 150")
    p.add_argument("--drawn-per-class", type=int, default=100, help="default: 100")
    p.add_argument("--pen-digits", type=int, default=2000,
                   help="pen digits (training.pen_digits) among the digits fitted on; "
                        "default: 2000")  # fmt: skip
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the outliers, drawn and corrupted digits measured on; the detector is "
                        "fitted on seeds seed+1, seed+2, ...; default: 0")  # fmt: skip
    p.add_argument("--fit-seeds", type=int, default=6, help="outlier seeds to fit on; default: 6")
    p.add_argument("--corrupted-per-kind", type=int, default=60,
                   help="digits per corruption, fitted on and measured on; default: 60")  # fmt: skip
    p.add_argument("--detector-epochs", type=int, default=60, help="default: 60")
    p.add_argument("--detector-members", type=int, default=5,
                   help="MLPs whose mean score is the detector (training.detector_fit); "
                        "default: 5")  # fmt: skip
    p.add_argument("--leave-one-family-out", action="store_true",
                   help="also refit the detector without each family, measured on it")  # fmt: skip
    p.add_argument(
        "--plots-dir", type=Path, default=DOCS_DIR, help=f"reliability diagrams; default: {DOCS_DIR}"
    )
    p.add_argument("--device", default="auto", help="auto, cpu or cuda; default: auto")  # fmt: skip


# ----------------------------------------------------------------------------------- measuring


def _scores(method: str, out: Outputs, temperature: float, maha, detector) -> torch.Tensor:
    """``maha``: (whitened means, whitening) or None; ``detector``: its tensors by key, or None."""
    whitened_means, whitening = maha if maha is not None else (None, None)
    return digit_score(
        method, features=out.features, logits=out.logits, summaries=out.summaries,
        probs=torch.softmax(out.logits.float() / temperature, dim=-1),
        whitened_means=whitened_means, whitening=whitening,
        detector=tuple(detector[k] for k in DETECTOR_KEYS) if detector is not None else None,
    )  # fmt: skip


def measure_method(method: str, sets: dict, temperature: float, maha, detector, val_flag_rate: float) -> dict:
    """Threshold on validation digits, then flag rates on every set and outlier recall per family."""
    s = {k: _scores(method, sets[k], temperature, maha, detector)
         for k in ("val", "test", "outliers", "drawn", "corrupted")}  # fmt: skip
    thr = threshold_at(s["val"], val_flag_rate)
    families = sets["families"]
    return {
        "threshold": thr,
        "flag_rate_test": flag_rate(s["test"], thr),
        "flag_rate_drawn": flag_rate(s["drawn"], thr),
        "flag_rate_corrupted": flag_rate(s["corrupted"], thr),
        # of the outliers that reach the model (the preprocessing refuses some before it)
        "outlier_recall": flag_rate(s["outliers"], thr),
        "outlier_recall_per_family": {
            f: flag_rate(s["outliers"][families == i], thr) for i, f in enumerate(FAMILIES)
        },
        "auroc_test_vs_outliers": auroc(s["test"], s["outliers"]),
    }


def leave_one_family_out(
    fit_digits: torch.Tensor, fit_out: Outputs, fit_families: torch.Tensor, sets: dict, args, val_flag_rate
) -> dict[str, float]:
    """Per family: recall on it (measuring seed) of a detector fitted without any of it."""
    recall = {}
    for i, family in enumerate(FAMILIES):
        det = fit_detector(fit_digits, fit_out.summaries[fit_families != i], epochs=args.detector_epochs,
                           members=args.detector_members)  # fmt: skip
        thr = threshold_at(_scores("detector", sets["val"], 1.0, None, det), val_flag_rate)
        held_out = sets["outliers"][sets["families"] == i]
        recall[family] = flag_rate(_scores("detector", held_out, 1.0, None, det), thr)
        log.info("leave %s out: %.1f%% of it flagged", family, 100 * recall[family])
    return recall


def pick_method(results: dict[str, dict], requested: str) -> str:
    if requested != "auto":
        return requested
    ok = [m for m, r in results.items() if r["flag_rate_test"] <= 0.005 and r["flag_rate_drawn"] <= 0.01]
    return max(ok or results, key=lambda m: results[m]["outlier_recall"])


def calibrate_checkpoint(directory: Path, args: argparse.Namespace, command: str, inputs: Inputs) -> dict:
    """Fit, measure, and write one checkpoint's calibration; returns the measurements."""
    t0 = time.perf_counter()
    device = resolve_device(args.device)
    model, card = load_checkpoint(directory, device)
    head = ServingHead(model, card).to(device)  # uncalibrated: we are measuring the raw model
    data, fit_idx, fit_seeds = inputs.data, inputs.fit_idx, inputs.fit_seeds
    fit_families, outliers = inputs.fit_families, inputs.outliers
    out_ok, drawn_ok = inputs.out_ok, inputs.drawn_ok
    train = model_outputs(head, u8_to_01(data.train.images[fit_idx]), device)
    maha = fit_mahalanobis(train.features, data.train.labels[fit_idx], len(card.labels))
    val = model_outputs(head, u8_to_01(data.val.images), device)
    test = model_outputs(head, u8_to_01(data.test.images), device)

    fit_out = model_outputs(head, inputs.fit_out_x, device)
    fit_digits = torch.cat([
        train.summaries,
        model_outputs(head, inputs.fit_drawn_x, device).summaries,
        model_outputs(head, inputs.fit_pen_x, device).summaries,
        model_outputs(head, inputs.fit_corrupted_x, device).summaries,
    ])  # fmt: skip
    detector = fit_detector(fit_digits, fit_out.summaries, epochs=args.detector_epochs, seed=args.seed,
                            members=args.detector_members)  # fmt: skip

    families = torch.tensor([FAMILIES.index(o.family) for o in outliers])[out_ok]
    sets = {"val": val, "test": test, "outliers": model_outputs(head, inputs.out_x, device),
            "drawn": model_outputs(head, inputs.drawn_x, device), "families": families,
            "corrupted": model_outputs(head, inputs.test_corrupted_x, device)}  # fmt: skip

    temperature = fit_temperature(val.logits, data.val.labels)
    test_labels = data.test.labels
    probs_before = torch.softmax(test.logits, -1)
    probs_after = torch.softmax(test.logits / temperature, -1)
    results = {m: measure_method(m, sets, temperature, maha, detector, args.val_flag_rate) for m in METHODS}
    method = pick_method(results, args.method)
    chosen = results[method]
    drawn_probs = torch.softmax(sets["drawn"].logits / temperature, -1)
    refused = {fam: float((~out_ok[[i for i, o in enumerate(outliers) if o.family == fam]]).double().mean())
               for fam in FAMILIES}  # fmt: skip
    metrics = {
        "temperature": temperature,
        "test_ece_uncalibrated": expected_calibration_error(probs_before, test_labels),
        "test_ece": expected_calibration_error(probs_after, test_labels),
        "test_median_confidence": float(probs_after.max(-1).values.median()),
        "test_share_confidence_ge_0.98": float((probs_after.max(-1).values >= 0.98).double().mean()),
        "test_median_confidence_uncalibrated": float(probs_before.max(-1).values.median()),
        "drawn_accuracy": float(
            (drawn_probs.argmax(-1) == torch.from_numpy(inputs.drawn_labels)[drawn_ok]).double().mean()
        ),
        "drawn_median_confidence": float(drawn_probs.max(-1).values.median()),
        "method": method,
        "val_flag_rate_target": args.val_flag_rate,
        "measuring_seed": args.seed,
        "fitting_seeds": fit_seeds,
        "outliers": len(outliers),
        "outliers_fitted_on": len(inputs.fit_out_x),
        "digits_fitted_on": len(fit_digits),
        "pen_digits_fitted_on": len(inputs.fit_pen_x),
        "corrupted_digits": len(sets["corrupted"].logits),
        "outliers_refused_by_preprocessing": refused,
        "drawn_digits": inputs.drawn_count,
        "methods": results,
        "fit_images": len(fit_idx),
        "seconds": 0.0,
    }
    if args.leave_one_family_out:
        metrics["detector_leave_one_family_out"] = leave_one_family_out(
            fit_digits, fit_out, fit_families, sets, args, args.val_flag_rate
        )
    calib = Calibration(
        temperature=temperature,
        method=method,
        threshold=chosen["threshold"],
        whitened_means=maha[0] if method == "mahalanobis" else None,
        whitening=maha[1] if method == "mahalanobis" else None,
        detector=detector if method == "detector" else None,
        metrics=metrics,
    )
    metrics["seconds"] = round(time.perf_counter() - t0, 1)
    card.metrics.update({
        "temperature": temperature, "test_ece_uncalibrated": metrics["test_ece_uncalibrated"],
        "test_ece": metrics["test_ece"], "test_median_confidence": metrics["test_median_confidence"],
        "digit_flag_rate_test": chosen["flag_rate_test"], "digit_flag_rate_drawn": chosen["flag_rate_drawn"],
        "outlier_recall": chosen["outlier_recall"],
    })  # fmt: skip
    save_calibration(directory, calib, command, card)
    if args.plots_dir:
        from .reliability import plot_reliability

        path = plot_reliability(
            probs_before,
            probs_after,
            test_labels,
            args.plots_dir / f"{card.name}-reliability.png",
            title=f"{card.name}: MNIST test, T = {temperature:.3f}",
        )
        log.info("reliability diagram: %s", path)
    log.info(
        "%s: T %.3f, ECE %.4f -> %.4f; %s threshold %.3f flags %.2f%% test, %.2f%% drawn, "
        "%.1f%% outliers (%.0fs)",
        card.name,
        temperature,
        metrics["test_ece_uncalibrated"],
        metrics["test_ece"],
        method,
        chosen["threshold"],
        100 * chosen["flag_rate_test"],
        100 * chosen["flag_rate_drawn"],
        100 * chosen["outlier_recall"],
        metrics["seconds"],
    )
    return metrics


def markdown(results: dict[str, dict]) -> str:
    """The measurements of ``calibrate_checkpoint`` side by side, one column per model (the README's
    table)."""
    models = list(results)

    def row(label: str, cell: Callable[[dict], str]) -> str:
        return f"| {label} | " + " | ".join(cell(results[m]) for m in models) + " |"

    def pct(x: float) -> str:
        return f"{100 * x:.1f}%"

    def flags(r: dict) -> str:
        rates = [pct(r[k]) for k in ("flag_rate_drawn", "flag_rate_corrupted", "outlier_recall")]
        return f"{100 * r['flag_rate_test']:.2f}% / {' / '.join(rates)} ({r['auroc_test_vs_outliers']:.3f})"

    rows = [
        f"| | {' | '.join(models)} |",
        f"|---|{'---|' * len(models)}",
        row("temperature", lambda m: f"{m['temperature']:.3f}"),
        row("ECE (15 bins), MNIST test: before -> after",
            lambda m: f"{pct(m['test_ece_uncalibrated'])} -> {pct(m['test_ece'])}"),
        row("median confidence, MNIST test: before -> after",
            lambda m: f"{m['test_median_confidence_uncalibrated']:.3f} -> {m['test_median_confidence']:.4f}"),
        row("test digits read at >= 0.98", lambda m: pct(m["test_share_confidence_ge_0.98"])),
        row("drawn digits: accuracy, median confidence",
            lambda m: f"{pct(m['drawn_accuracy'])}, {m['drawn_median_confidence']:.3f}"),
        row("digit score chosen", lambda m: m["method"]),
    ]  # fmt: skip
    for method in METHODS:
        rows.append(row(f"{method}: flagged test / drawn / corrupted / outliers (AUROC)",
                        lambda m, method=method: flags(m["methods"][method])))  # fmt: skip
    chosen = {results[m]["method"] for m in models}
    prefix = chosen.pop() if len(chosen) == 1 else "chosen score"
    for family in FAMILIES:

        def per_family(m: dict, family: str = family) -> str:
            cell = pct(m["methods"][m["method"]]["outlier_recall_per_family"][family])
            if "detector_leave_one_family_out" in m:
                cell += f" (unseen: {pct(m['detector_leave_one_family_out'][family])})"
            refused = m["outliers_refused_by_preprocessing"][family]
            return cell + (f" +{pct(refused)} refused as empty" if refused else "")

        rows.append(row(f"{prefix} flags: {family.replace('_', ' ')}", per_family))
    rows.append(row("calibrate time (2-core CPU)", lambda m: f"{m['seconds']:.0f} s"))
    return "\n".join(rows)


def calibrate_command(argv: list[str]) -> str:
    return f"python -m training {shlex.join(argv)}"


def run_calibrate(args: argparse.Namespace, argv: list[str] | None = None) -> dict[str, dict]:
    store = ModelStore(args.store_dir)
    names = args.models or [p.name for p in store.model_dirs()]
    command = calibrate_command(list(sys.argv[1:] if argv is None else argv))
    inputs: dict[tuple, Inputs] = {}  # by dataset split: models trained on the same one share them
    results = {}
    for name in names:
        ds = read_card(store.path(name)).dataset
        split = (ds.get("name", "mnist"), ds.get("val_images", 5000), ds.get("val_split_seed", 0))
        if split not in inputs:
            inputs[split] = make_inputs(load_data(split[0], args.data_root, split[1], split[2]), args)
        results[name] = calibrate_checkpoint(store.path(name), args, command, inputs[split])
    print(markdown(results))
    return results


def calibrate_after_training(
    directory: Path, data: DataBundle, args: argparse.Namespace, plots_dir: Path, smoke: bool
) -> dict:
    """The fit of ``python -m training calibrate <name>``, on the data ``train`` already holds.

    ``smoke`` (a --limit-train run): few outliers and drawn digits, so test runs stay fast.
    """
    from .settings import settings

    argv = [
        "calibrate",
        directory.name,
        "--store-dir",
        str(directory.parent),
        "--data-root",
        str(args.data_root),
        "--device",
        args.device,
        "--plots-dir",
        str(plots_dir),
    ]
    if smoke:
        argv += [
            "--outliers-per-family",
            "4",
            "--drawn-per-class",
            "2",
            "--pen-digits",
            "20",
            "--fit-images",
            "2000",
            "--fit-seeds",
            "1",
            "--corrupted-per-kind",
            "1",
            "--detector-epochs",
            "2",
        ]
    parser = argparse.ArgumentParser()
    add_calibrate_args(parser, settings)
    cal_args = parser.parse_args(argv[1:])
    return calibrate_checkpoint(directory, cal_args, calibrate_command(argv), make_inputs(data, cal_args))
