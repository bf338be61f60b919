"""The engine's models: loaded from the store, checked against what the front end feeds, wrapped in
the store's ``ServingHead`` (normalisation, calibration, digit score), made fast and warmed up.

Every batch function maps a list of (n_i, 28, 28) float32 views to one (sum n_i, width) float32
array: the engine writes those rows straight into the workers' shared-memory slots.
"""

from __future__ import annotations

import contextlib
import logging
import time
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from model_store import CheckpointError, ModelCard, ModelStore, attention_rollout, cls_attention
from model_store.serving import ServingHead

from ..settings import Settings
from .cudagraphs import GraphRunner

log = logging.getLogger(__name__)

AMP_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}
# What the front end produces for every request: MNIST-style 28x28, one channel, white on black.
FED_SIZE = 28


def unservable_reason(card: ModelCard) -> str | None:
    """Why the front end cannot feed this checkpoint, or None when it can."""
    a, p = card.architecture, card.preprocessing
    if p.image_size != FED_SIZE or a.get("image_size", FED_SIZE) != FED_SIZE:
        return f"it expects {p.image_size}x{p.image_size} images; the service feeds {FED_SIZE}x{FED_SIZE}"
    if a.get("in_channels", 1) != 1:
        return f"it expects {a.get('in_channels')} channels; the service feeds 1 (grayscale)"
    if p.polarity != "white-on-black":
        return f"it expects {p.polarity!r} images; the service feeds white-on-black"
    if len(card.labels) != 10 or a.get("num_classes", 10) != 10:
        return f"it has {len(card.labels)} classes; the service reads digits (10 classes)"
    return None


@dataclass
class AttentionLayout:
    """How one attention output row is cut: [answer | per-head CLS rows | CLS self | head mean | rollout]."""

    classes: int
    layers: int
    heads: int
    patches: int

    @property
    def width(self) -> int:
        layers, heads, n = self.layers, self.heads, self.patches
        return self.classes + 1 + layers * heads * n + layers * heads + layers * n + n

    def to_dict(self) -> dict[str, int]:
        return {"classes": self.classes, "layers": self.layers, "heads": self.heads, "patches": self.patches,
                "width": self.width}  # fmt: skip


class EngineModel:
    """One served model on one device; its batch functions run one at a time (batcher.DeviceRunner)."""

    def __init__(self, card: ModelCard, head: ServingHead, device: torch.device, settings: Settings) -> None:
        self.card = card
        self.head = head
        self.device = device
        self.classes = len(card.labels)
        self.amp_dtype = AMP_DTYPES.get(settings.amp) if device.type == "cuda" else None
        self.attention_layout: AttentionLayout | None = None
        if card.arch == "vit":
            a = card.architecture
            grid = int(a["image_size"]) // int(a["patch_size"])
            self.attention_layout = AttentionLayout(
                self.classes, int(a["depth"]), int(a["heads"]), grid * grid
            )
        self.graphs: GraphRunner | None = None
        self.fast: nn.Module = head
        if device.type == "cuda" and settings.cuda_graphs:
            self.graphs = GraphRunner.build(self._eager_predict, device, settings.max_batch_size, FED_SIZE)
        elif settings.jit and self.amp_dtype is None:
            self.fast = trace_for_inference(head, card.name, device)

    @property
    def fast_path(self) -> str:
        if self.graphs is not None:
            return "cuda-graphs"
        return "torchscript" if self.fast is not self.head else "eager"

    @property
    def predict_width(self) -> int:
        return self.classes + 1

    def info(self) -> dict[str, Any]:
        return {
            "card": self.card.to_dict(), "device": str(self.device),
            "predict_width": self.predict_width,
            "attention": self.attention_layout.to_dict() if self.attention_layout else None,
            "digit_threshold": self.head.digit_threshold,
            "fast_path": self.fast_path,
        }  # fmt: skip

    def _autocast(self) -> contextlib.AbstractContextManager:
        if self.amp_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(self.device.type, dtype=self.amp_dtype)

    def _eager_predict(self, x: torch.Tensor) -> torch.Tensor:
        with self._autocast():
            return self.head(x).float()

    def _stack(self, views: list[np.ndarray]) -> torch.Tensor:
        x = torch.from_numpy(views[0] if len(views) == 1 else np.concatenate(views))
        return x.to(self.device, non_blocking=True).unsqueeze(1)  # (B, 1, 28, 28)

    @torch.inference_mode()
    def predict(self, views: list[np.ndarray]) -> np.ndarray:
        if self.graphs is not None:
            return self.graphs.run(views)
        with self._autocast():
            return self.fast(self._stack(views)).float().cpu().numpy()

    @torch.inference_mode()
    def attention(self, views: list[np.ndarray]) -> np.ndarray:
        with self._autocast():
            answer, attn = self.head.forward_with_attention(self._stack(views))  # attn (B, L, H, T, T)
        attn = attn.float()
        b = attn.shape[0]
        rows = cls_attention(attn)  # (B, L, H, N)
        parts = [
            answer.float(),
            rows.reshape(b, -1),  # (B, L*H*N): each head's CLS row over the patches
            attn[..., 0, 0].reshape(b, -1),  # (B, L*H): the CLS->CLS entry that completes each row
            rows.mean(dim=2).reshape(b, -1),  # (B, L*N): head mean
            attention_rollout(attn),  # (B, N)
        ]
        return torch.cat(parts, dim=1).cpu().numpy()

    def warm_up(self, max_batch_size: int) -> None:
        """Smallest and largest batch, twice each (TorchScript optimises on the second call)."""
        for n in sorted({1, min(max_batch_size, 64)}):
            views = [np.zeros((n, FED_SIZE, FED_SIZE), dtype=np.float32)]
            for _ in range(2):
                self.predict(views)
        if self.attention_layout is not None:
            self.attention([np.zeros((1, FED_SIZE, FED_SIZE), dtype=np.float32)])
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)


def trace_for_inference(head: nn.Module, name: str, device: torch.device) -> nn.Module:
    """TorchScript trace + freeze: a third less per-call overhead at batch size 1. Checked against
    eager on a batch of another size; any problem falls back to the eager module."""
    try:
        with torch.inference_mode(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # TracerWarnings about the shape asserts
            example = torch.rand(2, 1, FED_SIZE, FED_SIZE, device=device)
            traced = torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.trace(head, example).eval()))
            check = torch.rand(5, 1, FED_SIZE, FED_SIZE, device=device)
            diff = float((traced(check) - head(check)).abs().max())
            if diff > (1e-4 if device.type == "cpu" else 5e-3):  # GPU: frozen BN, TF32 kernels ~1e-3 apart
                raise ValueError(f"traced outputs differ from eager by {diff:.2e}")
    except Exception as exc:  # tracing is an optimisation, never a reason not to serve
        log.warning("serving %s eagerly: tracing failed (%s)", name, exc)
        return head
    return traced


def load_models(settings: Settings, device: torch.device) -> tuple[list[EngineModel], list[str]]:
    """Every servable model of the store, warmed up; and a line for each one refused."""
    store = ModelStore(settings.model_store_dir)
    models, refused = [], []
    if not store.model_dirs():
        refused.append(f"model store {store.root} holds no models")
    for path in store.model_dirs():
        t0 = time.perf_counter()
        try:
            model, card = store.load(path.name, device)
        except CheckpointError as exc:
            refused.append(f"not serving {path.name}: {exc}")
            continue
        reason = unservable_reason(card)
        if reason:
            refused.append(f"not serving {card.name}: {reason}")
            continue
        if card.name != path.name:
            log.warning("card name %r differs from its directory %r; serving as %r", card.name, path.name,
                        card.name)  # fmt: skip
        head = ServingHead(model, card, path).to(device).eval()
        served = EngineModel(card, head, device, settings)
        if settings.warmup:
            served.warm_up(settings.max_batch_size)
        log.info("loaded %s on %s (%s) in %.2f s", card.name, device, served.info()["fast_path"],
                 time.perf_counter() - t0)  # fmt: skip
        models.append(served)
    for line in refused:
        log.error(line)
    return models, refused
