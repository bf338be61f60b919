"""Command line: ``python -m training {train,evaluate,compare,robustness,calibrate,read-eval,fit-reader,
fit-confidence}``."""

from __future__ import annotations

import argparse
import json
import logging
import sys

from .calibrate import add_calibrate_args, run_calibrate
from .evaluate import add_store_args, run_compare, run_evaluate
from .fit_confidence import add_fit_confidence_args, run_fit_confidence
from .fit_reader import add_fit_reader_args, run_fit_reader
from .read_eval import add_read_eval_args, run_read_eval
from .robustness import add_robustness_args, run_robustness
from .settings import settings
from .train import add_train_args


def get_args_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m training", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    add_train_args(sub.add_parser("train", help="train a preset and write it into the model store"))
    ev = sub.add_parser("evaluate", help="score stored models on the test set")
    add_store_args(ev, settings)
    ev.add_argument("models", nargs="*", help="model names (default: every model in the store)")
    ev.add_argument("--plots-dir", help="also write confusion/misclassified/attention plots here")
    ev.add_argument("--json", action="store_true", help="print results as JSON")
    cmp_ = sub.add_parser("compare", help="table of every stored model: params, loss, accuracy, speed")
    add_store_args(cmp_, settings)
    cmp_.add_argument("--output", help="also write the rows as JSON to this file")
    add_robustness_args(sub.add_parser("robustness", help="accuracy on corrupted uploads"), settings)
    cal = sub.add_parser("calibrate", help="fit temperature and the is-a-digit score of stored models")
    add_calibrate_args(cal, settings)
    read_ = sub.add_parser("read-eval", help="exact reads of whole numbers (1-8 digits)")
    add_read_eval_args(read_, settings)
    fit_ = sub.add_parser("fit-reader", help="fit the weights that choose how a number is split")
    add_fit_reader_args(fit_, settings)
    sure = sub.add_parser("fit-confidence", help="fit how sure /read is that a reading is exactly right")
    add_fit_confidence_args(sure, settings)
    return parser


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", datefmt="%H:%M:%S"
    )
    argv = sys.argv[1:] if argv is None else argv
    args = get_args_parser().parse_args(argv)
    from model_store import CheckpointError

    from .data import DatasetNotFoundError

    try:
        if args.command == "train":
            from .train import main as train_main

            train_main(args, argv)
        elif args.command == "evaluate":
            args.timing = False
            rows = run_evaluate(args)
            if args.json:
                print(json.dumps(rows, indent=2))
        elif args.command == "robustness":
            run_robustness(args)
        elif args.command == "calibrate":
            run_calibrate(args, argv)
        elif args.command == "read-eval":
            run_read_eval(args)
        elif args.command == "fit-reader":
            run_fit_reader(args)
        elif args.command == "fit-confidence":
            run_fit_confidence(args)
        else:
            print(run_compare(args))
    except (DatasetNotFoundError, CheckpointError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0
