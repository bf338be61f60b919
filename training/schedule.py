"""Learning-rate schedule and optimizer parameter groups."""

from __future__ import annotations

import math

import torch
from torch import nn


def warmup_cosine(total_steps: int, warmup_steps: int, min_ratio: float = 0.01):
    """Multiplier for LambdaLR: linear warm-up to 1, then cosine decay to ``min_ratio``."""

    def factor(step: int) -> float:
        if step < warmup_steps:
            return (step + 1) / warmup_steps
        progress = min(1.0, (step - warmup_steps) / max(1, total_steps - warmup_steps))
        return min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * progress))

    return factor


def param_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    """No weight decay on biases, norms, the class token and position embeddings."""
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        (no_decay if p.ndim < 2 or "token" in name or "pos_embedding" in name else decay).append(p)
    return [
        {"params": decay, "weight_decay": weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]


def make_optimizer(model: nn.Module, lr: float, weight_decay: float, device: torch.device):
    return torch.optim.AdamW(
        param_groups(model, weight_decay), lr=lr, betas=(0.9, 0.999), fused=device.type == "cuda"
    )
