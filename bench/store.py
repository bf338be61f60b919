"""Which model store the benchmark serves: the shipped checkpoints, else presets with random weights."""

from __future__ import annotations

import tempfile
from pathlib import Path

from testkit.server import REPO_ROOT

SHIPPED = REPO_ROOT / "model_store" / "checkpoints"


def has_models(store: Path, models: list[str]) -> bool:
    return all((store / m / "card.json").is_file() for m in models)


def random_store(models: list[str], root: Path | None = None) -> Path:
    """A store with each preset at random init (same compute per image as the trained model)."""
    from model_store import save_untrained

    root = Path(root or tempfile.mkdtemp(prefix="bench-store-"))
    for name in models:
        save_untrained(name, root / name, note="random init for benchmarking")
    return root


def resolve_store(store: Path | None, models: list[str]) -> tuple[Path, str]:
    if store is not None:
        return store, f"given store {store}"
    if has_models(SHIPPED, models):
        return SHIPPED, f"shipped checkpoints ({SHIPPED.relative_to(REPO_ROOT)})"
    return random_store(models), "random-init presets (no shipped checkpoints found)"
