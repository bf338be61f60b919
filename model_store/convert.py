"""Weight conversion from ``torchvision.models.VisionTransformer`` to our ``ViT``.

Used to prove the ``vit-b16`` preset is ViT-B/16 exactly (same parameters, same logits), and to
start from torchvision's ImageNet weights if one ever wants to. Every key is mapped explicitly:
a key this module does not know raises instead of being silently dropped.
"""

from __future__ import annotations

import re

import torch

_LAYER = re.compile(r"^encoder\.layers\.encoder_layer_(\d+)\.(.+)$")

# Per-block names: torchvision suffix -> ours (prefixed with ``blocks.{i}.``).
_BLOCK_KEYS = {
    "ln_1.weight": "norm1.weight",
    "ln_1.bias": "norm1.bias",
    "self_attention.in_proj_weight": "attn.to_qkv.weight",  # rows are [q; k; v], as our to_qkv
    "self_attention.in_proj_bias": "attn.to_qkv.bias",
    "self_attention.out_proj.weight": "attn.to_out.weight",
    "self_attention.out_proj.bias": "attn.to_out.bias",
    "ln_2.weight": "norm2.weight",
    "ln_2.bias": "norm2.bias",
    "mlp.0.weight": "mlp.net.0.weight",  # Linear, GELU, Dropout, Linear, Dropout in both models
    "mlp.0.bias": "mlp.net.0.bias",
    "mlp.3.weight": "mlp.net.3.weight",
    "mlp.3.bias": "mlp.net.3.bias",
}

_TOP_KEYS = {
    "class_token": "cls_token",
    "conv_proj.bias": "to_patch_embedding.bias",
    "encoder.pos_embedding": "pos_embedding",
    "encoder.ln.weight": "norm.weight",
    "encoder.ln.bias": "norm.bias",
    "heads.head.weight": "head.weight",
    "heads.head.bias": "head.bias",
}


def torchvision_vit_to_ours(state_dict: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Rename (and for the patch projection, reshape) a torchvision ViT state dict for ``ViT``.

    ``conv_proj.weight`` (D, C, P, P) becomes ``to_patch_embedding.weight`` (D, C*P*P): a
    stride-P convolution is a Linear over each patch, and our patches are flattened in
    (c, p1, p2) order, which is the conv kernel's own memory order.
    """
    out: dict[str, torch.Tensor] = {}
    for key, value in state_dict.items():
        if key == "conv_proj.weight":
            out["to_patch_embedding.weight"] = value.reshape(value.shape[0], -1)
        elif key in _TOP_KEYS:
            out[_TOP_KEYS[key]] = value
        elif (m := _LAYER.match(key)) and m.group(2) in _BLOCK_KEYS:
            out[f"blocks.{m.group(1)}.{_BLOCK_KEYS[m.group(2)]}"] = value
        else:
            raise KeyError(f"no mapping for torchvision key {key!r} (heads.pre_logits is not supported)")
    return out


__all__ = ["torchvision_vit_to_ours"]
