"""A model store: a directory holding one checkpoint directory per model."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

from .card import CARD_FILE, CheckpointError, ModelCard, read_card

if TYPE_CHECKING:
    import torch
    from torch import nn

log = logging.getLogger(__name__)

DEFAULT_STORE_DIR = Path(__file__).resolve().parent / "checkpoints"


class ModelStore:
    def __init__(self, root: str | os.PathLike = DEFAULT_STORE_DIR):
        self.root = Path(root)

    def model_dirs(self) -> list[Path]:
        if not self.root.is_dir():
            return []
        return sorted(p for p in self.root.iterdir() if (p / CARD_FILE).is_file())

    def list(self) -> list[ModelCard]:
        """Cards of every readable model; unreadable ones are logged and skipped."""
        return [card for _, card in self._readable()]

    def names(self) -> list[str]:
        """The folder names of every readable model: what ``load`` takes (a card's own name may
        differ, in a folder renamed since)."""
        return [path.name for path, _ in self._readable()]

    def _readable(self) -> list[tuple[Path, ModelCard]]:
        found = []
        for path in self.model_dirs():
            try:
                found.append((path, read_card(path)))
            except CheckpointError as exc:
                log.warning("skipping %s: %s", path, exc)
        return found

    def path(self, name: str) -> Path:
        # Look the name up among the store's own entries: a name like "../x" must not escape the root.
        known = [p.name for p in self.model_dirs()]
        if name not in known:
            listed = ", ".join(known) or "none"
            raise CheckpointError(f"no model {name!r} in store {self.root} (known: {listed})")
        return self.root / name

    def load(self, name: str, device: str | torch.device = "cpu") -> tuple[nn.Module, ModelCard]:
        from .checkpoint import load_checkpoint  # torch, only for those who load weights

        return load_checkpoint(self.path(name), device)
