"""Fit the "is it a digit" detector (``model_store.digit_detector``): a two-layer MLP on layer summaries.

Digits (label 1) against generated outliers (label 0), each side weighted to half the loss so the
outlier count does not set the balance. Inputs are standardised on the digits; the standardisation is
folded into the first layer, so the stored MLP reads raw layer summaries.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from model_store.digit_detector import fold_standardisation


def fit_detector(
    digits: torch.Tensor,
    outliers: torch.Tensor,
    hidden: int = 64,
    epochs: int = 100,
    batch: int = 512,
    lr: float = 3e-3,
    weight_decay: float = 1e-3,
    seed: int = 0,
) -> dict[str, torch.Tensor]:
    """(N, S) digit and (M, S) outlier summaries -> the detector tensors (``DETECTOR_KEYS``)."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.cat([digits, outliers]).float()
    y = torch.cat([torch.ones(len(digits)), torch.zeros(len(outliers))])
    weight = torch.where(y == 1, 0.5 / len(digits), 0.5 / len(outliers)) * len(x)
    mean, std = digits.float().mean(0), digits.float().std(0) + 1e-4
    x = (x - mean) / std
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        net = nn.Sequential(nn.Linear(x.shape[1], hidden), nn.ReLU(), nn.Linear(hidden, 1))
    opt = torch.optim.AdamW(net.parameters(), lr, weight_decay=weight_decay)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, lr, total_steps=epochs * -(-len(x) // batch))
    for _ in range(epochs):
        for idx in torch.randperm(len(x), generator=gen).split(batch):
            loss = F.binary_cross_entropy_with_logits(net(x[idx])[:, 0], y[idx], weight=weight[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
    w1, b1 = fold_standardisation(net[0].weight.detach(), net[0].bias.detach(), mean, std)
    return {
        "detector.w1": w1,
        "detector.b1": b1,
        "detector.w2": net[2].weight.detach().contiguous(),
        "detector.b2": net[2].bias.detach().contiguous(),
    }
