"""Dynamic batching in the engine: one bounded queue and one background task per model and op.

Jobs come from every front-end worker, so batches span workers. When one of the device's lanes is
free, the task takes queued jobs up to ``max_batch_size`` images (a job larger than that runs alone,
in chunks); the forward pass runs on that lane's thread, or for a lone image on the CPU on the event
loop's own thread (``DeviceRunner``). While a batch of the model computes, a further lane is taken
only for a full batch; meanwhile work queues up and goes in at once when the model's turn comes:
waiting then only leaves the device idle. An idle model waits ``max_wait_s`` after the first job only
when ``adaptive_wait`` is off. Jobs whose deadline passed or whose worker cancelled them (client
gone) are dropped before they cost compute; a full queue refuses at once.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import suppress
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ..hop import Status
from ..metrics import Metrics

log = logging.getLogger(__name__)

# A list of (n_i, H, W) float32 views -> (sum n_i, W) float32 outputs. Runs on a lane's thread.
RunBatch = Callable[[list[np.ndarray]], np.ndarray]


class Requester(Protocol):
    """Where a job came from: the engine's end of one worker connection."""

    closed: bool

    def inputs(self, slot: int, n: int) -> np.ndarray: ...
    def write(self, slot: int, outputs: np.ndarray) -> None: ...
    def done(self, req_id: int, status: Status, batch: int = 0, queue_s: float = 0.0,
             compute_s: float = 0.0) -> None: ...  # fmt: skip


@dataclass(slots=True, eq=False)
class Job:
    origin: Requester
    req_id: int
    slot: int
    n: int
    deadline: float
    enqueued: float
    cancelled: bool = False
    finished: bool = False

    def finish(self, status: Status, batch: int = 0, queue_s: float = 0.0, compute_s: float = 0.0) -> None:
        """Answer the worker; exactly once per job (the worker's slot is free again after it)."""
        if not self.finished:
            self.finished = True
            self.origin.done(self.req_id, status, batch, queue_s, compute_s)


@dataclass(slots=True)
class BatcherStats:
    expired: int = 0  # dropped before compute: deadline passed
    cancelled: int = 0  # dropped before compute: client gone


class DeviceRunner:
    """Runs the forward passes of every batcher of one device, at most ``lanes`` at once. Each lane is
    a thread of its own, and the lowest free lane is taken, so that light work keeps landing on one
    thread (one core's caches stay warm) and a further lane only computes while the others are busy.
    A lone image (``on_loop_max_images``) runs right on the event loop's thread when no lane is
    computing. A GPU has one lane. On the CPU each lane calls torch with ``torch.get_num_threads()``
    intra-op threads; see ``Engine`` for why there are several. A batcher takes a lane before it forms
    a batch, so work keeps queueing (and batching) while every lane is busy."""

    def __init__(
        self,
        lanes: int = 1,
        on_loop_max_images: int = 0,
        name: str = "device",
        metrics: Metrics | None = None,
    ) -> None:
        self.threads = [ThreadPoolExecutor(1, thread_name_prefix=f"{name}-lane{i}") for i in range(lanes)]
        self.on_loop_max_images = on_loop_max_images
        self._free = asyncio.Semaphore(lanes)
        self._busy = [False] * lanes
        self._busy_gauge = None
        if metrics is not None:
            metrics.lanes.labels(name).set(lanes)
            self._busy_gauge = metrics.lanes_busy.labels(name)
            self._busy_gauge.set(0)
        self._on_thread = 0  # forward passes handed to a thread and not yet back (loop thread only)

    @property
    def lanes(self) -> int:
        return len(self.threads)

    @property
    def lanes_busy(self) -> int:
        return sum(self._busy)

    async def take_lane(self) -> int:
        """Wait until a lane is free and hold it (the lowest free one); ``give_lane`` hands it back."""
        await self._free.acquire()
        lane = self._busy.index(False)
        self._busy[lane] = True
        self._count_busy()
        return lane

    def give_lane(self, lane: int) -> None:
        self._busy[lane] = False
        self._free.release()
        self._count_busy()

    def _count_busy(self) -> None:
        if self._busy_gauge is not None:
            self._busy_gauge.set(self.lanes_busy)

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future:
        """Work outside the batchers (loading, warming up) on the first lane's thread."""
        return self.threads[0].submit(fn, *args)

    async def run(self, fn: RunBatch, views: list[np.ndarray], lane: int = 0) -> np.ndarray:
        """The forward pass, on the lane the caller holds."""
        thread = self.threads[lane]
        if not self.on_loop_max_images:  # nothing ever runs on the loop: no count to keep
            return await asyncio.wrap_future(thread.submit(fn, views))
        if self._on_thread == 0 and sum(len(v) for v in views) <= self.on_loop_max_images:
            return fn(views)
        loop = asyncio.get_running_loop()
        future = thread.submit(fn, views)
        self._on_thread += 1
        # Counted back when the thread is really done, not when the awaiting task is: a task cancelled
        # mid-forward leaves the thread computing, and nothing may run on the loop meanwhile.
        future.add_done_callback(lambda _: self._call_soon(loop, self._thread_done))
        return await asyncio.wrap_future(future)

    def shutdown(self, wait: bool = False) -> None:
        for thread in self.threads:
            thread.shutdown(wait=wait, cancel_futures=True)

    def _thread_done(self) -> None:
        self._on_thread -= 1

    @staticmethod
    def _call_soon(loop: asyncio.AbstractEventLoop, fn: Callable[[], None]) -> None:
        with suppress(RuntimeError):  # the loop is closed: nothing is left to run on it
            loop.call_soon_threadsafe(fn)


class DynamicBatcher:
    def __init__(
        self,
        name: str,
        run_batch: RunBatch,
        *,
        runner: DeviceRunner,
        max_batch_size: int = 32,
        max_wait_s: float = 0.002,
        max_queue_size: int = 256,
        adaptive_wait: bool = True,
        metrics: Metrics | None = None,
    ) -> None:
        self.name = name
        self.run_batch = run_batch
        self.runner = runner
        self.max_batch_size = max_batch_size
        self.max_wait_s = max_wait_s
        self.max_queue_size = max_queue_size
        self.adaptive_wait = adaptive_wait
        self.stats = BatcherStats()
        self._queue: deque[Job] = deque()
        self._queued_images = 0
        self._running: dict[asyncio.Task, list[Job]] = {}  # the batches on the device's lanes now
        self._wake = asyncio.Event()
        self._accepting = True
        self._task: asyncio.Task | None = None
        self._m = None
        self._metrics = metrics
        if metrics is not None:
            self._m = (
                metrics.queue_seconds.labels(name),
                metrics.compute_seconds.labels(name),
                metrics.batch_size.labels(name),
                metrics.pending.labels(name),
                metrics.inference_count.labels(name),
                metrics.execution_count.labels(name),
                metrics.request_compute_seconds.labels(name),
                metrics.last_inference.labels(name),
            )

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._loop(), name=f"batcher-{self.name}")

    @property
    def pending(self) -> int:
        """Images queued, or computing and not yet answered."""
        computing = (j.n for batch in self._running.values() for j in batch if not j.finished)
        return self._queued_images + sum(computing)

    def submit(self, job: Job) -> None:
        """Queue a job, or answer it at once (shutting down, queue full)."""
        if not self._accepting:
            job.finish(Status.SHUTTING_DOWN)
            return
        if self._queued_images + job.n > self.max_queue_size:
            job.finish(Status.OVERLOADED)
            return
        self._queue.append(job)
        self._queued_images += job.n
        self._set_pending()
        self._wake.set()

    async def drain(self, timeout_s: float) -> bool:
        """Refuse new work, then wait (bounded) until everything queued has been answered."""
        self._accepting = False
        until = time.monotonic() + timeout_s
        while self.pending and time.monotonic() < until:
            await asyncio.sleep(0.005)
        return not self.pending

    async def stop(self) -> None:
        self._accepting = False
        if self._task is not None:
            self._task.cancel()
            with suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        for task in self._running:
            task.cancel()
        await asyncio.gather(*self._running, return_exceptions=True)
        self._fail_all(Status.SHUTTING_DOWN)

    # ------------------------------------------------------------------------------- the task

    async def _loop(self) -> None:
        loop = asyncio.get_running_loop()
        busy = False
        while True:
            try:
                if not self._queue:
                    busy = False
                    self._wake.clear()
                    await self._wake.wait()
                    continue
                if self._running and self._queued_images < self.max_batch_size:
                    # A batch of this model is computing: a further lane pays only when the device
                    # falls behind, a full batch waiting. Until then the work batches up for the next
                    # turn and the CPU stays with the front end (2 cores, CNN at 16 clients: a lane
                    # per arrival gave 0.7x the req/s; this rule, 1.0-1.1x, and still the ViT's gain).
                    self._wake.clear()
                    await self._wake.wait()
                    continue
                if not busy and not self.adaptive_wait:
                    await self._wait_for_more(loop)
                lane = await self.runner.take_lane()
                batch: list[Job] = []
                try:
                    batch = self._take()
                finally:
                    if not batch:  # all of it expired or cancelled: the lane goes back
                        self.runner.give_lane(lane)
                if not batch:
                    continue
                self._start(batch, lane)
                # Let the batch start (a lone image computes right here on the loop), then the
                # answers go out and the CANCELs and SUBMITs that arrived meanwhile come in.
                await asyncio.sleep(0)
                busy = True
            except asyncio.CancelledError:
                self._fail_all(Status.SHUTTING_DOWN)
                raise
            except Exception:  # a bug here must neither leave clients hanging nor stop the batcher
                log.exception("batcher %s failed; failing what it held and carrying on", self.name)
                self._fail_all(Status.FAILED)

    async def _wait_for_more(self, loop: asyncio.AbstractEventLoop) -> None:
        until = self._queue[0].enqueued + self.max_wait_s
        while self._queued_images < self.max_batch_size:
            remaining = until - time.monotonic()
            if remaining <= 0:
                return
            self._wake.clear()
            handle = loop.call_later(remaining, self._wake.set)
            try:
                await self._wake.wait()
            finally:
                handle.cancel()

    def _take(self) -> list[Job]:
        now = time.monotonic()
        batch: list[Job] = []
        images = 0
        while self._queue:
            job = self._queue[0]
            if batch and images + job.n > self.max_batch_size:
                break
            self._queue.popleft()
            self._queued_images -= job.n
            if job.cancelled or job.origin.closed:
                self.stats.cancelled += 1
                job.finish(Status.CANCELLED)
            elif job.deadline <= now:
                self.stats.expired += 1
                job.finish(Status.EXPIRED)
            else:
                batch.append(job)
                images += job.n
        self._set_pending()
        return batch

    def _start(self, batch: list[Job], lane: int) -> None:
        """Run a batch on the lane this batcher holds, as a task of its own; the lane is given back
        when it ends."""
        task = asyncio.get_running_loop().create_task(self._run(batch, lane), name=f"batch-{self.name}")
        self._running[task] = batch
        self._set_pending()
        task.add_done_callback(lambda done: self._batch_done(done, lane))

    def _batch_done(self, task: asyncio.Task, lane: int) -> None:
        batch = self._running.pop(task)
        self.runner.give_lane(lane)
        self._wake.set()
        if not task.cancelled() and task.exception() is not None:  # a bug in _run: nobody may hang
            log.error("batch on %s failed", self.name, exc_info=task.exception())
            for job in batch:
                job.finish(Status.FAILED)
        self._set_pending()

    async def _run(self, batch: list[Job], lane: int) -> None:
        started = time.monotonic()
        views = [job.origin.inputs(job.slot, job.n) for job in batch]
        try:
            out = await self.runner.run(self._forward, views, lane)
            results: list[np.ndarray | None] = []
            row = 0
            for job in batch:
                results.append(out[row : row + job.n])
                row += job.n
        except asyncio.CancelledError:
            for job in batch:
                job.finish(Status.SHUTTING_DOWN)
            raise
        except Exception as exc:
            results = await self._one_by_one(batch, exc, lane)
        compute = time.monotonic() - started
        n = sum(job.n for job in batch)
        if self._m is not None:
            m_queue, m_compute, m_batch, _, m_images, m_exec, m_shares, m_last = self._m
            m_compute.observe(compute)
            m_batch.observe(n)
            m_images.inc(n)
            m_exec.inc()
            m_shares.inc(compute * len(batch))
            m_last.set(time.time())
            by_size, seconds_by_size = self._metrics.batch_of(self.name, n)
            by_size.inc()
            seconds_by_size.inc(compute)
            for job in batch:
                m_queue.observe(started - job.enqueued)
        for job, result in zip(batch, results, strict=True):
            if job.finished:  # already answered (failed by _fail_all): its slot may be someone else's now
                continue
            if result is None:
                job.finish(Status.FAILED)
                continue
            if not job.origin.closed:
                job.origin.write(job.slot, result)
            job.finish(Status.OK, n, started - job.enqueued, compute)

    async def _one_by_one(self, batch: list[Job], exc: Exception, lane: int) -> list[np.ndarray | None]:
        """A batch failed: find the culprit so that the others still get answers."""
        log.warning("batch of %d jobs on %s failed (%r); retrying one by one", len(batch), self.name, exc)
        results: list[np.ndarray | None] = []
        for job in batch:
            try:
                views = [job.origin.inputs(job.slot, job.n)]
                results.append(await self.runner.run(self._forward, views, lane))
            except Exception as one:
                log.error("inference on %s failed: %r", self.name, one)
                results.append(None)
        return results

    def _forward(self, views: list[np.ndarray]) -> np.ndarray:
        out = self.run_batch(views)
        expected = sum(len(v) for v in views)
        if len(out) != expected:
            raise RuntimeError(f"{self.name} returned {len(out)} outputs for {expected} inputs")
        return out

    def _fail_all(self, status: Status) -> None:
        """Answer everything queued or computing (a batch still on a lane skips its answers later)."""
        for job in [*self._queue, *(j for batch in self._running.values() for j in batch)]:
            job.finish(status)
        self._queue.clear()
        self._queued_images = 0
        self._set_pending()

    def _set_pending(self) -> None:
        if self._m is not None:
            self._m[3].set(self.pending)
