"""The served models: loaded from the model store onto the device, warmed up, one batcher each."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from model_store import CheckpointError, ModelCard, ModelStore, attention_rollout, cls_attention

from .batcher import DynamicBatcher, RunBatch
from .metrics import Metrics
from .settings import Settings

log = logging.getLogger(__name__)

AMP_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


def resolve_device(setting: str) -> torch.device:
    """``auto`` -> cuda when available, else cpu; an explicit cuda without CUDA is an error."""
    if setting == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(setting)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(f"DEVICE={setting} but CUDA is not available on this machine")
    return device


@dataclass
class ServedModel:
    card: ModelCard
    model: nn.Module
    device: torch.device
    predict: DynamicBatcher
    attention: DynamicBatcher | None  # ViT only

    @property
    def name(self) -> str:
        return self.card.name

    @property
    def supports_attention(self) -> bool:
        return self.attention is not None

    def info(self) -> dict[str, Any]:
        c = self.card
        return {
            "name": c.name, "arch": c.arch, "preset": c.preset, "num_params": c.num_params,
            "labels": c.labels, "metrics": c.metrics, "architecture": c.architecture,
            "preprocessing": {"image_size": c.preprocessing.image_size, "mean": c.preprocessing.mean,
                              "std": c.preprocessing.std},
            "device": str(self.device), "supports_attention": self.supports_attention, "dataset": c.dataset,
            "training": c.training, "weights_sha256": c.weights_sha256, "created_at": c.created_at,
        }  # fmt: skip


def trace_for_inference(model: nn.Module, card: ModelCard, device: torch.device) -> nn.Module:
    """TorchScript trace + freeze of ``forward``: a third less per-call overhead at batch size 1.
    Checked against eager on a batch of another size; any problem falls back to the eager model."""
    size = card.preprocessing.image_size
    try:
        with torch.inference_mode(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # TracerWarnings about the shape asserts
            example = torch.randn(2, 1, size, size, device=device)
            traced = torch.jit.optimize_for_inference(
                torch.jit.freeze(torch.jit.trace(model, example).eval())
            )
            check = torch.randn(5, 1, size, size, device=device)
            # On GPU, folding batch norm into convs lets cuDNN pick other (TF32) kernels: ~1e-3 apart.
            tol = 1e-4 if device.type == "cpu" else 5e-3
            diff = float((traced(check) - model(check)).abs().max())
            if diff > tol:
                raise ValueError(f"traced outputs differ from eager by {diff:.2e} > {tol:.0e}")
    except Exception as exc:  # tracing is an optimisation, never a reason not to serve
        log.warning("serving %s eagerly: tracing failed (%s)", card.name, exc)
        return model
    return traced


class _Runner:
    """Batch functions for one model; they run on the device thread only."""

    def __init__(self, model: nn.Module, card: ModelCard, device: torch.device, amp: str, fast: nn.Module):
        self.card = card
        self.model = model  # eager: attention maps
        self.fast = fast  # predictions: the traced model, or the eager one
        self.device = device
        self.mean = card.preprocessing.mean
        self.std = card.preprocessing.std
        self.labels = card.labels
        self.amp_dtype = AMP_DTYPES.get(amp) if device.type == "cuda" else None

    def _inputs(self, xs: np.ndarray) -> torch.Tensor:
        x = torch.from_numpy(xs).to(self.device, non_blocking=True).unsqueeze(1)  # (B, 1, 28, 28)
        return (x - self.mean) / self.std

    def _autocast(self) -> contextlib.AbstractContextManager:
        if self.amp_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(self.device.type, dtype=self.amp_dtype)

    def _predictions(self, logits: torch.Tensor) -> list[dict[str, Any]]:
        probs = torch.softmax(logits.float(), dim=-1).cpu().numpy()
        digits = probs.argmax(axis=1)
        return [
            {"digit": int(d), "label": self.labels[d], "confidence": float(p[d]), "probabilities": p.tolist()}
            for p, d in zip(probs, digits, strict=True)
        ]

    def predict(self, xs: np.ndarray) -> list[dict[str, Any]]:
        with torch.inference_mode(), self._autocast():
            logits = self.fast(self._inputs(xs))
        return self._predictions(logits)

    def attention(self, xs: np.ndarray) -> list[dict[str, Any]]:
        with torch.inference_mode(), self._autocast():
            logits, attn = self.model.forward_with_attention(self._inputs(xs))  # attn (B, L, H, T, T)
        attn = attn.float()
        cls_rows = cls_attention(attn)  # (B, L, H, N): CLS row over the patches
        cls_self = attn[..., 0, 0]  # (B, L, H): the CLS->CLS entry that completes each row
        head_mean = cls_rows.mean(dim=2)  # (B, L, N)
        rollout = attention_rollout(attn)  # (B, N)
        out = self._predictions(logits)
        arrays = (
            cls_rows.cpu().numpy(),
            cls_self.cpu().numpy(),
            head_mean.cpu().numpy(),
            rollout.cpu().numpy(),
        )
        for pred, rows, self_, mean, roll in zip(out, *arrays, strict=True):
            pred["attention"] = rows.tolist()
            pred["cls_attention"] = self_.tolist()
            pred["attention_mean"] = mean.tolist()
            pred["rollout"] = roll.tolist()
        return out


class Registry:
    """Loads every model of the store onto one device and owns their batchers."""

    def __init__(self, settings: Settings, metrics: Metrics | None = None):
        self.settings = settings
        self.metrics = metrics
        self.device = resolve_device(settings.device)
        self.models: dict[str, ServedModel] = {}
        # One inference thread per device: torch is never entered concurrently.
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"infer-{self.device}")

    async def load(self) -> None:
        """Load, warm up and start batchers; the blocking work runs on the device thread."""
        t0 = time.perf_counter()
        loop = asyncio.get_running_loop()
        loaded = await loop.run_in_executor(self.executor, self._load_all)
        for runner in loaded:
            self.models[runner.card.name] = self._serve(runner)
        for batcher in self.batchers():
            batcher.start()
        log.info(
            "serving %s on %s (ready in %.2f s)", ", ".join(self.models) or "no models", self.device,
            time.perf_counter() - t0,
        )  # fmt: skip

    def _load_all(self) -> list[_Runner]:
        s = self.settings
        if self.device.type == "cpu":
            # Half the cores: the event loop and the preprocessing threads need the rest, and an
            # oversubscribed OpenMP pool is many times slower than a single thread.
            torch.set_num_threads(s.torch_threads or max(1, (os.cpu_count() or 1) // 2))
        store = ModelStore(s.model_store_dir)
        if not store.model_dirs():
            log.warning("model store %s holds no models", store.root)
        loaded = []
        for path in store.model_dirs():
            try:
                model, card = store.load(path.name, self.device)
            except CheckpointError as exc:
                log.error("not serving %s: %s", path.name, exc)
                continue
            if card.name != path.name:
                log.warning("card name %r differs from its directory %r; serving as %r", card.name, path.name,
                            card.name)  # fmt: skip
            use_jit = s.jit and not (self.device.type == "cuda" and s.amp != "off")
            fast = trace_for_inference(model, card, self.device) if use_jit else model
            runner = _Runner(model, card, self.device, s.amp, fast)
            if s.warmup:
                self._warm_up(runner)
            loaded.append(runner)
        return loaded

    def _warm_up(self, runner: _Runner) -> None:
        """Smallest and largest batch, twice each (TorchScript's profiling executor optimises on the
        second call): every size in between cost seconds of cold start on a GPU for no gain."""
        t0 = time.perf_counter()
        card = runner.card
        size = card.preprocessing.image_size
        for n in sorted({1, min(self.settings.max_batch_size, 64)}):
            xs = np.zeros((n, size, size), dtype=np.float32)
            for _ in range(2):
                runner.predict(xs)
        if card.arch == "vit":
            runner.attention(np.zeros((1, size, size), dtype=np.float32))
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        log.info("warmed up %s in %.2f s", card.name, time.perf_counter() - t0)

    def _serve(self, runner: _Runner) -> ServedModel:
        card = runner.card

        def batcher(name: str, fn: RunBatch) -> DynamicBatcher:
            s = self.settings
            return DynamicBatcher(
                name, fn, executor=self.executor, max_batch_size=s.max_batch_size,
                max_wait_s=s.max_wait_ms / 1000.0, max_queue_size=s.max_queue_size,
                adaptive_wait=s.adaptive_wait, metrics=self.metrics,
            )  # fmt: skip

        attention = batcher(f"{card.name}:attention", runner.attention) if card.arch == "vit" else None
        return ServedModel(card, runner.model, self.device, batcher(card.name, runner.predict), attention)

    def batchers(self) -> list[DynamicBatcher]:
        return [b for m in self.models.values() for b in (m.predict, m.attention) if b is not None]

    async def drain(self, timeout_s: float) -> bool:
        results = await asyncio.gather(*(b.drain(timeout_s) for b in self.batchers()))
        return all(results)

    async def stop(self) -> None:
        await asyncio.gather(*(b.stop() for b in self.batchers()))
        self.executor.shutdown(wait=False, cancel_futures=True)
