"""The checkpoint contract: one directory per model with ``model.safetensors`` and ``card.json``.

The card describes the model fully (architecture config, preprocessing, metrics, provenance) and
records the sha256 of the weights; loading verifies it. Weights are read with safetensors only:
nothing here unpickles code.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from torch import nn

from .card import (  # noqa: F401 (re-exported: the checkpoint contract's names)
    CARD_FILE,
    MNIST_MEAN,
    MNIST_STD,
    SCHEMA_VERSION,
    WEIGHTS_FILE,
    CheckpointError,
    ModelCard,
    Preprocessing,
    read_card,
    sha256_file,
)
from .presets import build_model, get_config


def save_checkpoint(model: nn.Module, card: ModelCard, directory: str | os.PathLike) -> Path:
    """Write weights and card atomically (a temp dir renamed into place) and return the dir."""
    directory = Path(directory)
    directory.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{directory.name}-", dir=directory.parent))
    try:
        state = {k: v.detach().to("cpu").contiguous() for k, v in model.state_dict().items()}
        save_file(state, str(tmp / card.weights_file), metadata={"name": card.name})
        card.weights_sha256 = sha256_file(tmp / card.weights_file)
        card.num_params = sum(p.numel() for p in model.parameters())
        (tmp / CARD_FILE).write_text(json.dumps(card.to_dict(), indent=2) + "\n")
        # mkdtemp/safetensors create owner-only modes; a store must be readable by the serving user.
        tmp.chmod(0o755)
        for f in tmp.iterdir():
            f.chmod(0o644)
        if directory.exists():
            shutil.rmtree(directory)
        tmp.rename(directory)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return directory


def load_checkpoint(
    directory: str | os.PathLike, device: str | torch.device = "cpu"
) -> tuple[nn.Module, ModelCard]:
    """Verify the weights against the card's sha256, rebuild the model and load it in eval mode."""
    directory = Path(directory)
    card = read_card(directory)
    weights = directory / card.weights_file
    if not weights.is_file():
        raise CheckpointError(f"{weights}: weights file not found")
    actual = sha256_file(weights)
    if actual != card.weights_sha256:
        raise CheckpointError(
            f"{weights}: sha256 mismatch (card says {card.weights_sha256}, file is {actual}); "
            "refusing to load tampered or corrupted weights"
        )
    model = build_model(card.model_config())
    try:
        state = load_file(str(weights), device="cpu")
        model.load_state_dict(state, strict=True)
    except Exception as exc:  # safetensors header errors, missing/unexpected keys, shape mismatch
        raise CheckpointError(f"{weights}: weights do not fit the card's architecture: {exc}") from exc
    return model.to(device).eval(), card


def save_untrained(
    preset: str,
    directory: str | os.PathLike,
    *,
    name: str | None = None,
    seed: int = 0,
    note: str = "random weights, not trained",
    init: Callable[[nn.Module], None] | None = None,
) -> Path:
    """Write a random-weight checkpoint of a preset: a real architecture with meaningless answers.

    For tests, benchmarks and smoke runs of the serving stack; its card says it is untrained.
    ``init`` may adjust the fresh model (e.g. a non-zero head, so predictions are not uniform).
    """
    torch.manual_seed(seed)
    model = build_model(get_config(preset)).eval()
    if init is not None:
        init(model)
    cfg = model.cfg
    card = ModelCard(
        name=name or preset,
        preset=preset,
        architecture=cfg.to_dict(),
        num_params=0,  # counted by save_checkpoint
        labels=[str(d) for d in range(cfg.num_classes)],
        dataset={"name": "mnist", "train_images": 0, "note": note},
        preprocessing=Preprocessing(image_size=cfg.image_size),
        metrics={"test_accuracy": 0.0, "test_loss": 0.0},
        training={"command": "untrained", "seed": seed, "epochs": 0, "torch_version": torch.__version__},
    )
    return save_checkpoint(model, card, directory)
