"""Fit the "is it a digit" detector (``model_store.digit_detector``): a two-layer MLP on layer summaries.

Digits (label 1) against generated outliers (label 0), each side weighted to half the loss so the
outlier count does not set the balance. Inputs are standardised on the digits; the standardisation is
folded into the first layer, so the stored MLP reads raw layer summaries.

The detector is an ensemble (Lakshminarayanan et al. 2017): ``members`` MLPs from different initial
weights, fitted side by side as one wide network whose members share nothing but the batches, and stored
as one MLP whose output is their mean score (the hidden layers stacked, the output weights divided by the
count). One member's verdict on kinds of picture no family resembles swings by several points with its
initial weights alone (Fashion-MNIST's clothes: 77-86% caught by five ViT detectors alike in all else);
their mean swings less and catches more. Serving it is the same two matmuls, ``members`` times wider.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from model_store.digit_detector import fold_standardisation


class _Members(nn.Module):
    """``members`` two-layer MLPs on one input: (B, S) -> (B, members) scores."""

    def __init__(self, width: int, hidden: int, members: int) -> None:
        super().__init__()
        self.members, self.hidden = members, hidden
        layers = [nn.Linear(width, hidden) for _ in range(members)]  # each initialised as alone
        heads = [nn.Linear(hidden, 1) for _ in range(members)]
        self.w1 = nn.Parameter(torch.cat([m.weight.detach() for m in layers]))  # (members * hidden, S)
        self.b1 = nn.Parameter(torch.cat([m.bias.detach() for m in layers]))
        self.w2 = nn.Parameter(torch.stack([m.weight.detach()[0] for m in heads]))  # (members, hidden)
        self.b2 = nn.Parameter(torch.cat([m.bias.detach() for m in heads]))  # (members,)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(x @ self.w1.T + self.b1).view(len(x), self.members, self.hidden)
        return (h * self.w2).sum(-1) + self.b2


def fit_detector(
    digits: torch.Tensor,
    outliers: torch.Tensor,
    hidden: int = 64,
    epochs: int = 100,
    batch: int = 512,
    lr: float = 3e-3,
    weight_decay: float = 1e-3,
    seed: int = 0,
    members: int = 1,
) -> dict[str, torch.Tensor]:
    """(N, S) digit and (M, S) outlier summaries -> the detector tensors (``DETECTOR_KEYS``): the mean
    score of ``members`` MLPs of ``hidden`` units, as one MLP of ``members * hidden``."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.cat([digits, outliers]).float()
    y = torch.cat([torch.ones(len(digits)), torch.zeros(len(outliers))])
    weight = torch.where(y == 1, 0.5 / len(digits), 0.5 / len(outliers)) * len(x)
    mean, std = digits.float().mean(0), digits.float().std(0) + 1e-4
    x = (x - mean) / std
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        net = _Members(x.shape[1], hidden, members)
    opt = torch.optim.AdamW(net.parameters(), lr, weight_decay=weight_decay)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, lr, total_steps=epochs * -(-len(x) // batch))
    for _ in range(epochs):
        for idx in torch.randperm(len(x), generator=gen).split(batch):
            scores = net(x[idx])  # (B, members): each member's loss is its own, summed
            target, w = y[idx, None].expand_as(scores), weight[idx, None].expand_as(scores)
            loss = F.binary_cross_entropy_with_logits(scores, target, weight=w) * members
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
    w1, b1 = fold_standardisation(net.w1.detach(), net.b1.detach(), mean, std)
    return {
        "detector.w1": w1,
        "detector.b1": b1,
        "detector.w2": (net.w2.detach().reshape(1, -1) / members).contiguous(),
        "detector.b2": net.b2.detach().mean().reshape(1).contiguous(),
    }
