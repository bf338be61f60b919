"""The "is it a digit" detector: a tiny MLP on summaries of every layer of the checkpoint's own model.

The classifier's weights stay untouched. Its forward pass is read at every layer, and a two-layer MLP,
fitted by ``python -m training calibrate`` on training digits against generated outliers, turns those
summaries into one logit: the digit score (higher = more digit-like). The shipped MLPs are the mean of
five fitted apart (``training.detector_fit``), stored as one five times as wide: serving does not know.

Layer summaries (``layer_summaries``), one vector per image, always in this order:

    ViT   the final CLS token; per encoder block the CLS token and the mean patch token; the mean
          patch token after the final norm
    CNN   the hidden layer before the last linear; per ReLU of the convolutional trunk the channel
          means and the channel maxima

The MLP's input standardisation is folded into its first layer, so serving is two matmuls.
"""

from __future__ import annotations

import torch
from torch import nn

from .cnn import CNN
from .vit import ViT

DETECTOR_KEYS = ("detector.w1", "detector.b1", "detector.w2", "detector.b2")


def layer_summaries(
    model: nn.Module, x: torch.Tensor, return_attention: bool = False, summarise: bool = True
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, list[torch.Tensor]]:
    """Normalised pixels -> (penultimate features (B, D), logits (B, C), summaries (B, S), attention):
    the model's own forward pass, its hidden layers summarised on the way. ``summarise=False`` skips
    the hidden layers (summaries (B, 0)), for scores that do not read them."""
    hidden: list[torch.Tensor] | None = [] if summarise else None
    if isinstance(model, ViT):
        tokens, attentions = model.forward_features(x, return_attention, hidden)
        features = tokens[:, 0]
        if hidden is None:
            return features, model.forward_head(tokens), features[:, :0], attentions
        blocks = [s for h in hidden for s in (h[:, 0], h[:, 1:].mean(1))]
        summary = torch.cat([features, *blocks, tokens[:, 1:].mean(1)], dim=-1)
        return features, model.forward_head(tokens), summary, attentions
    if isinstance(model, CNN):
        features = model.forward_features(x, hidden)
        if hidden is None:
            return features, model.forward_head(features), features[:, :0], []
        relus = [s for h in hidden for s in (h.mean((2, 3)), h.amax((2, 3)))]
        return features, model.forward_head(features), torch.cat([features, *relus], dim=-1), []
    raise TypeError(f"no layer summaries for {type(model).__name__}")


def detector_score(summary: torch.Tensor, w1: torch.Tensor, b1: torch.Tensor, w2: torch.Tensor,
                   b2: torch.Tensor) -> torch.Tensor:  # fmt: skip
    """(B, S) layer summaries -> (B,) digit logit of the MLP ``w2 relu(w1 s + b1) + b2``."""
    hidden = torch.relu(summary.float() @ w1.T + b1)
    return (hidden @ w2.T + b2)[:, 0]


def fold_standardisation(
    w1: torch.Tensor, b1: torch.Tensor, mean: torch.Tensor, std: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """First-layer weights on standardised inputs -> the same layer on raw inputs."""
    w = w1 / std[None, :]
    return w.contiguous(), (b1 - w @ mean).contiguous()


__all__ = ["DETECTOR_KEYS", "detector_score", "fold_standardisation", "layer_summaries"]
