"""ViT behaviour: shapes, config validation, fused vs explicit attention, attention maps, rollout."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from model_store import ViT, ViTConfig, attention_rollout, cls_attention
from model_store.vit import patchify


def small_vit(**kw) -> ViT:
    base = {"image_size": 28, "patch_size": 4, "in_channels": 1, "num_classes": 10}
    base |= {"dim": 32, "depth": 3, "heads": 4, "mlp_dim": 64}
    return ViT(ViTConfig(**{**base, **kw}))


def randomise(model: nn.Module, seed: int = 0, gain: float = 2.0) -> nn.Module:
    """Weights large enough that attention is far from uniform (the default init gives ~uniform
    attention, under which a wrong scale or a swapped q/k would go unnoticed)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=gen)
            if "norm" in name and name.endswith("weight"):
                p.copy_(1 + 0.1 * noise)
            elif p.ndim == 2:  # Linear weights: gain / sqrt(fan_in)
                p.copy_(noise * gain / p.shape[1] ** 0.5)
            else:
                p.copy_(noise * 0.3)
    return model.eval()


@pytest.mark.parametrize("pos", ["learned", "sincos"])
@pytest.mark.parametrize(
    ("image", "patch", "channels"),
    [(28, 4, 1), (28, 7, 1), (32, 8, 3), (16, 4, 2)],
)
def test_output_shapes(image: int, patch: int, channels: int, pos: str) -> None:
    model = small_vit(
        image_size=image, patch_size=patch, in_channels=channels, num_classes=7, pos_embedding=pos
    )
    model.eval()
    n = (image // patch) ** 2
    x = torch.randn(3, channels, image, image)
    with torch.no_grad():
        logits = model(x)
        tokens, attns = model.forward_features(x)
        logits2, attn = model.forward_with_attention(x)
    assert logits.shape == (3, 7)
    assert tokens.shape == (3, 1 + n, 32)
    assert attns == []  # the fused path returns no weights
    assert logits2.shape == (3, 7)
    assert attn.shape == (3, 3, 4, 1 + n, 1 + n)  # (B, layers, heads, 1+N, 1+N)
    assert torch.isfinite(logits).all()


def test_position_embedding_kinds() -> None:
    learned, sincos = small_vit(pos_embedding="learned"), small_vit(pos_embedding="sincos")
    assert isinstance(learned.pos_embedding, nn.Parameter)
    assert "pos_embedding" in learned.state_dict()
    # sincos is a fixed, non-persistent buffer: not trained, not stored in checkpoints.
    assert not isinstance(sincos.pos_embedding, nn.Parameter)
    assert "pos_embedding" not in sincos.state_dict()
    pe = sincos.pos_embedding[0]
    assert pe.shape == (50, 32)
    assert torch.equal(pe[0], torch.zeros(32))  # CLS
    assert torch.unique(pe[1:], dim=0).shape[0] == 49  # every patch position is distinct


def test_patchify_matches_conv_unfold_order() -> None:
    """Our (c, p1, p2) patch flattening is exactly Conv2d/unfold order, grid row-major."""
    x = torch.randn(2, 3, 32, 32)
    expected = F.unfold(x, kernel_size=8, stride=8).transpose(1, 2)  # (B, N, C*P*P)
    assert torch.equal(patchify(x, 8), expected)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"image_size": 28, "patch_size": 5}, "image_size 28 is not divisible by patch_size 5"),
        ({"image_size": 30, "patch_size": 4}, "image_size 30 is not divisible by patch_size 4"),
        ({"dim": 30, "heads": 4}, "dim 30 is not divisible by heads 4"),
        ({"pos_embedding": "rope"}, "pos_embedding must be 'learned' or 'sincos'"),
    ],
)
def test_config_errors(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ViTConfig(**kwargs)


def test_sincos_needs_dim_divisible_by_4() -> None:
    with pytest.raises(ValueError, match="dim % 4 == 0"):
        small_vit(dim=6, heads=2, pos_embedding="sincos")


@pytest.mark.parametrize("shape", [(2, 1, 32, 32), (2, 3, 28, 28), (2, 1, 28, 27)])
def test_wrong_input_shape_names_expected_shape(shape: tuple[int, ...]) -> None:
    model = small_vit().eval()
    with pytest.raises(AssertionError, match=r"expected images of shape \(B, 1, 28, 28\), got"):
        model(torch.randn(*shape))


@pytest.mark.parametrize("pos", ["learned", "sincos"])
def test_fused_and_explicit_attention_agree(pos: str) -> None:
    model = randomise(small_vit(pos_embedding=pos, dropout=0.2, attn_dropout=0.2, emb_dropout=0.2))
    x = torch.randn(4, 1, 28, 28)
    with torch.no_grad():
        _, attn = model.forward_with_attention(x)
        # Precondition: attention is far from uniform, so the comparison has teeth.
        assert attn.max() > 10 / attn.shape[-1]
        model.set_fused_attn(True)
        fused = model(x)
        model.set_fused_attn(False)
        explicit = model(x)
    assert all(not b.attn.fused_attn for b in model.blocks)
    torch.testing.assert_close(fused, explicit, atol=1e-5, rtol=1e-4)
    assert fused.std() > 0.1  # logits are not trivially equal


def test_forward_with_attention_logits_equal_forward() -> None:
    model = randomise(small_vit(), seed=1)
    x = torch.randn(3, 1, 28, 28)
    with torch.no_grad():
        logits, _ = model.forward_with_attention(x)
        torch.testing.assert_close(logits, model(x), atol=1e-5, rtol=1e-4)


def test_softmax_hooks_fire_on_the_explicit_path_only() -> None:
    model = randomise(small_vit(), seed=2)
    seen: list[torch.Tensor] = []
    handles = [b.attn.attend.register_forward_hook(lambda m, i, o: seen.append(o)) for b in model.blocks]
    x = torch.randn(2, 1, 28, 28)
    with torch.no_grad():
        model(x)
        assert seen == []  # fused SDPA never calls the softmax module
        _, attn = model.forward_with_attention(x)
    for h in handles:
        h.remove()
    assert len(seen) == 3
    torch.testing.assert_close(torch.stack(seen, dim=1), attn)


def test_attention_weights_are_distributions() -> None:
    model = randomise(small_vit(depth=4), seed=3)
    with torch.no_grad():
        _, attn = model.forward_with_attention(torch.randn(2, 1, 28, 28))
    assert (attn >= 0).all()
    # every layer, head and query: a distribution over the keys
    torch.testing.assert_close(attn.sum(dim=-1), torch.ones(attn.shape[:-1]), atol=1e-5, rtol=0)


def test_cls_attention_is_the_cls_query_softmax_over_the_patches() -> None:
    """Computed by hand from the first block's weights: softmax_j(q_cls . k_j / sqrt(head_dim)) over
    all tokens, the patch entries kept in grid order."""
    model = randomise(small_vit(depth=1), seed=4)
    x = torch.randn(2, 1, 28, 28)
    dim, heads, head_dim = 32, 4, 8
    with torch.no_grad():
        _, attn = model.forward_with_attention(x)
        patches = model.to_patch_embedding(F.unfold(x, kernel_size=4, stride=4).transpose(1, 2))
        tokens = torch.cat([model.cls_token.expand(2, -1, -1), patches], dim=1) + model.pos_embedding
        h = model.blocks[0].norm1(tokens).double()
        qkv = model.blocks[0].attn.to_qkv
        w, b = qkv.weight.double(), qkv.bias.double()
        q_cls = (h[:, 0] @ w[:dim].T + b[:dim]).view(2, heads, head_dim)  # the CLS token's query
        keys = (h @ w[dim : 2 * dim].T + b[dim : 2 * dim]).view(2, 50, heads, head_dim)
        scores = torch.einsum("bhd,bthd->bht", q_cls, keys) / head_dim**0.5
        expected = scores.softmax(dim=-1)[..., 1:].float()  # (B, heads, patches)
    cls = cls_attention(attn)
    assert cls.shape == (2, 1, 4, 49)  # (B, layers, heads, patches)
    assert expected.max() > 5 / 50  # far from uniform: a wrong row, column or order would show
    torch.testing.assert_close(cls[:, 0], expected, atol=1e-5, rtol=1e-4)


def test_cls_attention_is_uniform_when_queries_and_keys_are_zero() -> None:
    """With the query and key projections zeroed every score is 0: each token gets 1/(1+N) in every
    layer and head, whatever the image."""
    model = randomise(small_vit(), seed=4)
    with torch.no_grad():
        for block in model.blocks:
            block.attn.to_qkv.weight[: 2 * 32] = 0
            block.attn.to_qkv.bias[: 2 * 32] = 0
        _, attn = model.forward_with_attention(torch.randn(2, 1, 28, 28))
    cls = cls_attention(attn)
    assert cls.shape == (2, 3, 4, 49)
    torch.testing.assert_close(cls, torch.full((2, 3, 4, 49), 1 / 50))


def rollout_reference(attn: np.ndarray, residual: bool = True) -> np.ndarray:
    """Abnar & Zuidema rollout, written independently with loops in float64."""
    b, layers, _, t, _ = attn.shape
    out = np.empty((b, t - 1))
    for i in range(b):
        joint = np.eye(t)
        for layer in range(layers):
            a = attn[i, layer].astype(np.float64).mean(axis=0)  # mean over heads
            if residual:
                a = 0.5 * a + 0.5 * np.eye(t)
            a = a / a.sum(axis=1, keepdims=True)
            joint = a @ joint  # layer 1 first, each later layer applied on the left
        row = joint[0, 1:]  # CLS row, patches only
        out[i] = row / row.sum()
    return out


def random_attention(b: int, layers: int, heads: int, t: int, seed: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(b, layers, heads, t, t, generator=gen) * 3).softmax(-1)


@pytest.mark.parametrize("residual", [True, False])
def test_attention_rollout_matches_reference(residual: bool) -> None:
    # Sharp random maps: the layer matrices do not commute, so a wrong order would show.
    attn = random_attention(3, 4, 2, 10, seed=5)
    got = attention_rollout(attn, residual=residual)
    assert got.shape == (3, 9)
    np.testing.assert_allclose(got.numpy(), rollout_reference(attn.numpy(), residual), rtol=1e-5, atol=1e-7)
    torch.testing.assert_close(got.sum(-1), torch.ones(3))
    # the reversed multiplication order gives a different answer on these maps
    flipped = rollout_reference(attn.flip(1).numpy(), residual)
    assert not np.allclose(got.numpy(), flipped, atol=1e-4)


def test_attention_rollout_on_model_attention() -> None:
    model = randomise(small_vit(), seed=6)
    with torch.no_grad():
        _, attn = model.forward_with_attention(torch.randn(2, 1, 28, 28))
    got = attention_rollout(attn)
    assert got.shape == (2, 49)
    assert (got >= 0).all()
    torch.testing.assert_close(got.sum(-1), torch.ones(2))
    np.testing.assert_allclose(got.numpy(), rollout_reference(attn.numpy()), rtol=1e-4, atol=1e-7)


def test_drop_path_rates_rise_with_depth() -> None:
    model = small_vit(depth=4, drop_path=0.3)
    rates = [block.drop_path.p for block in model.blocks]
    assert rates == pytest.approx([0.0, 0.1, 0.2, 0.3])
    assert [b.drop_path.p for b in small_vit(depth=1, drop_path=0.2).blocks] == [0.2]
    with pytest.raises(ValueError, match="drop_path"):
        ViTConfig(drop_path=1.0)


def test_drop_path_is_off_in_eval_and_per_sample_in_training() -> None:
    torch.manual_seed(0)
    with_dp = randomise(small_vit(drop_path=0.5))
    without = small_vit()
    without.load_state_dict(with_dp.state_dict())  # drop path adds no parameters
    without.eval()
    x = torch.randn(8, 1, 28, 28)
    with torch.no_grad():
        torch.testing.assert_close(with_dp(x), without(x))  # eval: the identity
        with_dp.train()
        a, b = with_dp(x), with_dp(x)
    assert not torch.allclose(a, b)  # training: a fresh draw each call


def test_drop_path_drops_whole_samples_and_keeps_the_mean() -> None:
    from model_store.vit import DropPath

    torch.manual_seed(0)
    drop = DropPath(0.25).train()
    out = drop(torch.ones(4000, 3, 2))
    per_sample = out[:, 0, 0]
    assert per_sample.unique().tolist() == pytest.approx([0.0, 1 / 0.75])
    assert (out == per_sample.view(-1, 1, 1)).all()  # a sample is kept or dropped as a whole
    assert out.mean().item() == pytest.approx(1.0, abs=0.05)
    assert torch.equal(drop.eval()(out), out)
