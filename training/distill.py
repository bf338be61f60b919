"""Knowledge distillation: a stored checkpoint (the teacher) guides training through its answers.

A ViT learns from 60,000 digits without a convolution's bias towards local strokes; a CNN has it and
reaches a higher accuracy on MNIST. Training the ViT to also agree with such a teacher, on the same
augmented batch, passes that bias on without changing the ViT itself (Touvron et al. 2021, DeiT, whose
CNN-taught ViTs beat ViTs trained on labels alone). Both teacher and student are trained from scratch
by this project, so nothing pretrained enters. Two kinds of target:

- ``hard`` (DeiT's choice, better there): cross-entropy towards the teacher's top class;
- ``soft`` (Hinton et al. 2015): KL divergence towards the teacher's probabilities at temperature T,
  scaled by T**2 so that its gradients keep their size.

    loss = (1 - weight) * CE(student, label; label smoothing) + weight * distillation term
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import torch
import torch.nn.functional as F
from torch import nn

from .stored import load_stored, refuse_other_labels

KINDS = ("hard", "soft")
DEFAULT_WEIGHT = 0.5  # as DeiT
DEFAULT_TEMPERATURE = 3.0  # soft targets only


@dataclass
class Teacher:
    model: nn.Module
    mean: float
    std: float
    kind: Literal["hard", "soft"]
    weight: float
    temperature: float
    record: dict[str, Any]  # what the student's card says about it

    @classmethod
    def load(
        cls, directory: Path, labels: list[str], image_size: int, kind: str | None = None,
        weight: float | None = None, temperature: float | None = None,
    ) -> Teacher:  # fmt: skip
        """The checkpoint at ``directory``, frozen; refuses one trained for other labels or images.
        None: the default kind (hard), weight and temperature."""
        kind = kind or "hard"
        weight = DEFAULT_WEIGHT if weight is None else weight
        temperature = DEFAULT_TEMPERATURE if temperature is None else temperature
        if kind not in KINDS:
            raise SystemExit(f"--distill: one of {', '.join(KINDS)}, not {kind!r}")
        if not 0.0 <= weight <= 1.0 or temperature <= 0:
            raise SystemExit("--distill-weight: between 0 and 1; --distill-temperature: above 0")
        model, card = load_stored(directory, "--teacher")
        refuse_other_labels(card, labels, directory, "--teacher")
        if card.preprocessing.image_size != image_size:
            raise SystemExit(f"--teacher: {directory} reads {card.preprocessing.image_size}px images, the "
                             f"student {image_size}px")  # fmt: skip
        model.eval().requires_grad_(False)
        record = {"path": str(directory), "weights_sha256": card.weights_sha256, "arch": card.arch,
                  "num_params": card.num_params, "test_accuracy": card.metrics.get("test_accuracy"),
                  "command": card.training.get("command"), "kind": kind, "weight": weight,
                  **({"temperature": temperature} if kind == "soft" else {})}  # fmt: skip
        return cls(model, float(card.preprocessing.mean), float(card.preprocessing.std), kind, weight,
                   temperature, record)  # fmt: skip

    def to(self, device: torch.device) -> Teacher:
        self.model.to(device)
        return self

    @torch.no_grad()
    def logits(self, pixels: torch.Tensor) -> torch.Tensor:
        """(B, 1, H, W) augmented pixels in 0..1 -> the teacher's logits, normalised its own way."""
        return self.model((pixels - self.mean) / self.std).float()

    def loss(
        self, student: torch.Tensor, labels: torch.Tensor, teacher: torch.Tensor, label_smoothing: float
    ) -> torch.Tensor:
        return distillation_loss(student, labels, teacher, self.kind, self.weight, self.temperature,
                                 label_smoothing)  # fmt: skip


def distillation_loss(
    student: torch.Tensor,
    labels: torch.Tensor,
    teacher: torch.Tensor,
    kind: str,
    weight: float,
    temperature: float = 1.0,
    label_smoothing: float = 0.0,
) -> torch.Tensor:
    """(1 - weight) * CE(student, labels) + weight * (CE to the teacher's class, or T**2 * KL at T)."""
    student = student.float()
    supervised = F.cross_entropy(student, labels, label_smoothing=label_smoothing)
    if kind == "hard":
        taught = F.cross_entropy(student, teacher.argmax(dim=1))
    else:
        t = temperature
        taught = t * t * F.kl_div(F.log_softmax(student / t, dim=1), F.log_softmax(teacher / t, dim=1),
                                  reduction="batchmean", log_target=True)  # fmt: skip
    return (1.0 - weight) * supervised + weight * taught
