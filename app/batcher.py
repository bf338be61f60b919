"""Dynamic batching: one bounded queue, one future per image and one background task per batcher.

The task takes up to ``max_batch_size`` queued images, or what has arrived ``max_wait_s`` after the
first (right after a batch: what queued up meanwhile, no wait); the forward pass runs on the
device's single inference thread (torch is never entered concurrently and the event loop never
blocks). Images whose deadline has passed or whose client
has gone (future cancelled) are dropped before they cost compute. A full queue refuses at once.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .errors import DeadlineExceeded, ServiceError, Unavailable
from .metrics import Metrics

log = logging.getLogger(__name__)

# (B, 28, 28) float32 in 0..1 -> B per-image results. Runs on the device thread.
RunBatch = Callable[[np.ndarray], Sequence[Any]]


class InferenceError(ServiceError):
    status_code = 500


@dataclass(slots=True)
class Timing:
    queue_s: float
    compute_s: float
    batch_size: int


@dataclass(slots=True)
class BatcherStats:
    batches: int = 0
    images: int = 0
    largest_batch: int = 0
    expired: int = 0  # dropped before compute: deadline passed
    cancelled: int = 0  # dropped before compute: client gone or gave up
    batch_sizes: deque[int] = field(default_factory=lambda: deque(maxlen=1000))  # the latest


@dataclass(slots=True, eq=False)
class _Item:
    x: np.ndarray
    future: asyncio.Future
    enqueued: float
    deadline: float


class DynamicBatcher:
    def __init__(
        self,
        name: str,
        run_batch: RunBatch,
        *,
        executor: Executor,
        max_batch_size: int = 32,
        max_wait_s: float = 0.002,
        max_queue_size: int = 256,
        adaptive_wait: bool = True,
        metrics: Metrics | None = None,
    ) -> None:
        self.name = name
        self.run_batch = run_batch
        self.executor = executor
        self.max_batch_size = max_batch_size
        self.max_wait_s = max_wait_s
        self.max_queue_size = max_queue_size
        self.adaptive_wait = adaptive_wait
        self.stats = BatcherStats()
        self._queue: deque[_Item] = deque()
        self._wake = asyncio.Event()
        self._incoming = 0  # images announced by routes that are still reading or preprocessing them
        self._in_flight: list[_Item] = []
        self._accepting = True
        self._task: asyncio.Task | None = None
        self._m = None
        if metrics is not None:
            self._m = (
                metrics.queue_seconds.labels(name),
                metrics.compute_seconds.labels(name),
                metrics.batch_size.labels(name),
                metrics.pending.labels(name),
                metrics.inference_count.labels(name),
                metrics.execution_count.labels(name),
            )

    # ------------------------------------------------------------------------------- lifecycle

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._loop(), name=f"batcher-{self.name}")

    @property
    def pending(self) -> int:
        return len(self._queue) + len(self._in_flight)

    async def drain(self, timeout_s: float) -> bool:
        """Refuse new work, then wait (bounded) until everything queued has been answered."""
        self._accepting = False
        until = time.monotonic() + timeout_s
        while self.pending and time.monotonic() < until:
            await asyncio.sleep(0.005)
        return not self.pending

    async def stop(self) -> None:
        """Cancel the task and fail whatever is still waiting with 503."""
        self._accepting = False
        if self._task is not None:
            self._task.cancel()
            with suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        self._fail_all(Unavailable(f"model {self.name} is shutting down"))

    # ------------------------------------------------------------------------------- client side

    @contextmanager
    def expect(self, n: int = 1) -> Iterator[None]:
        """Announce ``n`` images on their way (being preprocessed), so the batcher waits for them."""
        self._incoming += n
        try:
            yield
        finally:
            self._incoming -= n
            self._wake.set()

    def submit(self, xs: Sequence[np.ndarray], deadline: float) -> list[asyncio.Future]:
        """Queue (28, 28) float32 images; all or none. Raises Unavailable (503) when full."""
        if not self._accepting:
            raise Unavailable(f"model {self.name} is shutting down")
        if len(self._queue) + len(xs) > self.max_queue_size:
            raise Unavailable(
                f"model {self.name} is overloaded ({len(self._queue)} images queued); retry shortly"
            )
        loop = asyncio.get_running_loop()
        now = time.monotonic()
        futures = []
        for x in xs:
            future = loop.create_future()
            self._queue.append(_Item(x, future, now, deadline))
            futures.append(future)
        self._set_pending()
        self._wake.set()
        return futures

    async def infer(self, xs: Sequence[np.ndarray], deadline: float) -> list[tuple[Any, Timing]]:
        """Submit and wait for every result, in order. 504 past the deadline; cancelling drops them."""
        futures = self.submit(xs, deadline)
        try:
            async with asyncio.timeout(max(deadline - time.monotonic(), 0.0)):
                return list(await asyncio.gather(*futures))
        except TimeoutError:
            raise DeadlineExceeded(f"no answer from {self.name} within the request timeout") from None
        finally:
            for f in futures:  # on error or cancellation the rest is dropped before compute
                f.cancel()

    # ------------------------------------------------------------------------------- the task

    async def _loop(self) -> None:
        loop = asyncio.get_running_loop()
        # Work that queued up while the model was busy goes in at once: waiting then only leaves the
        # model idle, and under load the wait's timer fires late, behind the answers being sent
        # (a third of the model's time was lost this way at 64 clients). Waits are for an idle model.
        busy = False
        while True:
            try:
                if not self._queue:
                    busy = False
                    self._wake.clear()
                    await self._wake.wait()
                    continue
                if not (busy and self.adaptive_wait):
                    await self._wait_for_more(loop)
                batch = self._take()
                if batch:
                    await self._run(loop, batch)
                busy = bool(batch)
            except asyncio.CancelledError:
                self._fail_all(Unavailable(f"model {self.name} is shutting down"))
                raise
            except Exception:  # a bug here must neither leave clients hanging nor stop the batcher
                log.exception("batcher %s failed; failing what it held and carrying on", self.name)
                self._fail_all(InferenceError(f"batcher for {self.name} failed"))

    async def _wait_for_more(self, loop: asyncio.AbstractEventLoop) -> None:
        """Wait up to max_wait after the first queued image, while the batch is not full."""
        until = self._queue[0].enqueued + self.max_wait_s
        while len(self._queue) < self.max_batch_size:
            if self.adaptive_wait and self._incoming <= 0:
                return  # nobody else is on the way: waiting would only add latency
            remaining = until - time.monotonic()
            if remaining <= 0:
                return
            self._wake.clear()
            handle = loop.call_later(remaining, self._wake.set)
            try:
                await self._wake.wait()
            finally:
                handle.cancel()

    def _take(self) -> list[_Item]:
        now = time.monotonic()
        batch: list[_Item] = []
        while self._queue and len(batch) < self.max_batch_size:
            item = self._queue.popleft()
            if item.future.done():
                self.stats.cancelled += 1
            elif item.deadline <= now:
                self.stats.expired += 1
                item.future.set_exception(DeadlineExceeded(f"request to {self.name} expired in the queue"))
            else:
                batch.append(item)
        self._set_pending()
        return batch

    async def _run(self, loop: asyncio.AbstractEventLoop, batch: list[_Item]) -> None:
        self._in_flight = batch
        self._set_pending()
        started = time.monotonic()
        try:
            outputs = await loop.run_in_executor(self.executor, self._forward, [it.x for it in batch])
        except asyncio.CancelledError:  # stopping: the thread finishes on its own, nobody will wait
            for it in batch:
                if not it.future.done():
                    it.future.set_exception(Unavailable(f"model {self.name} is shutting down"))
            raise
        except Exception as exc:
            if len(batch) == 1:
                outputs = [self._as_error(exc)]
            else:  # find the culprit: run them one by one so the others still get answers
                log.warning("batch of %d on %s failed (%s); retrying one by one", len(batch), self.name, exc)
                outputs = []
                for it in batch:
                    try:
                        outputs.extend(await loop.run_in_executor(self.executor, self._forward, [it.x]))
                    except Exception as one:
                        outputs.append(self._as_error(one))
        finally:
            self._in_flight = []
            self._set_pending()
        compute = time.monotonic() - started
        n = len(batch)
        self.stats.batches += 1
        self.stats.images += n
        self.stats.largest_batch = max(self.stats.largest_batch, n)
        self.stats.batch_sizes.append(n)
        if self._m is not None:
            m_queue, m_compute, m_batch, _, m_images, m_exec = self._m
            m_compute.observe(compute)
            m_batch.observe(n)
            m_images.inc(n)
            m_exec.inc()
            for it in batch:
                m_queue.observe(started - it.enqueued)
        for it, out in zip(batch, outputs, strict=True):
            if it.future.done():
                continue
            if isinstance(out, BaseException):
                it.future.set_exception(out)
            else:
                it.future.set_result((out, Timing(started - it.enqueued, compute, n)))

    def _forward(self, xs: list[np.ndarray]) -> Sequence[Any]:
        outputs = self.run_batch(np.stack(xs))
        if len(outputs) != len(xs):
            raise InferenceError(f"{self.name} returned {len(outputs)} outputs for {len(xs)} inputs")
        return outputs

    def _as_error(self, exc: BaseException) -> BaseException:
        if isinstance(exc, ServiceError):
            return exc
        log.error("inference on %s failed: %r", self.name, exc)
        return InferenceError(f"inference failed on {self.name}: {type(exc).__name__}")

    def _fail_all(self, exc: ServiceError) -> None:
        for it in [*self._queue, *self._in_flight]:
            if not it.future.done():
                it.future.set_exception(exc)
        self._queue.clear()
        self._set_pending()

    def _set_pending(self) -> None:
        if self._m is not None:
            self._m[3].set(self.pending)
