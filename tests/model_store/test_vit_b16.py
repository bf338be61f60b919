"""The ``vit-b16`` preset is torchvision's ViT-B/16: same parameter count, same logits."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from model_store import create_model
from model_store.convert import torchvision_vit_to_ours

torchvision = pytest.importorskip("torchvision")

VIT_B16_PARAMS = 86_567_656  # torchvision.models.vit_b_16, 1000 classes


def randomise_torchvision(model: nn.Module, seed: int = 0) -> None:
    """torchvision zero-inits the head (and init leaves attention ~uniform); give every parameter
    random values so that any mapping mistake changes the logits."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=gen)
            if ".ln" in name and name.endswith("weight"):  # ln_1, ln_2, encoder.ln
                p.copy_(1 + 0.1 * noise)
            elif "in_proj_weight" in name:
                p.copy_(noise * 0.06)  # sharp attention: swapping q and k would show
            else:
                p.copy_(noise * 0.02)


@pytest.fixture(scope="module")
def models() -> tuple[nn.Module, nn.Module]:
    tv = torchvision.models.vit_b_16()
    randomise_torchvision(tv)
    ours = create_model("vit-b16")
    ours.load_state_dict(torchvision_vit_to_ours(tv.state_dict()), strict=True)
    return tv.eval(), ours.eval()


@pytest.fixture(scope="module")
def images() -> torch.Tensor:
    return torch.randn(2, 3, 224, 224, generator=torch.Generator().manual_seed(1))


@pytest.fixture(scope="module")
def tv_logits(models, images) -> torch.Tensor:
    with torch.no_grad():
        return models[0](images)


def test_parameter_count_matches_torchvision(models) -> None:
    tv, ours = models
    assert ours.get_num_params() == sum(p.numel() for p in tv.parameters()) == VIT_B16_PARAMS


def test_every_torchvision_key_is_mapped_once(models) -> None:
    tv, ours = models
    mapped = torchvision_vit_to_ours(tv.state_dict())
    assert len(mapped) == len(tv.state_dict())
    assert set(mapped) == set(ours.state_dict())
    for key, value in mapped.items():
        assert value.shape == ours.state_dict()[key].shape, key


def test_same_logits_as_torchvision(models, images, tv_logits) -> None:
    _, ours = models
    with torch.no_grad():
        logits = ours(images)
    assert logits.shape == (2, 1000)
    assert tv_logits.std() > 0.1  # the randomised head makes the comparison meaningful
    torch.testing.assert_close(logits, tv_logits, atol=1e-4, rtol=1e-4)


def test_a_wrong_mapping_would_be_caught(models, images, tv_logits) -> None:
    """The check above has teeth: swapping q and k in one layer moves the logits well past atol."""
    _, ours = models
    w = ours.blocks[0].attn.to_qkv.weight
    d = w.shape[1]
    original = w.detach().clone()
    with torch.no_grad():
        w.copy_(torch.cat([original[d : 2 * d], original[:d], original[2 * d :]]))
        try:
            wrong = ours(images)
        finally:
            w.copy_(original)
    assert (wrong - tv_logits).abs().max() > 1e-2


def test_unknown_keys_are_refused() -> None:
    with pytest.raises(KeyError, match="heads.pre_logits.weight"):
        torchvision_vit_to_ours({"heads.pre_logits.weight": torch.zeros(1)})
