"""Helpers for the hardening tests: random-init model stores, the server they attack, digits. Imported by
conftest.py and the test modules (the folder is put on sys.path)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from testkit.images import drawn_seven
from testkit.mnist import load_test_split
from testkit.server import ServiceProcess


def make_store(root: Path, presets: dict[str, str]) -> Path:
    """A model store with {model name: preset} at random init (seeded): same compute as trained ones."""
    from model_store import save_untrained

    for name, preset in presets.items():
        save_untrained(preset, root / name, name=name, note="random init for hardening tests")
    return root


def load_digits(n: int = 16) -> np.ndarray:
    """(n, 28, 28) uint8 white-on-black: MNIST test digits, or a drawn '7' when MNIST is absent."""
    split = load_test_split(n)
    return split[0] if split is not None else drawn_seven(n)


def hardening_service(env: dict[str, str], log_path: Path) -> ServiceProcess:
    """One `uvicorn app.main:app` process with the given settings: the tests read its own RSS and exit
    code, which under ``python -m app`` would be the supervisor's."""
    return ServiceProcess({"LOG_LEVEL": "warning", "WARMUP": "true", **env}, workers=None, log_path=log_path)
