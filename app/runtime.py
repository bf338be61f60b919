"""Service state and lifecycle: starting -> ready -> draining, and the worker pools."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal, TypeVar

import numpy as np

from . import preprocess
from .errors import ModelNotFound, Unavailable
from .inputs import Payload, decode_payload
from .metrics import Metrics
from .registry import Registry, ServedModel
from .settings import Settings

log = logging.getLogger(__name__)

T = TypeVar("T")
Status = Literal["starting", "ok", "draining"]


class Runtime:
    def __init__(self, settings: Settings, metrics: Metrics) -> None:
        self.settings = settings
        self.metrics = metrics
        self.status: Status = "starting"
        self.registry: Registry | None = None
        self.workers: ThreadPoolExecutor | None = None  # preprocessing (decode, JSON parsing)
        self._previous_sigterm: Any = None

    @property
    def ready(self) -> bool:
        return self.status == "ok"

    @property
    def device(self) -> str:
        return str(self.registry.device) if self.registry else self.settings.device

    @property
    def models(self) -> dict[str, ServedModel]:
        return self.registry.models if self.registry else {}

    def model(self, name: str) -> ServedModel:
        if self.registry is None:
            raise Unavailable("the service is starting: models are not loaded yet")
        try:
            return self.registry.models[name]
        except KeyError:
            known = ", ".join(self.registry.models) or "none"
            raise ModelNotFound(f"unknown model '{name}' (serving: {known})") from None

    def model_for_inference(self, name: str) -> ServedModel:
        if self.status == "starting":
            raise Unavailable("the service is starting: models are not loaded yet")
        if self.status == "draining":
            raise Unavailable("the service is shutting down")
        return self.model(name)

    async def run_cpu(self, fn: Callable[..., T], *args: Any) -> T:
        """Run CPU-bound work (image decoding) on the worker pool, never on the event loop."""
        assert self.workers is not None, "runtime not started"
        return await asyncio.get_running_loop().run_in_executor(self.workers, fn, *args)

    async def decode(self, payload: Payload, many: bool) -> list[np.ndarray]:
        """Decode a payload: small ones right here, the rest on the worker pool (see inputs.inline)."""
        if payload.inline:
            return decode_payload(payload, self.settings, many)
        return await self.run_cpu(decode_payload, payload, self.settings, many)

    # ------------------------------------------------------------------------------- lifecycle

    async def start(self) -> None:
        t0 = time.perf_counter()
        preprocess.configure(self.settings.max_image_pixels)
        self.workers = ThreadPoolExecutor(
            max_workers=max(2, os.cpu_count() or 1), thread_name_prefix="preproc"
        )
        self.registry = Registry(self.settings, self.metrics)
        await self.registry.load()
        self._hook_sigterm()
        self.status = "ok"
        log.info("ready in %.2f s", time.perf_counter() - t0)

    async def shutdown(self) -> None:
        """Readiness off, answer what is queued (bounded by SHUTDOWN_GRACE_S), then stop."""
        self.status = "draining"
        if self.registry is not None:
            drained = await self.registry.drain(self.settings.shutdown_grace_s)
            if not drained:
                log.warning(
                    "shutdown grace of %.1f s passed with work still queued", self.settings.shutdown_grace_s
                )
            await self.registry.stop()
        if self.workers is not None:
            self.workers.shutdown(wait=False, cancel_futures=True)
        self._unhook_sigterm()
        log.info("stopped")

    def _hook_sigterm(self) -> None:
        """Go 'draining' the moment SIGTERM arrives, then hand the signal to the server (uvicorn),
        which stops accepting, waits for in-flight requests and runs the lifespan shutdown."""
        if threading.current_thread() is not threading.main_thread():
            return
        previous = signal.getsignal(signal.SIGTERM)
        if not callable(previous):
            return  # nobody handles SIGTERM gracefully: leave the default in place

        def on_sigterm(signum: int, frame: Any) -> None:
            self.status = "draining"
            previous(signum, frame)

        self._previous_sigterm = previous
        signal.signal(signal.SIGTERM, on_sigterm)

    def _unhook_sigterm(self) -> None:
        if self._previous_sigterm is not None and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, self._previous_sigterm)
            self._previous_sigterm = None
