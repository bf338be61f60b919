"""A stable name for harnesses outside this repository: ``../shared/peers`` serves our model with
LitServe and Triton and imports ``trace_for_inference`` from here, so that every system runs the very
forward pass the engine runs. Nothing in the service imports this module."""

from __future__ import annotations

import torch
from torch import nn

from model_store import ModelCard

from .engine.models import trace_for_inference as _trace


def trace_for_inference(model: nn.Module, card: ModelCard, device: torch.device) -> nn.Module:
    """The model's forward (normalised input -> logits), traced and frozen as the engine does it."""
    return _trace(model.eval(), card.name, device)
