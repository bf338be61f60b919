"""Model definitions, named presets and the checkpoint format shared by training and serving."""

from .attention import attention_rollout, cls_attention
from .checkpoint import (
    MNIST_MEAN,
    MNIST_STD,
    CheckpointError,
    ModelCard,
    Preprocessing,
    load_checkpoint,
    read_card,
    save_checkpoint,
    save_untrained,
    sha256_file,
)
from .cnn import CNN, CNNConfig
from .presets import PRESETS, build_model, config_from_dict, create_model, get_config, list_presets
from .store import DEFAULT_STORE_DIR, ModelStore
from .vit import ViT, ViTConfig

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
