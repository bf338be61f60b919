"""One epoch of training and an evaluation pass over in-memory tensor splits."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from tqdm import tqdm

from .augment import AugmentConfig, augment
from .data import Split, normalize
from .distill import Teacher
from .distributed import DistInfo, all_reduce_sum


@dataclass
class EpochStats:
    loss: float
    accuracy: float
    images: int
    seconds: float

    @property
    def images_per_s(self) -> float:
        return self.images / max(self.seconds, 1e-9)


def autocast_for(device: torch.device, amp: bool):
    if amp and device.type == "cuda":
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return nullcontext()


def shard_order(n: int, seed: int, epoch: int, rank: int, world_size: int) -> torch.Tensor:
    """This rank's sample order for one epoch: every rank draws the same permutation (the seed is the
    run's, not the rank's) and takes its own strided shard, so the shards are disjoint."""
    order = torch.randperm(n, generator=torch.Generator().manual_seed(seed + epoch))
    return order[rank::world_size]


def train_one_epoch(
    model: nn.Module,
    split: Split,
    *,
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler,
    batch_size: int,
    mean: float,
    std: float,
    aug: AugmentConfig,
    gen: torch.Generator,
    shuffle_seed: int,
    label_smoothing: float,
    grad_clip: float,
    amp: bool,
    dist_info: DistInfo,
    epoch: int,
    max_steps: int | None = None,
    on_step: Callable[[], None] | None = None,
    progress: bool = True,
    teacher: Teacher | None = None,
) -> EpochStats:
    model.train()
    device = split.images.device
    start = time.perf_counter()
    order = shard_order(len(split), shuffle_seed, epoch, dist_info.rank, dist_info.world_size).to(device)
    steps = len(order) // batch_size  # drop the ragged last batch: equal steps on every rank
    if max_steps:
        steps = min(steps, max_steps)
    totals = torch.zeros(2, device=device)  # loss sum, correct (kept on device: no per-step sync)
    bar = tqdm(
        range(steps),
        desc=f"epoch {epoch + 1}",  # counted from 1, as the log counts
        leave=False,
        disable=not (progress and dist_info.is_main),
    )
    for step in bar:
        idx = order[step * batch_size : (step + 1) * batch_size]
        pixels = augment(split.images[idx].float() / 255, aug, gen)
        x = (pixels - mean) / std
        y = split.labels[idx]
        with autocast_for(device, amp):
            logits = model(x)
            if teacher is None:
                loss = F.cross_entropy(logits.float(), y, label_smoothing=label_smoothing)
            else:  # the teacher answers the same augmented batch
                loss = teacher.loss(logits, y, teacher.logits(pixels), label_smoothing)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if grad_clip:
            nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
        optimizer.step()
        scheduler.step()
        if on_step:
            on_step()
        totals += torch.stack([loss.detach() * len(y), (logits.argmax(1) == y).sum()])
        if step % 50 == 0 and progress and dist_info.is_main:
            bar.set_postfix(loss=f"{loss.item():.4f}", lr=f"{scheduler.get_last_lr()[0]:.2e}")
    count = torch.tensor([steps * batch_size], device=device, dtype=totals.dtype)
    totals = all_reduce_sum(torch.cat([totals, count]), dist_info)
    loss_sum, correct, count = totals.tolist()
    return EpochStats(
        loss_sum / max(count, 1), correct / max(count, 1), int(count), time.perf_counter() - start
    )


@torch.inference_mode()
def predict(
    model: nn.Module,
    split: Split,
    *,
    mean: float,
    std: float,
    batch_size: int = 1000,
    amp: bool = False,
) -> torch.Tensor:
    """Logits (N, classes) in float32 for a whole split."""
    model.eval()
    device = split.images.device
    out = []
    for i in range(0, len(split), batch_size):
        with autocast_for(device, amp):
            out.append(model(normalize(split.images[i : i + batch_size], mean, std)).float())
    return torch.cat(out)


def evaluate(
    model: nn.Module, split: Split, *, mean: float, std: float, amp: bool = False
) -> tuple[float, float, torch.Tensor]:
    """(mean cross-entropy, accuracy, logits) on a split."""
    logits = predict(model, split, mean=mean, std=std, amp=amp)
    loss = F.cross_entropy(logits, split.labels).item()
    acc = (logits.argmax(1) == split.labels).float().mean().item()
    return loss, acc, logits
