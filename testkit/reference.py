"""What the service should answer, computed outside it: the stored model called in-process."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from model_store import ModelStore
from model_store.serving import ServingHead


def reference_probabilities(store: Path, name: str, images_u8: np.ndarray | torch.Tensor) -> np.ndarray:
    """The model called in-process through the store's serving head (normalisation and calibration),
    outside the service: (N, 10) probabilities."""
    model, card = ModelStore(store).load(name, "cpu")
    head = ServingHead(model, card, ModelStore(store).path(name)).eval()
    x = torch.as_tensor(np.asarray(images_u8, dtype=np.float32) / 255.0)
    x = x.unsqueeze(1) if x.dim() == 3 else x  # (N, 28, 28) or (N, 1, 28, 28)
    with torch.inference_mode():
        return head(x)[:, : len(card.labels)].numpy()
