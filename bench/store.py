"""Which model store the benchmark serves: the shipped checkpoints, else presets with random weights."""

from __future__ import annotations

import tempfile
from pathlib import Path

from .server import REPO_ROOT

SHIPPED = REPO_ROOT / "model_store" / "checkpoints"


def has_models(store: Path, models: list[str]) -> bool:
    return all((store / m / "card.json").is_file() for m in models)


def random_store(models: list[str], root: Path | None = None) -> Path:
    """A store with each preset at random init (same compute per image as the trained model)."""
    import torch

    from model_store import ModelCard, Preprocessing, create_model, save_checkpoint

    root = Path(root or tempfile.mkdtemp(prefix="bench-store-"))
    torch.manual_seed(0)
    for name in models:
        model = create_model(name)
        cfg = model.cfg
        card = ModelCard(
            name=name,
            preset=name,
            architecture=cfg.to_dict(),
            num_params=sum(p.numel() for p in model.parameters()),
            labels=[str(d) for d in range(10)],
            dataset={"name": "mnist", "note": "random init for benchmarking"},
            preprocessing=Preprocessing(image_size=cfg.image_size),
            metrics={"test_accuracy": 0.0, "test_loss": 0.0},
            training={"command": "bench random init", "epochs": 0, "torch_version": torch.__version__},
        )
        save_checkpoint(model, card, root / name)
    return root


def resolve_store(store: Path | None, models: list[str]) -> tuple[Path, str]:
    if store is not None:
        return store, f"given store {store}"
    if has_models(SHIPPED, models):
        return SHIPPED, f"shipped checkpoints ({SHIPPED.relative_to(REPO_ROOT)})"
    return random_store(models), "random-init presets (no shipped checkpoints found)"
