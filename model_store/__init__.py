"""Model definitions, named presets and the checkpoint format shared by training and serving.

Names are imported on first use (PEP 562), so ``import model_store.preprocess`` does not import torch,
nor does reading a card without checking its architecture (``card.ModelCard.from_dict``): the service's
front-end workers decode images and describe models without it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_WHERE = {
    "attention_rollout": "attention", "cls_attention": "attention",
    "MNIST_MEAN": "card", "MNIST_STD": "card", "CheckpointError": "card", "ModelCard": "card",
    "Preprocessing": "card", "read_card": "card", "sha256_file": "card",
    "load_checkpoint": "checkpoint", "save_checkpoint": "checkpoint", "save_untrained": "checkpoint",
    "CNN": "cnn", "CNNConfig": "cnn",
    "PRESETS": "presets", "build_model": "presets", "config_from_dict": "presets", "create_model": "presets",
    "get_config": "presets", "list_presets": "presets",
    "DEFAULT_STORE_DIR": "store", "ModelStore": "store",
    "ViT": "vit", "ViTConfig": "vit",
}  # fmt: skip

__all__ = [
    "CNN",
    "CNNConfig",
    "DEFAULT_STORE_DIR",
    "MNIST_MEAN",
    "MNIST_STD",
    "PRESETS",
    "CheckpointError",
    "ModelCard",
    "ModelStore",
    "Preprocessing",
    "ViT",
    "ViTConfig",
    "attention_rollout",
    "build_model",
    "cls_attention",
    "config_from_dict",
    "create_model",
    "get_config",
    "list_presets",
    "load_checkpoint",
    "read_card",
    "save_checkpoint",
    "save_untrained",
    "sha256_file",
]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'model_store' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if TYPE_CHECKING:
    from .attention import attention_rollout, cls_attention
    from .card import MNIST_MEAN, MNIST_STD, CheckpointError, ModelCard, Preprocessing, read_card, sha256_file
    from .checkpoint import load_checkpoint, save_checkpoint, save_untrained
    from .cnn import CNN, CNNConfig
    from .presets import PRESETS, build_model, config_from_dict, create_model, get_config, list_presets
    from .store import DEFAULT_STORE_DIR, ModelStore
    from .vit import ViT, ViTConfig
