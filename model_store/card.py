"""The model card: everything a checkpoint says about itself (architecture, preprocessing, labels,
metrics, provenance, the sha256 of its files). ``ModelCard.from_dict(..., check_architecture=False)``
reads it without torch, so that processes that only describe models (the service's front-end workers)
never import it; checking the architecture (``read_card``, ``ModelStore.list``) builds the model config,
which imports the model definitions and torch with them.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import MISSING, asdict, dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .presets import ModelConfig

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
        from .presets import config_from_dict  # the model classes, hence torch, only when needed

        return config_from_dict(self.architecture)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Any, source: str = "card", check_architecture: bool = True) -> ModelCard:
        """Validate a card's JSON. `check_architecture=False` skips building the model config (which
        imports torch): for readers of a card that a loader has already checked."""
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
            if check_architecture:
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


def read_card(directory: str | os.PathLike) -> ModelCard:
    path = Path(directory) / CARD_FILE
    if not path.is_file():
        raise CheckpointError(f"{path}: card not found")
    try:
        data = json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"{path}: not valid JSON ({exc})") from exc
    return ModelCard.from_dict(data, source=str(path))
