"""Named model presets, built with one ``create_model(name, **overrides)``."""

from __future__ import annotations

import numbers
from dataclasses import fields, replace
from typing import Any

from torch import nn

from .cnn import CNN, CNNConfig
from .vit import ViT, ViTConfig

ModelConfig = ViTConfig | CNNConfig

PRESETS: dict[str, ModelConfig] = {
    # Our tuned MNIST ViT: 4x4 patches (7x7 grid + CLS = 50 tokens), small enough for
    # millisecond CPU latency, wide enough to beat the 99.5% published at 0.2M params.
    "vit-mnist": ViTConfig(image_size=28, patch_size=4, dim=128, depth=6, heads=4, mlp_dim=256, dropout=0.0),
    # The published small from-scratch recipe (~0.2M params), for comparison.
    "vit-mnist-tiny": ViTConfig(image_size=28, patch_size=4, dim=64, depth=6, heads=4, mlp_dim=128),
    "cnn-mnist": CNNConfig(variant="bn", width=32, hidden=256, dropout=0.25, head_dropout=0.4),
    "cnn-baseline": CNNConfig(variant="baseline", width=32, hidden=128),
    # ViT-Base/16 exactly as torchvision.models.vit_b_16 (86.6M params).
    "vit-b16": ViTConfig(
        image_size=224,
        patch_size=16,
        in_channels=3,
        num_classes=1000,
        dim=768,
        depth=12,
        heads=12,
        mlp_dim=3072,
    ),  # fmt: skip
}


def list_presets() -> list[str]:
    return sorted(PRESETS)


def get_config(name: str, **overrides: Any) -> ModelConfig:
    try:
        base = PRESETS[name]
    except KeyError:
        raise KeyError(f"unknown model preset {name!r}; known: {', '.join(list_presets())}") from None
    known = {f.name for f in fields(base)}
    unknown = set(overrides) - known
    if unknown:
        raise TypeError(f"preset {name!r} has no option(s) {sorted(unknown)}; options: {sorted(known)}")
    return replace(
        base, **{key: _as_field(key, value, getattr(base, key)) for key, value in overrides.items()}
    )


def _as_field(key: str, value: Any, like: Any) -> Any:
    """``value`` as the type of the preset's own ``like`` (an int where an int is, a float for a float:
    ``--set dim=abc`` would otherwise fail deep in the model with an unrelated message)."""
    kind = type(like)
    number = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if number and (kind is float or (kind is int and isinstance(value, numbers.Integral))):
        return kind(value)
    if type(value) is kind and kind not in (int, float):
        return value
    article = "an" if kind is int else "a"
    raise TypeError(f"option {key!r} takes {article} {kind.__name__} (like {like!r}), not {value!r}")


def config_from_dict(data: dict[str, Any]) -> ModelConfig:
    """Rebuild a config from ``cfg.to_dict()`` (as stored in a model card)."""
    data = dict(data)
    arch = data.pop("arch", None)
    classes = {"vit": ViTConfig, "cnn": CNNConfig}
    if arch not in classes:
        raise ValueError(f"unknown architecture {arch!r}; expected one of {sorted(classes)}")
    cls = classes[arch]
    known = {f.name for f in fields(cls)}
    unknown = set(data) - known
    if unknown:
        raise ValueError(f"{arch} config has unknown field(s) {sorted(unknown)}")
    return cls(**data)


def build_model(cfg: ModelConfig) -> nn.Module:
    return ViT(cfg) if isinstance(cfg, ViTConfig) else CNN(cfg)


def create_model(name: str, **overrides: Any) -> nn.Module:
    return build_model(get_config(name, **overrides))
