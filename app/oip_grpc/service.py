"""The GRPCInferenceService's methods, thin adapters over what the REST routes run: ``app.v2codec``
parses the input tensor and names the outputs, ``app.pipeline.infer`` runs it through the engine,
``app.v2metadata`` describes the server and its models.

``ModelStreamInfer`` (Triton's streaming extension: tritonclient's ``start_stream`` and
``async_stream_infer``, ``perf_analyzer --streaming``) runs each request on the stream as ``ModelInfer``
does, several at once, so that one stream's requests share the engine's batches, and answers them in
the order they came. A request that fails is answered with its ``error_message`` (the message its HTTP
status would carry) and the stream goes on, as Triton does.

A ServiceError becomes the gRPC status its HTTP code stands for (400 -> INVALID_ARGUMENT, 404 ->
NOT_FOUND, 503 -> UNAVAILABLE with a ``retry-after`` trailer, 504 -> DEADLINE_EXCEEDED, ...), with the
same message. Every call is counted in ``vit_digits_requests`` (method ``GRPC``, route the gRPC method's
path, status the HTTP code it stands for), so one set of alerts covers both protocols, and written to the
access log as HTTP requests are (``ACCESS_LOG``), its ID the client's ``x-request-id`` metadata or a new
one, sent back in the trailing metadata.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
from google.protobuf import json_format

from ..access import AccessLine, request_id, write
from ..errors import ModelNotFound, NotSupported, ServiceError, Unavailable
from ..inputs import INLINE_MAX_BYTES
from ..limits import BodyBudget
from ..model_stats import statistics
from ..pipeline import infer_tensors
from ..runtime import Runtime, ServedModel
from ..v2codec import OUTPUTS, Tensor, V2Error, check_one_input, parse_tensor, requested_outputs
from ..v2metadata import NO_LOADING, SERVER_METADATA, model_config, model_metadata, repository_index
from . import messages as pb

log = logging.getLogger("app.grpc")

# HTTP status -> gRPC status code (what each of the service's errors means on the other protocol)
CODES = {
    400: grpc.StatusCode.INVALID_ARGUMENT,
    404: grpc.StatusCode.NOT_FOUND,
    405: grpc.StatusCode.UNIMPLEMENTED,
    413: grpc.StatusCode.RESOURCE_EXHAUSTED,
    415: grpc.StatusCode.INVALID_ARGUMENT,
    422: grpc.StatusCode.INVALID_ARGUMENT,
    503: grpc.StatusCode.UNAVAILABLE,
    504: grpc.StatusCode.DEADLINE_EXCEEDED,
}
# Where each datatype's values travel when they are not sent raw (InferTensorContents)
CONTENTS = {"UINT8": "uint_contents", "FP32": "fp32_contents", "BYTES": "bytes_contents"}

Method = Callable[[Any, grpc.aio.ServicerContext], Awaitable[Any]]
STREAM = "ModelStreamInfer"
POLL_S = 0.25  # how often a health Watch, or an idle inference stream, looks at readiness and shutdown


class InferenceService:
    """The methods over one worker's Runtime: the Open Inference Protocol's and gRPC's health check
    (``handlers`` registers them with a server)."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.lines = AccessLine(runtime.settings.access_log)  # the access log, as HTTP writes it
        self.closing = False  # the server is stopping (see ``stopping``)
        s = runtime.settings
        self.admission = StreamAdmission(s.slots_per_worker, s.large_slots_per_worker, runtime.body_budget)
        # Streams (inference and health watches) stay open as long as their clients like: at most half
        # of MAX_CONNECTIONS of them, so that unary calls and health checks always find room.
        self.max_streams = max(1, s.max_connections // 2)
        self.open_streams = 0

    def close(self) -> None:
        """The server stops: see ``stopping``."""
        self.closing = True

    @property
    def stopping(self) -> bool:
        """From SIGTERM on (``runtime.draining``) open inference streams take no new request, answer
        what they hold, then end with UNAVAILABLE (open a new stream, elsewhere), and health watches
        end with NOT_SERVING, rather than holding the shutdown for its whole grace period."""
        return self.closing or self.runtime.draining

    def handlers(self) -> tuple[grpc.GenericRpcHandler, ...]:
        inference = {
            "ServerLive": self.server_live,
            "ServerReady": self.server_ready,
            "ModelReady": self.model_ready,
            "ServerMetadata": self.server_metadata,
            "ModelMetadata": self.model_metadata,
            "ModelInfer": self.model_infer_call,
            "ModelConfig": self.model_config,
            "ModelStatistics": self.model_statistics,
            "RepositoryIndex": self.repository_index,
            "RepositoryModelLoad": self.repository_load,
            "RepositoryModelUnload": self.repository_load,
        }
        health = {"Check": self.health_check}
        self._stream_record = self._tally(f"/{pb.SERVICE}/{STREAM}")
        self._watch_record = self._tally(f"/{pb.HEALTH}/Watch")
        return (
            self._handler(pb.SERVICE, inference, pb.METHODS,
                          {STREAM: (grpc.stream_stream_rpc_method_handler, self.model_stream_infer)}),
            self._handler(pb.HEALTH, health, pb.HEALTH_METHODS,
                          {"Watch": (grpc.unary_stream_rpc_method_handler, self.health_watch)}),
        )  # fmt: skip

    def _handler(
        self, service: str, methods: dict[str, Method], declared: dict[str, tuple[type, type]],
        streaming: dict[str, tuple[Callable[..., grpc.RpcMethodHandler], Callable]],
    ) -> grpc.GenericRpcHandler:  # fmt: skip
        """The service's unary ``methods`` (counted by ``_counted``) and ``streaming`` ones (each with its
        grpc handler factory; they count their own calls)."""
        assert methods.keys() | streaming.keys() <= declared.keys(), f"{service}: not in the .proto"

        def codec(name: str) -> dict[str, Callable]:
            request, response = declared[name]
            return {
                "request_deserializer": request.FromString,
                "response_serializer": response.SerializeToString,
            }

        handlers = {
            name: grpc.unary_unary_rpc_method_handler(
                self._counted(f"/{service}/{name}", method), **codec(name)
            )
            for name, method in methods.items()
        }
        handlers |= {
            name: factory(behaviour, **codec(name)) for name, (factory, behaviour) in streaming.items()
        }
        return grpc.method_handlers_generic_handler(service, handlers)

    def _tally(self, route: str) -> Callable[[int, float, str, str], None]:
        """A recorder of one call of ``route``: counted and timed in the HTTP metrics (method ``GRPC``),
        and written to the access log."""
        metrics = self.runtime.metrics
        seconds = metrics.request_seconds.labels(route)
        counters: dict[int, Any] = {}  # by status, as MetricsMiddleware keeps them: labels() locks and hashes

        def record(status: int, start: float, rid: str, peer: str) -> None:
            counter = counters.get(status)
            if counter is None:
                counter = counters[status] = metrics.requests.labels(route, "GRPC", str(status))
            counter.inc()
            seconds.observe(time.perf_counter() - start)
            if self.lines.wanted(status):
                write("GRPC", route, status, 1000 * (time.perf_counter() - start), rid, peer)

        return record

    def _counted(self, route: str, method: Method) -> Method:
        """The method, counted and timed in the HTTP metrics, with ServiceErrors turned into statuses."""
        record = self._tally(route)

        async def call(request: Any, context: grpc.aio.ServicerContext) -> Any:
            start = time.perf_counter()
            status = 500
            rid = _request_id(context)
            trailing = [("x-request-id", rid)]
            try:
                response = await method(request, context)
                status = 200
                context.set_trailing_metadata(tuple(trailing))
                return response
            except ServiceError as exc:
                status = exc.status_code
                if exc.headers and "Retry-After" in exc.headers:
                    trailing.append(("retry-after", exc.headers["Retry-After"]))
                code = CODES.get(status, grpc.StatusCode.INTERNAL)
                await context.abort(code, exc.message, trailing_metadata=tuple(trailing))
            except asyncio.CancelledError:  # the client left or its deadline passed: grpc cancels us
                status = 499
                raise
            except grpc.aio.AbortError:
                raise
            except Exception:
                log.exception("gRPC %s failed", route)
                await context.abort(
                    grpc.StatusCode.INTERNAL, f"{route} failed on the server", tuple(trailing)
                )
            finally:
                record(status, start, rid, context.peer())

        return call

    # ---------------------------------------------------------------------------- health, metadata

    async def server_live(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        return pb.ServerLiveResponse(live=True)

    async def server_ready(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        return pb.ServerReadyResponse(ready=self.runtime.ready)

    async def model_ready(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        self._model(request.name, request.version)
        return pb.ModelReadyResponse(ready=self.runtime.ready)

    async def server_metadata(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        return pb.ServerMetadataResponse(**SERVER_METADATA)

    async def model_metadata(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        served = self._model(request.name, request.version)
        return pb.ModelMetadataResponse(**model_metadata(served))

    async def model_config(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        served = self._model(request.name, request.version)
        config = model_config(served, self.runtime.settings)
        return pb.ModelConfigResponse(config=json_format.ParseDict(config, pb.ModelConfig()))

    async def model_statistics(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        """One model's statistics, or every model's when the request names none (as Triton)."""
        runtime = self.runtime
        names = [self._model(request.name, request.version).name] if request.name else list(runtime.models)
        return json_format.ParseDict(statistics(runtime.metrics, names), pb.ModelStatisticsResponse())

    async def repository_index(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        runtime = self.runtime
        index = repository_index(runtime.models, runtime.ready, runtime.not_ready_reason, request.ready)
        return pb.RepositoryIndexResponse(models=index)

    async def repository_load(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        raise NotSupported(NO_LOADING)

    async def health_check(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        """SERVING when ready (as ServerReady and /v2/health/ready), else NOT_SERVING."""
        if request.service not in ("", pb.SERVICE):
            raise ServiceError(f"unknown service '{request.service}': '' or '{pb.SERVICE}'", status_code=404)
        status = pb.HealthCheckResponse.SERVING if self.runtime.ready else pb.HealthCheckResponse.NOT_SERVING
        return pb.HealthCheckResponse(status=status)

    async def health_watch(self, request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
        """Check's answer now, then again whenever it changes (looked at every POLL_S), as gRPC's
        client-side health checking wants it. Another service: SERVICE_UNKNOWN, the call kept open, as
        the protocol asks. When the server stops: NOT_SERVING, and the call ends."""
        start, rid, status, last = time.perf_counter(), _request_id(context), 499, None
        known = request.service in ("", pb.SERVICE)
        await self._open_stream(context, self._watch_record, start, rid)
        try:
            while True:
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
                await asyncio.sleep(POLL_S)
        finally:
            self.open_streams -= 1
            self._watch_record(status, start, rid, context.peer())

    def _model(self, name: str, version: str, for_inference: bool = False) -> ServedModel:
        if version not in ("", "1"):
            raise ModelNotFound(f"unknown version '{version}': each model has one version, '1'")
        runtime = self.runtime
        return runtime.model_for_inference(name) if for_inference else runtime.model(name)

    # ---------------------------------------------------------------------------------- inference

    async def model_infer(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        started = time.monotonic()
        runtime = self.runtime
        served = self._model(request.model_name, request.model_version, for_inference=True)
        names = requested_outputs([out.name for out in request.outputs])
        tensor = _input(request)
        max_images = runtime.settings.max_batch_images
        if len(tensor.raw or b"") + 4 * len(tensor.values or ()) > INLINE_MAX_BYTES:
            images, encoded = await runtime.run_cpu(parse_tensor, tensor, max_images)
        else:  # small tensors parse faster here than through a thread hop
            images, encoded = parse_tensor(tensor, max_images)
        tensors = await infer_tensors(None, runtime, served, images, encoded, started)
        response = pb.ModelInferResponse(model_name=served.name, model_version="1", id=request.id)
        for name in names:
            arr = tensors[name]
            response.outputs.add(name=name, datatype=OUTPUTS[name], shape=arr.shape)
            response.raw_output_contents.append(arr.tobytes())
        return response

    async def model_infer_call(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        """ModelInfer as a call of its own: its message charged to the worker's body budget while it is
        in the service (503 -> UNAVAILABLE when that is full, as HTTP answers)."""
        budget, size = self.runtime.body_budget, request.ByteSize()
        if not budget.fits(size):
            raise Unavailable(budget.busy())
        budget.charge(size)
        try:
            return await self.model_infer(request, context)
        finally:
            budget.charge(-size)

    async def model_stream_infer(
        self, requests: AsyncIterator[Any], context: grpc.aio.ServicerContext
    ) -> AsyncIterator[Any]:
        """Each request on the stream run as ModelInfer runs it, several at once, and answered in order;
        each counted and logged as a call of its own (the stream's request ID). A request waits for
        room in the worker (``StreamAdmission``) before it is taken off the stream: backpressure, where
        calls of their own would be refused."""
        record = self._stream_record
        rid, peer = _request_id(context), context.peer()
        trailing = (("x-request-id", rid),)
        context.set_trailing_metadata(trailing)
        await self._open_stream(context, record, time.perf_counter(), rid)
        window: asyncio.Queue[Any] = asyncio.Queue(self.admission.most)
        cut_short = False  # the service began to stop while the client was still sending

        async def take_in() -> None:
            nonlocal cut_short
            try:
                async for request in requests:
                    if self.stopping:
                        cut_short = True
                        break
                    leave = await self.admission.enter(request)
                    answer = asyncio.ensure_future(self._stream_answer(request, record, rid, peer))
                    answer.add_done_callback(leave)  # also when cancelled before it ran
                    await window.put(answer)
            finally:
                await window.put(None)

        reader = asyncio.ensure_future(take_in())
        try:
            while True:
                if window.empty():  # idle: look at shutdown now and then
                    if self.stopping:
                        break
                    try:
                        async with asyncio.timeout(POLL_S):
                            answer = await window.get()
                    except TimeoutError:
                        continue
                else:
                    answer = window.get_nowait()
                if answer is None:
                    break
                yield await answer
            if self.stopping and (cut_short or not reader.done()):
                await context.abort(
                    grpc.StatusCode.UNAVAILABLE, "the service is shutting down: open a new stream",
                    trailing_metadata=(*trailing, ("retry-after", "1")),
                )  # fmt: skip
            await reader  # a broken request stream ends the call with its error
        finally:  # the client left (or the call failed): what is still in flight is dropped
            self.open_streams -= 1
            reader.cancel()
            while not window.empty():
                waiting = window.get_nowait()
                if waiting is not None:
                    waiting.cancel()

    async def _open_stream(
        self, context: grpc.aio.ServicerContext, record: Callable[[int, float, str, str], None], start: float,
        rid: str,
    ) -> None:  # fmt: skip
        """Count a stream in, or refuse it (RESOURCE_EXHAUSTED) when the worker holds ``max_streams``."""
        if self.open_streams >= self.max_streams:
            record(503, start, rid, context.peer())
            await context.abort(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"this worker holds {self.open_streams} open streams (MAX_CONNECTIONS / 2): retry shortly",
                trailing_metadata=(("x-request-id", rid), ("retry-after", "1")),
            )
        self.open_streams += 1

    async def _stream_answer(self, request: Any, record: Callable[[int, float, str, str], None], rid: str,
                             peer: str) -> Any:  # fmt: skip
        start = time.perf_counter()
        status = 500
        try:
            response = await self.model_infer(request, None)  # type: ignore[arg-type]  # needs no context
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
            log.exception("gRPC %s failed", STREAM)
            return pb.ModelStreamInferResponse(error_message=f"{STREAM} failed on the server")
        finally:
            record(status, start, rid, peer)


def _request_id(context: grpc.aio.ServicerContext) -> str:
    """The client's ``x-request-id`` metadata, or a new ID."""
    sent = dict(context.invocation_metadata() or ()).get("x-request-id")
    return request_id(sent.encode() if isinstance(sent, str) else None)


def _input(request: Any) -> Tensor:
    """The request's one input tensor, its elements raw or typed."""
    check_one_input(len(request.inputs))
    given = request.inputs[0]
    raws = request.raw_input_contents
    if raws and len(raws) != 1:
        raise V2Error(f"raw_input_contents has {len(raws)} entries for 1 input")
    field = CONTENTS.get(given.datatype)
    values = getattr(given.contents, field) if field is not None else None
    if raws and values:
        raise V2Error(f"input '{given.name}' has both raw_input_contents and typed contents: send one")
    return Tensor(
        given.name,
        given.datatype,
        list(given.shape),
        raw=bytes(raws[0]) if raws else None,
        values=values or None,  # the message's own sequence: read where it is parsed
    )


class StreamAdmission:
    """What the worker's streams may hold at once, waited for rather than refused: requests as the
    worker's slots hold them (SLOTS_PER_WORKER single images, LARGE_SLOTS_PER_WORKER batches), and
    their bytes in the worker's body budget (MAX_BODY_BYTES_IN_FLIGHT, shared with HTTP and ModelInfer).
    Calls of their own still find the slots the streams leave, or a 503, as before."""

    def __init__(self, singles: int, batches: int, budget: BodyBudget) -> None:
        self.singles = asyncio.Semaphore(singles)
        self.batches = asyncio.Semaphore(batches)
        self.budget = budget
        self.most = singles + batches  # requests one stream can have in flight

    async def enter(self, request: Any) -> Callable[[Any], None]:
        """Wait for room for ``request``; the callback that gives it back."""
        shape = request.inputs[0].shape if len(request.inputs) == 1 else ()
        slots = self.batches if shape and shape[0] > 1 else self.singles
        size = request.ByteSize()
        await slots.acquire()
        try:
            await self.budget.room_for(size)
        except BaseException:
            slots.release()
            raise
        self.budget.charge(size)

        def leave(_: Any) -> None:
            slots.release()
            self.budget.charge(-size)

        return leave
