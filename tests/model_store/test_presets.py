"""Every registered preset builds and runs; ``create_model`` reports bad names and options clearly."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from model_store import (
    CNN,
    PRESETS,
    CNNConfig,
    ViT,
    build_model,
    config_from_dict,
    create_model,
    get_config,
    list_presets,
)


def test_list_presets_is_sorted_and_complete() -> None:
    names = list_presets()
    assert names == sorted(PRESETS)
    assert {"vit-mnist", "vit-mnist-tiny", "cnn-mnist", "cnn-baseline", "vit-b16"} <= set(names)


@pytest.mark.parametrize("name", list_presets())
def test_create_model_builds_and_runs(name: str) -> None:
    torch.manual_seed(0)
    model = create_model(name)
    cfg = model.cfg
    assert cfg == PRESETS[name]
    assert isinstance(model, ViT if cfg.to_dict()["arch"] == "vit" else CNN)
    assert model.get_num_params() == sum(p.numel() for p in model.parameters()) > 0
    assert config_from_dict(cfg.to_dict()) == cfg  # what a model card stores rebuilds the config
    if cfg.image_size > 64:
        return  # the 224px vit-b16 forward is covered (against torchvision) in test_vit_b16.py
    model.eval()
    with torch.no_grad():
        logits = model(torch.randn(2, cfg.in_channels, cfg.image_size, cfg.image_size))
    assert logits.shape == (2, cfg.num_classes)
    assert torch.isfinite(logits).all()


def test_tiny_preset_is_the_published_small_recipe() -> None:
    assert 150_000 < create_model("vit-mnist-tiny").get_num_params() < 250_000  # "~0.2M params"


def test_overrides_are_applied() -> None:
    model = create_model("vit-mnist", depth=2, dim=64, heads=2)
    assert len(model.blocks) == 2
    assert model.cfg.dim == 64 and model.cfg.heads == 2
    assert PRESETS["vit-mnist"].depth == 6  # the registry itself is untouched
    assert create_model("cnn-baseline", width=8).cfg.width == 8


def test_unknown_preset_lists_known_names() -> None:
    with pytest.raises(KeyError) as info:
        create_model("vit-huge")
    message = str(info.value)
    assert "'vit-huge'" in message
    for name in list_presets():
        assert name in message


def test_unknown_override_is_a_type_error() -> None:
    with pytest.raises(TypeError, match=r"no option\(s\) \['depht'\]"):
        create_model("vit-mnist", depht=3)
    with pytest.raises(TypeError, match="depth"):  # the valid options are listed
        get_config("cnn-mnist", depth=3)


def test_an_override_of_another_type_is_a_type_error() -> None:
    """Checked against the preset's own value (`dim="abc"` failed inside the model: "not all arguments
    converted during string formatting"); an int stands for a float, never the other way."""
    with pytest.raises(TypeError, match="option 'dim' takes an int"):
        get_config("vit-mnist", dim="abc")
    with pytest.raises(TypeError, match="option 'depth' takes an int"):
        get_config("vit-mnist", depth=2.5)
    with pytest.raises(TypeError, match="option 'qkv_bias' takes a bool"):
        get_config("vit-mnist", qkv_bias=1)
    assert get_config("vit-mnist", drop_path=0).drop_path == 0.0


def test_invalid_override_value_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="not divisible by patch_size"):
        create_model("vit-mnist", patch_size=5)


def test_config_from_dict_errors() -> None:
    with pytest.raises(ValueError, match="unknown architecture 'resnet'"):
        config_from_dict({"arch": "resnet"})
    with pytest.raises(ValueError, match=r"unknown field\(s\) \['colour'\]"):
        config_from_dict({"arch": "cnn", "colour": "red"})


@pytest.mark.parametrize("variant", ["baseline", "bn"])
@pytest.mark.parametrize("image_size", [28, 32])
def test_cnn_shapes(variant: str, image_size: int) -> None:
    model = build_model(
        CNNConfig(variant=variant, image_size=image_size, in_channels=3, num_classes=5, width=8)
    )
    model.eval()
    with torch.no_grad():
        assert model(torch.randn(2, 3, image_size, image_size)).shape == (2, 5)


def test_cnn_config_errors() -> None:
    with pytest.raises(ValueError, match="variant must be 'baseline' or 'bn'"):
        CNNConfig(variant="resnet")
    with pytest.raises(ValueError, match="divisible by 4"):
        CNNConfig(variant="bn", image_size=30)


def test_config_from_dict_reads_cards_written_before_drop_path() -> None:
    old = PRESETS["vit-mnist-tiny"].to_dict()
    old.pop("drop_path")  # cards written before stochastic depth existed lack the field
    cfg = config_from_dict(old)
    assert cfg.drop_path == 0.0 and cfg == replace(PRESETS["vit-mnist-tiny"], drop_path=0.0)
    assert config_from_dict(PRESETS["vit-mnist"].to_dict()) == PRESETS["vit-mnist"]
