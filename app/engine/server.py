"""The engine: owns the device, the models and one dynamic batcher per model and op.

It listens on a Unix socket. Each front-end worker connects, says HELLO, and gets WELCOME (the
model catalogue and the arena layout) with its own shared-memory arena; from then on it sends
SUBMIT/CANCEL and receives DONE and STATE (readiness) messages. See ``app.hop`` for the wire format.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import time
from typing import Any

import numpy as np
import torch

from model_store.serving import resolve_device

from ..cpus import available_cpus
from ..hop import (
    CANCEL,
    HEADER,
    SUBMIT,
    Arena,
    FrameReader,
    Kind,
    Layout,
    MessageProtocol,
    Op,
    SlotClass,
    Status,
    done_message,
    frame_json,
)
from ..metrics import Metrics
from ..settings import Settings
from .batcher import DeviceRunner, DynamicBatcher, Job
from .models import FED_SIZE, EngineModel, load_models

log = logging.getLogger(__name__)


class WorkerLink:
    """The engine's end of one worker connection (the batchers' ``Requester``)."""

    def __init__(self, engine: Engine, arena: Arena, pid: int) -> None:
        self.engine = engine
        self.arena = arena
        self.pid = pid
        self.closed = False
        self.jobs: dict[int, Job] = {}
        self.protocol = MessageProtocol(self.on_message, self.on_lost)

    # Requester
    def inputs(self, slot: int, n: int) -> np.ndarray:
        return self.arena.inputs[slot][:n]

    def write(self, slot: int, outputs: np.ndarray) -> None:
        self.arena.outputs[slot][: len(outputs), : outputs.shape[1]] = outputs

    def done(
        self, req_id: int, status: Status, batch: int = 0, queue_s: float = 0.0, compute_s: float = 0.0
    ) -> None:
        self.jobs.pop(req_id, None)
        self.protocol.send(done_message(req_id, status, batch, queue_s, compute_s))
        if self.closed and not self.jobs:
            self.arena.close()

    # messages
    def on_message(self, kind: int, payload: bytes) -> None:
        if kind == Kind.SUBMIT:
            req_id, model, op, slot, n, deadline = SUBMIT.unpack(payload)
            job = Job(self, req_id, slot, n, deadline, time.monotonic())
            self.jobs[req_id] = job
            batcher = self.engine.batcher(model, op)
            if batcher is None or not 0 < n <= len(self.arena.inputs[slot]):
                job.finish(Status.UNKNOWN)
            else:
                batcher.submit(job)
        elif kind == Kind.CANCEL:
            (req_id,) = CANCEL.unpack(payload)
            job = self.jobs.get(req_id)
            if job is not None:
                job.cancelled = True  # dropped before compute; its DONE still frees the slot

    def on_lost(self) -> None:
        self.closed = True
        for job in list(self.jobs.values()):
            job.cancelled = True
        if not self.jobs:
            self.arena.close()
        self.engine.links.discard(self)
        log.info("worker %d disconnected", self.pid)


class Engine:
    def __init__(
        self, settings: Settings, socket_path: str, expected_workers: int, metrics: Metrics | None = None
    ) -> None:
        self.settings = settings
        self.socket_path = socket_path
        self.expected_workers = expected_workers
        self.metrics = metrics or Metrics()
        self.metrics.process_starts.labels("engine").inc()
        self.device = resolve_device(settings.device)
        self.models: list[EngineModel] = []
        self.refused: list[str] = []
        self.batchers: dict[tuple[int, int], DynamicBatcher] = {}
        self.links: set[WorkerLink] = set()
        # Workers seen so far, until every expected one has connected once (then None: a worker that
        # dies later is replaced while the others serve, and readiness does not wait for it).
        self.starting_pids: set[int] | None = set()
        self.draining = False
        self.loaded = asyncio.Event()
        self.state: dict[str, Any] = {"ready": False, "reason": "the engine is loading models"}
        self.layout: Layout | None = None
        # Forward passes run on the device's threads, so that this loop keeps reading SUBMITs and
        # writing answers while the device computes. A GPU gets one (its CUDA graphs share buffers).
        # On the CPU, up to CPU_LANES threads compute batches side by side, each with TORCH_THREADS
        # intra-op threads: a batch of this size barely speeds up with more intra-op threads, while
        # one forward pass at a time left a core idle when the model was the bottleneck (2 cores, the
        # ViT at 64 clients: 1.2-1.5x the req/s with 2 lanes). A model takes a further lane only for
        # a full batch (DynamicBatcher), so where the front end is the bottleneck it keeps its CPU.
        # On the CPU a lone image (CPU_COMPUTE_ON_LOOP) runs on this loop when no lane computes: the
        # hand-off (two wake-ups, 0.2-0.3 ms on 2 cores) is 10-20% of its forward pass, and a lone
        # image means little else is waiting. With several intra-op threads every calling thread
        # would get its own OpenMP pool, so then it keeps the lanes.
        cpus = available_cpus()
        self.cpu_threads = settings.torch_threads or max(1, cpus // 2)
        on_cpu = self.device.type == "cpu"
        self.lanes = settings.lane_count(cpus, self.cpu_threads) if on_cpu else 1
        on_loop = on_cpu and settings.cpu_compute_on_loop and self.cpu_threads == 1
        self.runner = DeviceRunner(self.lanes, 1 if on_loop else 0, str(self.device), self.metrics)
        self._server: asyncio.Task | None = None
        self._listener: socket.socket | None = None

    # ------------------------------------------------------------------------------- lifecycle

    async def start(self) -> None:
        """Listen at once (workers connect while models load), then load and warm up."""
        if os.path.exists(self.socket_path):
            os.unlink(self.socket_path)
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(self.socket_path)
        self._listener.listen(256)
        self._listener.setblocking(False)
        self._server = asyncio.get_running_loop().create_task(self._accept_loop(), name="engine-accept")
        t0 = time.perf_counter()
        await asyncio.wrap_future(self.runner.submit(self._load))
        for batcher in self.batchers.values():
            batcher.start()
        self.loaded.set()
        names = ", ".join(m.card.name for m in self.models) or "no models"
        lanes = f", {self.lanes} lane(s) x {self.cpu_threads} thread(s)" if self.device.type == "cpu" else ""
        log.info("engine: %s on %s%s, loaded in %.2f s", names, self.device, lanes, time.perf_counter() - t0)
        self._update_state()

    def _load(self) -> None:
        s = self.settings
        if self.device.type == "cpu":
            torch.set_num_threads(self.cpu_threads)
        self.models, self.refused = load_models(s, self.device)
        for i, m in enumerate(self.models):
            self.batchers[(i, Op.PREDICT)] = self._batcher(m.card.name, m.predict)
            if m.attention_layout is not None:
                self.batchers[(i, Op.ATTENTION)] = self._batcher(f"{m.card.name}:attention", m.attention)
        attention = max((m.attention_layout.width for m in self.models if m.attention_layout), default=0)
        predict = max((m.predict_width for m in self.models), default=11)
        self.layout = Layout(FED_SIZE, (
            SlotClass(s.slots_per_worker, 1, max(predict, attention)),
            SlotClass(s.large_slots_per_worker, max(s.max_batch_images, s.max_digits), predict),
        ))  # fmt: skip

    def _batcher(self, name: str, fn: Any) -> DynamicBatcher:
        s = self.settings
        return DynamicBatcher(
            name, fn, runner=self.runner, max_batch_size=s.max_batch_size,
            max_wait_s=s.max_wait_ms / 1000.0, max_queue_size=s.max_queue_size,
            adaptive_wait=s.adaptive_wait, metrics=self.metrics,
        )  # fmt: skip

    def batcher(self, model: int, op: int) -> DynamicBatcher | None:
        return self.batchers.get((model, op))

    async def drain(self, timeout_s: float) -> bool:
        self.draining = True  # readiness stays off: a worker connecting now must not turn it back on
        self._update_state()
        results = await asyncio.gather(*(b.drain(timeout_s) for b in self.batchers.values()))
        return all(results)

    async def stop(self) -> None:
        await asyncio.gather(*(b.stop() for b in self.batchers.values()))
        if self._server is not None:
            self._server.cancel()
        for link in list(self.links):
            link.protocol.close()
        if self._listener is not None:
            self._listener.close()
        if os.path.exists(self.socket_path):
            os.unlink(self.socket_path)
        self.runner.shutdown()

    # ------------------------------------------------------------------------------- readiness

    def catalogue(self) -> list[dict[str, Any]]:
        return [m.info() for m in self.models]

    def _update_state(self) -> bool:
        """Recompute readiness; broadcast it to every worker when it changed (then True)."""
        if self.draining:
            state = {"ready": False, "reason": "the engine is shutting down"}
        elif not self.loaded.is_set():
            return False
        elif not self.models:
            state = {"ready": False, "reason": "no servable models: " + "; ".join(self.refused)}
        elif self.starting_pids is not None:
            state = {
                "ready": False,
                "reason": f"{len(self.starting_pids)} of {self.expected_workers} workers are up",
            }
        else:
            state = {"ready": True, "reason": "ok"}
        if state == self.state:
            return False
        self.state = state
        self._broadcast()
        return True

    def _broadcast(self) -> None:
        message = frame_json(Kind.STATE, self.state)
        for link in self.links:
            link.protocol.send(message)

    # ------------------------------------------------------------------------------- connections

    async def _accept_loop(self) -> None:
        loop = asyncio.get_running_loop()
        assert self._listener is not None
        while True:
            sock, _ = await loop.sock_accept(self._listener)
            loop.create_task(self._handshake(sock))

    async def _handshake(self, sock: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        try:
            reader, messages = FrameReader(), []
            while not messages:
                data = await loop.sock_recv(sock, 4096)
                if not data:
                    raise ConnectionError("closed before HELLO")
                messages = reader.feed(data)
            kind, payload = messages[0]
            if kind != Kind.HELLO:
                raise ConnectionError(f"expected HELLO, got kind {kind}")
            pid = int(json.loads(payload)["pid"])
            await self.loaded.wait()
            assert self.layout is not None
            arena, fd = Arena.create(self.layout)
            welcome = frame_json(Kind.WELCOME, {
                "engine_pid": os.getpid(), "device": str(self.device), "models": self.catalogue(),
                "layout": self.layout.to_dict(), "refused": self.refused,
            })  # fmt: skip
            try:
                socket.send_fds(sock, [welcome[: HEADER.size]], [fd])
                await loop.sock_sendall(sock, welcome[HEADER.size :])
            finally:
                os.close(fd)
        except (OSError, ConnectionError, ValueError, KeyError) as exc:
            log.warning("worker handshake failed: %s", exc)
            sock.close()
            return
        link = WorkerLink(self, arena, pid)
        await loop.connect_accepted_socket(lambda: link.protocol, sock)
        self.links.add(link)
        if self.starting_pids is not None:
            self.starting_pids.add(pid)
            if len(self.starting_pids) >= self.expected_workers:
                self.starting_pids = None
        if not self._update_state():  # a change is broadcast to this worker too; else tell it alone
            link.protocol.send(frame_json(Kind.STATE, self.state))
        log.info("worker %d connected", pid)
