"""Front-end worker state: the engine connection, the model catalogue it sent, and the lifecycle
(starting -> ok -> draining). With ENGINE_SOCKET unset (plain ``uvicorn app.main:app``, tests),
the worker runs its own engine on a background thread and talks to it through the same hop."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import numpy as np

from model_store import ModelCard

from . import preprocess
from .errors import ModelNotFound, Unavailable
from .hop import EngineClient, event_loop_factory
from .inputs import Payload, decode_payload
from .limits import BodyBudget
from .metrics import Metrics
from .settings import Settings

log = logging.getLogger(__name__)

T = TypeVar("T")
Status = Literal["starting", "ok", "draining"]


@dataclass
class ServedModel:
    """A model as the front end sees it: its card and where to send its work."""

    index: int
    card: ModelCard
    device: str
    predict_width: int
    attention: dict[str, int] | None  # layers, heads, patches, classes (ViT only)
    digit_threshold: float | None
    fast_path: str

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
            "device": self.device, "supports_attention": self.supports_attention, "dataset": c.dataset,
            "training": c.training, "weights_sha256": c.weights_sha256, "created_at": c.created_at,
            "digit_threshold": self.digit_threshold, "fast_path": self.fast_path,
        }  # fmt: skip


class EmbeddedEngine:
    """An engine on a thread of this process (its own event loop), for single-process runs."""

    def __init__(self, settings: Settings, metrics: Metrics) -> None:
        from .engine.server import Engine  # torch is imported only where the engine runs

        self.dir = tempfile.mkdtemp(prefix="vit-digits-")
        self.engine = Engine(settings, os.path.join(self.dir, "engine.sock"), 1, metrics)
        self.loop = (event_loop_factory() or asyncio.new_event_loop)()  # as python -m app.engine
        self.listening = threading.Event()
        self.thread = threading.Thread(target=self._run, name="engine", daemon=True)

    @property
    def socket_path(self) -> str:
        return self.engine.socket_path

    def start(self) -> None:
        self.thread.start()
        self.listening.wait(30)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(self.listening.set)
        self.loop.run_until_complete(self.engine.start())
        self.loop.run_forever()

    async def engine_ready(self, client: EngineClient) -> None:
        """Wait until the engine has loaded (or refused) every model and the client is connected."""
        await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(self.engine.loaded.wait(), self.loop))
        await client.state_known.wait()

    async def stop(self, grace_s: float) -> None:
        async def drain_and_stop() -> None:
            await self.engine.drain(grace_s)
            await self.engine.stop()

        future = asyncio.run_coroutine_threadsafe(drain_and_stop(), self.loop)
        await asyncio.wrap_future(future)
        self.loop.call_soon_threadsafe(self.loop.stop)
        await asyncio.to_thread(self.thread.join, 5)
        try:
            os.rmdir(self.dir)
        except OSError:
            pass


class Runtime:
    def __init__(self, settings: Settings, metrics: Metrics) -> None:
        self.settings = settings
        self.metrics = metrics
        self.draining = False
        # request bytes held by this worker (HTTP bodies and gRPC messages): MAX_BODY_BYTES_IN_FLIGHT
        self.body_budget = BodyBudget(settings.max_body_bytes_in_flight, metrics.body_bytes)
        self.models: dict[str, ServedModel] = {}
        self.device = settings.device
        self.client: EngineClient | None = None
        self.embedded: EmbeddedEngine | None = None
        self.workers: ThreadPoolExecutor | None = None  # preprocessing (decode, JSON parsing)
        self._previous_sigterm: Any = None

    @property
    def status(self) -> Status:
        if self.draining:
            return "draining"
        return "ok" if self.client is not None and self.client.ready else "starting"

    @property
    def ready(self) -> bool:
        return self.status == "ok"

    @property
    def not_ready_reason(self) -> str:
        if self.draining:
            return "the service is shutting down"
        if self.client is None:
            return "the service is starting"
        return str(self.client.state.get("reason", "the engine is not ready"))

    @property
    def catalogue_known(self) -> bool:
        """The engine has said which models it serves (possibly none)."""
        return self.client is not None and self.client.welcome is not None

    def model(self, name: str) -> ServedModel:
        if not self.catalogue_known:
            raise Unavailable(f"models are not loaded yet: {self.not_ready_reason}")
        try:
            return self.models[name]
        except KeyError:
            known = ", ".join(self.models) or "none"
            raise ModelNotFound(f"unknown model '{name}' (serving: {known})") from None

    def model_for_inference(self, name: str) -> ServedModel:
        if not self.ready:
            if self.catalogue_known and not self.draining:
                self.model(name)  # an unknown model is a 404 also while the service is not ready
            raise Unavailable(self.not_ready_reason)
        return self.model(name)

    async def run_cpu(self, fn: Callable[..., T], *args: Any) -> T:
        """Run CPU-bound work (image decoding) on the worker pool, never on the event loop."""
        assert self.workers is not None, "runtime not started"
        return await asyncio.get_running_loop().run_in_executor(self.workers, fn, *args)

    async def decode(self, payload: Payload) -> list[np.ndarray]:
        """Decode a payload: small ones right here, the rest on the worker pool (see inputs.inline)."""
        if payload.inline:
            return decode_payload(payload, self.settings)
        return await self.run_cpu(decode_payload, payload, self.settings)

    # ------------------------------------------------------------------------------- lifecycle

    def _on_welcome(self) -> None:
        """The engine sent its catalogue (on every connection, so again after a restart)."""
        assert self.client is not None and self.client.welcome is not None
        welcome = self.client.welcome
        self.device = welcome["device"]
        self.models = {
            m["card"]["name"]: ServedModel(
                i, ModelCard.from_dict(m["card"], "engine", check_architecture=False), m["device"],
                m["predict_width"], m["attention"],
                m["digit_threshold"], m["fast_path"],
            )
            for i, m in enumerate(welcome["models"])
        }  # fmt: skip

    async def start(self) -> None:
        t0 = time.perf_counter()
        self.draining = False  # a lifespan may run again after a shutdown (ASGI test clients do)
        preprocess.configure(self.settings.max_image_pixels)
        self.workers = ThreadPoolExecutor(max_workers=2, thread_name_prefix="preproc")
        socket_path = self.settings.engine_socket
        if socket_path is None:
            self.embedded = EmbeddedEngine(self.settings, self.metrics)
            self.embedded.start()
            socket_path = self.embedded.socket_path
        self.client = EngineClient(socket_path, self._on_welcome)
        self.client.start()
        self._hook_sigterm()
        if self.embedded is not None:  # one process: start up only once the models are served
            await self.embedded.engine_ready(self.client)
            log.info("ready in %.2f s (%s)", time.perf_counter() - t0, self.not_ready_reason)

    async def shutdown(self) -> None:
        """Readiness off; an embedded engine answers what is queued (SHUTDOWN_GRACE_S), then stop."""
        self.draining = True
        if self.embedded is not None:
            await self.embedded.stop(self.settings.shutdown_grace_s)
        if self.client is not None:
            await self.client.close()
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
            self.draining = True
            previous(signum, frame)

        self._previous_sigterm = previous
        signal.signal(signal.SIGTERM, on_sigterm)

    def _unhook_sigterm(self) -> None:
        if self._previous_sigterm is not None and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, self._previous_sigterm)
            self._previous_sigterm = None
