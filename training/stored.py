"""A stored checkpoint that a training run builds on (``--init-from``, ``--teacher``): loaded and
checked, with errors that name the option."""

from __future__ import annotations

from pathlib import Path

from torch import nn

from model_store import CheckpointError, ModelCard, load_checkpoint


def load_stored(directory: Path, option: str) -> tuple[nn.Module, ModelCard]:
    """The verified checkpoint at ``directory`` (on the CPU), or SystemExit naming ``option``."""
    try:
        return load_checkpoint(directory)
    except CheckpointError as exc:
        raise SystemExit(f"{option}: {exc}") from exc


def refuse_other_labels(card: ModelCard, labels: list[str], directory: Path, option: str) -> None:
    if card.labels != labels:
        raise SystemExit(f"{option}: {directory} was trained for labels {card.labels}, not {labels}")
