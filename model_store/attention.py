"""CLS-token attention maps and attention rollout (Abnar & Zuidema 2020) from ViT weights."""

from __future__ import annotations

import torch


def cls_attention(attn: torch.Tensor) -> torch.Tensor:
    """CLS row over the patches: (B, L, H, 1+N, 1+N) -> (B, L, H, N).

    Rows are taken straight from the softmax, so with the CLS->CLS entry they sum to 1.
    """
    return attn[..., 0, 1:]


def attention_rollout(attn: torch.Tensor, residual: bool = True) -> torch.Tensor:
    """Rollout of CLS attention onto the patches: (B, L, H, T, T) -> (B, N).

    Heads are averaged; with ``residual`` each layer's matrix becomes 0.5*A + 0.5*I to account
    for the skip connection; rows are renormalised and the matrices multiplied from the first
    layer to the last. The CLS row of the product (patches only) is renormalised to sum to 1.
    """
    a = attn.float().mean(dim=2)  # (B, L, T, T)
    if residual:
        eye = torch.eye(a.shape[-1], device=a.device, dtype=a.dtype)
        a = 0.5 * a + 0.5 * eye
    a = a / a.sum(dim=-1, keepdim=True)
    joint = a[:, 0]
    for layer in range(1, a.shape[1]):
        joint = a[:, layer] @ joint  # later layers mix the already-mixed tokens
    cls_to_patches = joint[:, 0, 1:]
    return cls_to_patches / cls_to_patches.sum(dim=-1, keepdim=True)
