"""Vision Transformer (Dosovitskiy et al. 2020), written from scratch.

Built bottom-up: patch embedding -> attention -> MLP -> encoder block -> config -> model.
Patches are flattened in (channel, row, col) order, so a Conv2d(k=P, s=P) patch projection maps
onto our Linear by a plain reshape (see ``model_store/convert.py`` and ``tests/model_store/test_vit_b16.py``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn


@dataclass(frozen=True)
class ViTConfig:
    image_size: int = 28
    patch_size: int = 4
    in_channels: int = 1
    num_classes: int = 10
    dim: int = 64
    depth: int = 6
    heads: int = 4
    mlp_dim: int = 128
    dropout: float = 0.0  # after attention/MLP projections
    attn_dropout: float = 0.0  # on the attention weights
    emb_dropout: float = 0.0  # after adding position embeddings
    drop_path: float = 0.0  # stochastic depth: the last block's rate, rising linearly from 0 at the first
    pos_embedding: Literal["learned", "sincos"] = "learned"
    qkv_bias: bool = True
    layer_norm_eps: float = 1e-6

    def __post_init__(self) -> None:
        if self.image_size % self.patch_size:
            raise ValueError(f"image_size {self.image_size} is not divisible by patch_size {self.patch_size}")
        if self.dim % self.heads:
            raise ValueError(f"dim {self.dim} is not divisible by heads {self.heads}")
        if not 0.0 <= self.drop_path < 1.0:
            raise ValueError(f"drop_path must be in [0, 1), not {self.drop_path}")
        if self.pos_embedding not in ("learned", "sincos"):
            raise ValueError(f"pos_embedding must be 'learned' or 'sincos', not {self.pos_embedding!r}")

    @property
    def grid_size(self) -> int:
        return self.image_size // self.patch_size

    @property
    def num_patches(self) -> int:
        return self.grid_size**2

    def to_dict(self) -> dict:
        return {"arch": "vit", **asdict(self)}


def patchify(images: torch.Tensor, patch_size: int) -> torch.Tensor:
    """(B, C, H, W) -> (B, N, C*P*P), patches in row-major grid order, pixels in (c, p1, p2) order."""
    b, c, h, w = images.shape
    p = patch_size
    assert h % p == 0 and w % p == 0, f"image {h}x{w} is not divisible by patch size {p}"
    x = images.reshape(b, c, h // p, p, w // p, p)  # (B, C, gh, P, gw, P)
    x = x.permute(0, 2, 4, 1, 3, 5)  # (B, gh, gw, C, P, P)
    return x.reshape(b, (h // p) * (w // p), c * p * p)


def sincos_2d_position_embedding(grid_size: int, dim: int) -> torch.Tensor:
    """Fixed 2-D sin-cos embedding (MoCo v3 / MAE), (grid*grid, dim); needs dim % 4 == 0."""
    if dim % 4:
        raise ValueError(f"sincos position embedding needs dim % 4 == 0, got {dim}")
    ys, xs = torch.meshgrid(
        torch.arange(grid_size, dtype=torch.float32),
        torch.arange(grid_size, dtype=torch.float32),
        indexing="ij",
    )
    omega = 1.0 / (10000 ** (torch.arange(dim // 4, dtype=torch.float32) / (dim // 4)))
    out_x = xs.flatten()[:, None] * omega[None, :]
    out_y = ys.flatten()[:, None] * omega[None, :]
    return torch.cat([out_x.sin(), out_x.cos(), out_y.sin(), out_y.cos()], dim=1)


class Attention(nn.Module):
    """Multi-head self-attention with a fused (SDPA) path and an explicit softmax path."""

    def __init__(self, *, dim: int, heads: int, attn_dropout: float, dropout: float, qkv_bias: bool):
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        self.scale = self.head_dim**-0.5
        self.fused_attn = True
        self.to_qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        # Held as modules so the weights can be observed with hooks on the explicit path.
        self.attend = nn.Softmax(dim=-1)
        self.attn_drop = nn.Dropout(attn_dropout)
        self.to_out = nn.Linear(dim, dim)
        self.out_drop = nn.Dropout(dropout)

    def forward(
        self, x: torch.Tensor, return_attention: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        b, n, d = x.shape
        qkv = self.to_qkv(x).reshape(b, n, 3, self.heads, self.head_dim)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)  # each (B, heads, N, head_dim)
        weights = None
        if self.fused_attn and not return_attention:
            drop = self.attn_drop.p if self.training else 0.0
            out = F.scaled_dot_product_attention(q, k, v, dropout_p=drop)
        else:
            # Explicit path: the softmax weights are needed (attention maps) or hooks must fire.
            scores = (q * self.scale) @ k.transpose(-2, -1)  # (B, heads, N, N)
            weights = self.attend(scores.float()).to(q.dtype)
            out = self.attn_drop(weights) @ v
        out = out.transpose(1, 2).reshape(b, n, d)  # (B, N, dim)
        return self.out_drop(self.to_out(out)), weights


class MLP(nn.Module):
    def __init__(self, *, dim: int, hidden_dim: int, dropout: float):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(dim, hidden_dim),
            nn.GELU(),
            nn.Dropout(dropout),
            nn.Linear(hidden_dim, dim),
            nn.Dropout(dropout),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class DropPath(nn.Module):
    """Stochastic depth (Huang et al. 2016, as in DeiT): while training, drop a residual branch for a
    random subset of the samples and scale the kept ones by 1/(1-p); the identity in eval."""

    def __init__(self, p: float):
        super().__init__()
        self.p = p

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0.0:
            return x
        keep = 1.0 - self.p
        mask = x.new_empty((x.shape[0],) + (1,) * (x.ndim - 1)).bernoulli_(keep)  # (B, 1, 1)
        return x * mask / keep

    def extra_repr(self) -> str:
        return f"p={self.p:.3f}"


class Block(nn.Module):
    """Pre-LayerNorm encoder block: x + MSA(LN(x)), then x + MLP(LN(x)), each branch under drop path."""

    def __init__(self, cfg: ViTConfig, drop_path: float = 0.0):
        super().__init__()
        self.norm1 = nn.LayerNorm(cfg.dim, eps=cfg.layer_norm_eps)
        self.attn = Attention(
            dim=cfg.dim,
            heads=cfg.heads,
            attn_dropout=cfg.attn_dropout,
            dropout=cfg.dropout,
            qkv_bias=cfg.qkv_bias,
        )
        self.norm2 = nn.LayerNorm(cfg.dim, eps=cfg.layer_norm_eps)
        self.mlp = MLP(dim=cfg.dim, hidden_dim=cfg.mlp_dim, dropout=cfg.dropout)
        self.drop_path = DropPath(drop_path)

    def forward(
        self, x: torch.Tensor, return_attention: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        attn_out, weights = self.attn(self.norm1(x), return_attention)
        x = x + self.drop_path(attn_out)
        x = x + self.drop_path(self.mlp(self.norm2(x)))
        return x, weights


class ViT(nn.Module):
    def __init__(self, cfg: ViTConfig):
        super().__init__()
        self.cfg = cfg
        patch_dim = cfg.in_channels * cfg.patch_size**2
        self.to_patch_embedding = nn.Linear(patch_dim, cfg.dim)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, cfg.dim))
        n_tokens = cfg.num_patches + 1
        if cfg.pos_embedding == "learned":
            self.pos_embedding = nn.Parameter(torch.empty(1, n_tokens, cfg.dim))
        else:
            pe = sincos_2d_position_embedding(cfg.grid_size, cfg.dim)
            pe = torch.cat([torch.zeros(1, cfg.dim), pe])[None]  # CLS gets a zero embedding
            self.register_buffer("pos_embedding", pe, persistent=False)
        self.emb_drop = nn.Dropout(cfg.emb_dropout)
        # Deeper blocks are dropped more often: rates 0 .. drop_path (DeiT's linear rule).
        rates = torch.linspace(0, cfg.drop_path, cfg.depth).tolist() if cfg.depth > 1 else [cfg.drop_path]
        self.blocks = nn.ModuleList(Block(cfg, rate) for rate in rates)
        self.norm = nn.LayerNorm(cfg.dim, eps=cfg.layer_norm_eps)
        self.head = nn.Linear(cfg.dim, cfg.num_classes)
        self._init_weights()

    def _init_weights(self) -> None:
        if isinstance(self.pos_embedding, nn.Parameter):
            nn.init.trunc_normal_(self.pos_embedding, std=0.02)
        nn.init.trunc_normal_(self.cls_token, std=0.02)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.trunc_normal_(m.weight, std=0.02)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, nn.LayerNorm):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
        # A zero head starts training at uniform predictions (as in the ViT paper's fine-tuning).
        nn.init.zeros_(self.head.weight)

    def get_num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def set_fused_attn(self, enabled: bool) -> None:
        for block in self.blocks:
            block.attn.fused_attn = enabled

    def forward_features(
        self, images: torch.Tensor, return_attention: bool = False, hidden: list[torch.Tensor] | None = None
    ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """(B, C, H, W) -> tokens (B, 1+N, dim) after the final norm, and per-layer attention.
        ``hidden``, when given, receives every block's output tokens (B, 1+N, dim) on the way, for
        readers of the intermediate layers (``model_store.digit_detector``)."""
        c, h, w = images.shape[1:]
        cfg = self.cfg
        assert (c, h, w) == (cfg.in_channels, cfg.image_size, cfg.image_size), (
            f"expected images of shape (B, {cfg.in_channels}, {cfg.image_size}, {cfg.image_size}), "
            f"got {tuple(images.shape)}"
        )
        x = self.to_patch_embedding(patchify(images, cfg.patch_size))  # (B, N, dim)
        cls = self.cls_token.expand(x.shape[0], -1, -1)
        x = torch.cat([cls, x], dim=1) + self.pos_embedding  # (B, 1+N, dim)
        x = self.emb_drop(x)
        attentions = []
        for block in self.blocks:
            x, weights = block(x, return_attention)
            if weights is not None:
                attentions.append(weights)
            if hidden is not None:
                hidden.append(x)
        return self.norm(x), attentions

    def forward_head(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(tokens[:, 0])  # classify from the CLS token

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.forward_head(self.forward_features(images)[0])

    def forward_with_attention(self, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits (B, classes) and attention weights (B, layers, heads, 1+N, 1+N)."""
        tokens, attentions = self.forward_features(images, return_attention=True)
        return self.forward_head(tokens), torch.stack(attentions, dim=1)


__all__ = [
    "DropPath",
    "ViT",
    "ViTConfig",
    "patchify",
    "sincos_2d_position_embedding",
]
