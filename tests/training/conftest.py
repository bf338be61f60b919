"""Training fixtures: an in-process CLI runner and one tiny real-MNIST training run shared by tests."""

from __future__ import annotations

import argparse
import csv
import logging
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

from model_store.serving import ServingHead
from training.evaluate import serving_heads

# Small enough for a few seconds on 2 CPU cores; dropout is on so that resuming has to restore the
# global RNG as well as the augmentation generator.
TINY_RUN = [
    "--model", "vit-mnist-tiny", "--set", "depth=2", "--set", "dropout=0.1",
    "--limit-train", "1024", "--limit-test", "500", "--batch-size", "64", "--epochs", "2",
    "--lr", "2e-3", "--warmup-epochs", "0.25", "--ema-decay", "0", "--seed", "3",
]  # fmt: skip


@dataclass
class RunResult:
    code: int
    log: list[str]
    store_dir: Path
    run_dir: Path

    def metrics(self) -> list[dict[str, float]]:
        with open(self.run_dir / "metrics.csv", newline="") as f:
            return [{k: float(v) for k, v in row.items()} for row in csv.DictReader(f)]


@contextmanager
def capture_log(name: str = "training") -> Iterator[list[str]]:
    """INFO messages of one logger, independent of pytest's own log capture settings."""
    lines: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage())

    logger = logging.getLogger(name)
    handler, level = Collect(logging.INFO), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield lines
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


@pytest.fixture(scope="session")
def train_cli(data_root: Path) -> Callable[..., RunResult]:
    """Run ``python -m training train ...`` in this process, as the shell would (sys.argv included)."""
    from training.cli import main

    def run(args: list[str], store_dir: Path, run_dir: Path) -> RunResult:
        paths = ["--data-root", str(data_root), "--store-dir", str(store_dir), "--run-dir", str(run_dir)]
        argv = ["train", *args, *paths, "--device", "cpu", "--no-plots", "--no-progress"]
        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # also for session fixtures, set up before the autouse one
        try:
            with pytest.MonkeyPatch.context() as mp, capture_log() as lines:
                mp.setattr(sys, "argv", ["python -m training", *argv])
                code = main(argv)
        finally:
            torch.set_num_threads(threads)
        return RunResult(code, lines, store_dir, run_dir)

    return run


@pytest.fixture(scope="session")
def tiny_args() -> list[str]:
    """The arguments of ``tiny_run`` (without the paths), for runs that must match it."""
    return list(TINY_RUN)


@pytest.fixture(scope="session")
def tiny_run(train_cli, tmp_path_factory: pytest.TempPathFactory) -> RunResult:
    """Two epochs of a 2-layer ViT on 1024 real MNIST images, written into a fresh store."""
    tmp = tmp_path_factory.mktemp("tiny-run")
    result = train_cli(TINY_RUN, tmp / "store", tmp / "run")
    assert result.code == 0, result.log
    return result


@pytest.fixture(scope="session")
def shipped_heads(shipped_store: Path) -> dict[str, ServingHead]:
    """The shipped checkpoints' ServingHeads by name, as the robustness checks load them."""
    return serving_heads(argparse.Namespace(models=["cnn-mnist", "vit-mnist"], store_dir=shipped_store))
