"""The checkpoint contract: one directory per model with ``model.safetensors`` and ``card.json``.

The card describes the model fully (architecture config, preprocessing, metrics, provenance) and
records the sha256 of the weights; loading verifies it. Weights are read with safetensors only:
nothing here unpickles code.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import MISSING, asdict, dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file
from torch import nn

from .presets import ModelConfig, build_model, config_from_dict, get_config

SCHEMA_VERSION = 1
WEIGHTS_FILE = "model.safetensors"
CARD_FILE = "card.json"

# MNIST statistics (mean / std of the training pixels scaled to 0..1).
MNIST_MEAN = 0.1307
MNIST_STD = 0.3081


class CheckpointError(Exception):
    """A checkpoint is missing, malformed, or does not match its card."""


@dataclass
class Preprocessing:
    image_size: int = 28
    mean: float = MNIST_MEAN
    std: float = MNIST_STD
    # MNIST digits are white ink on a black background, scaled 0..1 before normalisation.
    polarity: str = "white-on-black"


@dataclass
class ModelCard:
    name: str
    preset: str
    architecture: dict[str, Any]
    num_params: int
    labels: list[str]
    dataset: dict[str, Any]
    preprocessing: Preprocessing
    metrics: dict[str, float]
    training: dict[str, Any]  # command, args, seed, epochs, wall_time_s, hardware, torch_version
    weights_sha256: str = ""
    weights_file: str = WEIGHTS_FILE
    # Temperature and "is it a digit" statistics (model_store/calibration.py): the sha256 of each file
    # it keeps beside the weights, a summary and the command that wrote them. None: not calibrated.
    # Optional, so cards written before it existed load unchanged (same schema version).
    calibration: dict[str, Any] | None = None
    created_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    schema_version: int = SCHEMA_VERSION

    @property
    def arch(self) -> str:
        return self.architecture["arch"]

    def model_config(self) -> ModelConfig:
        return config_from_dict(self.architecture)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Any, source: str = "card") -> ModelCard:
        if not isinstance(data, dict):
            raise CheckpointError(f"{source}: expected a JSON object, got {type(data).__name__}")
        version = data.get("schema_version")
        if version != SCHEMA_VERSION:
            raise CheckpointError(
                f"{source}: schema_version {version!r} is not supported (expected {SCHEMA_VERSION})"
            )
        names = {f.name for f in fields(cls)}
        required = {f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING}
        missing = sorted(required - set(data))
        if missing:
            raise CheckpointError(f"{source}: missing field(s) {missing}")
        unknown = sorted(set(data) - names)
        if unknown:
            raise CheckpointError(f"{source}: unknown field(s) {unknown}")
        try:
            values = dict(data)
            values["preprocessing"] = Preprocessing(**data["preprocessing"])
            card = cls(**values)
            card.model_config()  # validates the architecture block
        except (TypeError, ValueError) as exc:
            raise CheckpointError(f"{source}: {exc}") from exc
        return card


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


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


def read_card(directory: str | os.PathLike) -> ModelCard:
    path = Path(directory) / CARD_FILE
    if not path.is_file():
        raise CheckpointError(f"{path}: card not found")
    try:
        data = json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"{path}: not valid JSON ({exc})") from exc
    return ModelCard.from_dict(data, source=str(path))


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
