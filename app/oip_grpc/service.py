"""The GRPCInferenceService's methods, thin adapters over what the REST routes run: ``app.v2codec``
parses the input tensor and names the outputs, ``app.pipeline.infer`` runs it through the engine,
``app.v2metadata`` describes the server and its models.

The streaming methods (``ModelStreamInfer``, health ``Watch``) are in ``streams.py``.

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
from collections.abc import Awaitable, Callable
from typing import Any

import grpc
from google.protobuf import json_format

from ..access import AccessLine, write
from ..errors import ModelNotFound, NotSupported, ServiceError
from ..inputs import INLINE_MAX_BYTES
from ..model_stats import statistics
from ..pipeline import infer_tensors
from ..runtime import Runtime, ServedModel
from ..v2codec import OUTPUTS, Tensor, V2Error, check_one_input, parse_tensor, requested_outputs
from ..v2metadata import NO_LOADING, SERVER_METADATA, model_config, model_metadata, repository_index
from . import messages as pb
from .streams import Record, Streams, call_request_id

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


class InferenceService:
    """The methods over one worker's Runtime: the Open Inference Protocol's and gRPC's health check
    (``handlers`` registers them with a server)."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.lines = AccessLine(runtime.settings.access_log)  # the access log, as HTTP writes it
        self.streams = Streams(runtime, lambda request: self.model_infer(request, None), self._tally)

    def close(self) -> None:
        """The server stops: open streams end (``Streams``)."""
        self.streams.close()

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
        streaming = {
            "ModelStreamInfer": (grpc.stream_stream_rpc_method_handler, self.streams.model_stream_infer)
        }
        watch = {"Watch": (grpc.unary_stream_rpc_method_handler, self.streams.health_watch)}
        return (
            self._handler(pb.SERVICE, inference, pb.METHODS, streaming),
            self._handler(pb.HEALTH, health, pb.HEALTH_METHODS, watch),
        )

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

    def _tally(self, route: str) -> Record:
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
            rid = call_request_id(context)
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
        """ModelInfer as a call of its own: its message held in the worker's body budget while it is in
        the service (503 -> UNAVAILABLE when that is full, as HTTP answers)."""
        with self.runtime.body_budget.holding(request.ByteSize()):
            return await self.model_infer(request, context)


def _input(request: Any) -> Tensor:
    """The request's one input tensor, its elements raw or typed."""
    check_one_input(len(request.inputs))
    given = request.inputs[0]
    raws = request.raw_input_contents
    if raws and len(raws) != 1:
        raise V2Error(f"raw_input_contents has {len(raws)} entries for 1 input")
    field = CONTENTS.get(given.datatype)
    values = getattr(given.contents, field) if field is not None else None
    if raws and given.contents.ListFields():
        raise V2Error(f"input '{given.name}' has both raw_input_contents and typed contents: send one")
    if field is not None and (others := [f.name for f, _ in given.contents.ListFields() if f.name != field]):
        raise V2Error(
            f"input '{given.name}' is {given.datatype}: its values go in contents.{field} (or "
            f"raw_input_contents), not {', '.join(others)}"
        )
    return Tensor(
        given.name,
        given.datatype,
        list(given.shape),
        raw=bytes(raws[0]) if raws else None,
        values=values or None,  # the message's own sequence: read where it is parsed
    )
