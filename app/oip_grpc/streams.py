"""The gRPC port's streams, which stay open as long as their clients like: Triton's ``ModelStreamInfer``
and gRPC health's ``Watch``.

``ModelStreamInfer`` (tritonclient's ``start_stream`` / ``async_stream_infer``, ``perf_analyzer
--streaming``) runs each request on the stream as ``ModelInfer`` does, several at once, so that one
stream's requests share the engine's batches, and answers them in the order they came. A request that
fails is answered with its ``error_message`` (the message its HTTP status would carry) and the stream
goes on, as Triton does. A request is taken off the stream only when the worker has room for it
(``StreamAdmission``): backpressure through gRPC's flow control, where calls of their own get 503s.

A worker holds at most MAX_CONNECTIONS / 2 streams, so that calls and health checks always find room.
From SIGTERM on, an inference stream takes no new request, answers what it holds and ends with
UNAVAILABLE (open a new stream, elsewhere); a watch says NOT_SERVING and ends. Neither holds the shutdown.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc

from ..access import request_id
from ..errors import ServiceError
from ..limits import BodyBudget
from ..runtime import Runtime
from . import messages as pb

log = logging.getLogger("app.grpc")

POLL_S = 0.25  # how often the worker's streams look at readiness and shutdown (plain flags: no event)
_WAKE = object()  # put in an inference stream's window: its writer looks at ``stopping``

Record = Callable[[int, float, str, str], None]  # status, start, request ID, peer: one call counted


class StreamAdmission:
    """What the worker's streams may hold at once, waited for rather than refused: requests as the
    worker's slots hold them (SLOTS_PER_WORKER single images, LARGE_SLOTS_PER_WORKER batches), shared
    by the streams, and their bytes in the worker's body budget (MAX_BODY_BYTES_IN_FLIGHT, shared with
    HTTP and ModelInfer calls)."""

    def __init__(self, singles: int, batches: int, budget: BodyBudget) -> None:
        self.singles = asyncio.Semaphore(singles)
        self.batches = asyncio.Semaphore(batches)
        self.budget = budget
        self.max_in_flight = singles + batches  # requests one stream can have in flight

    async def enter(self, request: Any) -> Callable[[Any], None]:
        """Wait for room for ``request``; the callback that gives it back (a task's done callback)."""
        shape = request.inputs[0].shape if len(request.inputs) == 1 else ()
        slots = self.batches if shape and shape[0] > 1 else self.singles
        size = request.ByteSize()
        await slots.acquire()
        try:
            await self.budget.room_for(size)
        except BaseException:
            slots.release()
            raise
        self.budget.hold(size)

        def leave(_: Any) -> None:
            slots.release()
            self.budget.release(size)

        return leave


class Streams:
    """The worker's open streams: their count, what their requests may hold, and one task that looks at
    readiness and shutdown for all of them."""

    def __init__(
        self, runtime: Runtime, infer: Callable[[Any], Awaitable[Any]], tally: Callable[[str], Record]
    ):
        self.runtime = runtime
        self.infer = infer  # ModelInfer's work, without a call's own accounting
        s = runtime.settings
        self.admission = StreamAdmission(s.slots_per_worker, s.large_slots_per_worker, runtime.body_budget)
        self.max_open = max(1, s.max_connections // 2)
        self.open = 0
        self.closing = False  # the gRPC server stops
        self.windows: set[asyncio.Queue] = set()  # the inference streams' answers in waiting
        self._changed: asyncio.Event | None = None  # set (and dropped) when readiness or shutdown changes
        self._monitor: asyncio.Task | None = None
        self._infer_record = tally(f"/{pb.SERVICE}/ModelStreamInfer")
        self._watch_record = tally(f"/{pb.HEALTH}/Watch")

    @property
    def stopping(self) -> bool:
        """From SIGTERM (``runtime.draining``, set by the signal) or the server's stop."""
        return self.closing or self.runtime.draining

    def close(self) -> None:
        self.closing = True
        self._wake()
        if self._monitor is not None:
            self._monitor.cancel()

    # ------------------------------------------------------------------------------ health Watch

    async def health_watch(self, request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
        """Check's answer now, then again whenever it changes, as gRPC's client-side health checking
        wants it. Another service: SERVICE_UNKNOWN, the call kept open, as the protocol asks. When the
        server stops: NOT_SERVING, and the call ends."""
        start, rid, status, last = time.perf_counter(), call_request_id(context), 499, None
        known = request.service in ("", pb.SERVICE)
        await self._open(context, self._watch_record, start, rid)
        try:
            while True:
                changed = self._change()  # taken first: a change while we look is not missed
                if not known:
                    now = pb.HealthCheckResponse.SERVICE_UNKNOWN
                elif self.runtime.ready and not self.stopping:
                    now = pb.HealthCheckResponse.SERVING
                else:
                    now = pb.HealthCheckResponse.NOT_SERVING
                if now != last:
                    yield pb.HealthCheckResponse(status=now)
                    last = now
                if self.stopping:
                    status = 200
                    return
                await changed.wait()
        finally:  # also when grpc drops the call: asyncio's finalizer closes the generator
            self.open -= 1
            self._watch_record(status, start, rid, context.peer())

    # ------------------------------------------------------------------------------ ModelStreamInfer

    async def model_stream_infer(
        self, requests: AsyncIterator[Any], context: grpc.aio.ServicerContext
    ) -> AsyncIterator[Any]:
        """Each request run as ModelInfer runs it, several at once, and answered in order; each counted
        and logged as a call of its own (the stream's request ID)."""
        rid, peer = call_request_id(context), context.peer()
        trailing = (("x-request-id", rid),)
        context.set_trailing_metadata(trailing)
        await self._open(context, self._infer_record, time.perf_counter(), rid)
        window: asyncio.Queue[Any] = asyncio.Queue(self.admission.max_in_flight)
        cut_short = False  # the service began to stop while the client was still sending

        async def take_in() -> None:
            nonlocal cut_short
            try:
                async for request in requests:
                    if self.stopping:
                        cut_short = True
                        break
                    leave = await self.admission.enter(request)
                    answer = asyncio.ensure_future(self._answer(request, rid, peer))
                    answer.add_done_callback(leave)  # also when cancelled before it ran
                    try:
                        await window.put(answer)
                    except BaseException:  # cancelled while the window was full: nobody would read it
                        answer.cancel()
                        raise
            finally:
                await window.put(None)

        reader = asyncio.ensure_future(take_in())
        self.windows.add(window)
        try:
            while (answer := await window.get()) is not None:
                if answer is not _WAKE:
                    yield await answer
                if self.stopping and window.empty():
                    break
            if self.stopping and (cut_short or not reader.done()):
                await context.abort(
                    grpc.StatusCode.UNAVAILABLE, "the service is shutting down: open a new stream",
                    trailing_metadata=(*trailing, ("retry-after", "1")),
                )  # fmt: skip
            await reader  # a broken request stream ends the call with its error
        finally:  # the client left (or the call failed): what is still in flight is dropped
            self.open -= 1
            self.windows.discard(window)
            reader.cancel()
            while not window.empty():
                waiting = window.get_nowait()
                if isinstance(waiting, asyncio.Future):
                    waiting.cancel()

    async def _answer(self, request: Any, rid: str, peer: str) -> Any:
        """One request's answer on the stream: its outputs, or its error message."""
        start, status = time.perf_counter(), 500
        try:
            response = await self.infer(request)
            status = 200
            enabled = request.parameters.get("triton_enable_empty_final_response")
            if enabled is not None and enabled.bool_param:  # Triton marks the last answer of a request
                response.parameters["triton_final_response"].bool_param = True
            return pb.ModelStreamInferResponse(infer_response=response)
        except ServiceError as exc:
            status = exc.status_code
            return pb.ModelStreamInferResponse(error_message=exc.message)
        except asyncio.CancelledError:
            status = 499
            raise
        except Exception:
            log.exception("gRPC ModelStreamInfer failed")
            return pb.ModelStreamInferResponse(error_message="ModelStreamInfer failed on the server")
        finally:
            self._infer_record(status, start, rid, peer)

    # ----------------------------------------------------------------------------------- upkeep

    async def _open(self, context: grpc.aio.ServicerContext, record: Record, start: float, rid: str) -> None:
        """Count a stream in, or refuse it (UNAVAILABLE, retry-after) when the worker holds ``max_open``."""
        if self.open >= self.max_open:
            record(503, start, rid, context.peer())
            await context.abort(
                grpc.StatusCode.UNAVAILABLE,
                f"this worker holds {self.open} open streams (MAX_CONNECTIONS / 2): retry shortly",
                trailing_metadata=(("x-request-id", rid), ("retry-after", "1")),
            )
        self.open += 1
        self._watching()

    def _watching(self) -> None:
        if self._monitor is None and not self.closing:
            self._monitor = asyncio.ensure_future(self._monitor_state())

    async def _monitor_state(self) -> None:
        """Readiness and SIGTERM's draining are plain flags, with nothing to await: one task looks at them
        every POLL_S for all the worker's streams, and wakes them when either changes."""
        last = None
        while True:
            now = (self.runtime.ready, self.stopping)
            if now != last:
                last = now
                self._wake()
            await asyncio.sleep(POLL_S)

    def _change(self) -> asyncio.Event:
        if self._changed is None:
            self._changed = asyncio.Event()
        return self._changed

    def _wake(self) -> None:
        if self._changed is not None:
            self._changed.set()
            self._changed = None
        if self.stopping:
            for window in self.windows:
                with contextlib.suppress(asyncio.QueueFull):  # full: its writer is busy and looks itself
                    window.put_nowait(_WAKE)


def call_request_id(context: grpc.aio.ServicerContext) -> str:
    """The client's ``x-request-id`` metadata, or a new ID."""
    sent = dict(context.invocation_metadata() or ()).get("x-request-id")
    return request_id(sent.encode() if isinstance(sent, str) else None)
