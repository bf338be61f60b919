"""Open Inference Protocol v2 (KServe / Triton REST): metadata, readiness and inference."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, Response
from pydantic import ValidationError

from .. import v2metadata
from ..deps import ModelDep, RuntimeDep, path_parameters
from ..encoding import decompress
from ..errors import ModelNotFound, NotSupported
from ..inputs import INLINE_MAX_BYTES
from ..model_stats import statistics
from ..openapi import errors, ref, request_body
from ..pipeline import infer_tensors, serving
from ..schemas import (
    V2InferRequest,
    V2InferResponse,
    V2ModelConfig,
    V2ModelMetadata,
    V2ModelReady,
    V2ModelStatistics,
    V2RepositoryIndexRequest,
    V2RepositoryModel,
    V2ServerMetadata,
)
from ..v2codec import HEADER_LENGTH, V2Error, encode_response, parse_request
from ..v2metadata import SERVER_METADATA

router = APIRouter(prefix="/v2", tags=["v2 (Open Inference Protocol)"])

INFER_BODY = request_body(
    {
        "application/json": ref(V2InferRequest),
        "application/octet-stream": {"type": "string", "format": "binary"},
    },
    "JSON, or a JSON header followed by binary tensors (header length in Inference-Header-Content-Length)",
)

BINARY_RESPONSE = {
    "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}},
    "description": "JSON, or a JSON header + binary tensors when binary outputs are asked for",
}


async def known_version(version: str) -> None:
    """Each model has one version, "1" (tritonclient's model_version="1"), under /versions/{version}."""
    if version != "1":
        raise ModelNotFound(f"unknown version '{version}': each model has one version, '1'")


VERSIONED: dict = {"dependencies": [Depends(known_version)]}


@router.get("", response_model=V2ServerMetadata)
async def server_metadata() -> JSONResponse:
    """Server name, version and protocol extensions."""
    return JSONResponse(SERVER_METADATA)


@router.post("/repository/index", response_model=list[V2RepositoryModel], responses=errors(400, v2=True))
async def repository_index(request: Request, runtime: RuntimeDep) -> JSONResponse:
    """Triton's model repository index: every model served (how a Triton client lists them). The body
    may be empty (tritonclient sends none) or ``{"ready": true}`` for the ready ones only."""
    body = await request.body()
    ready_only = parse_index_request(body).ready if body.strip() else False
    index = v2metadata.repository_index(runtime.models, runtime.ready, runtime.not_ready_reason, ready_only)
    return JSONResponse(index)


@router.post("/repository/models/{name}/load", responses=errors(405, v2=True))
@router.post("/repository/models/{name}/unload", responses=errors(405, v2=True))
async def repository_load(name: str) -> None:
    """Triton's explicit model loading and unloading: refused (405), the models come from the store."""
    raise NotSupported(v2metadata.NO_LOADING)


# Before /models/{name}, which would take "stats" for a model's name.
@router.get("/models/stats", response_model=V2ModelStatistics, responses=errors(503, v2=True))
async def all_statistics(runtime: RuntimeDep) -> JSONResponse:
    """Statistics of every model (Triton's statistics extension): counts and cumulative times in ns."""
    return JSONResponse(statistics(runtime.metrics, list(runtime.models)))


def parse_index_request(body: bytes) -> V2RepositoryIndexRequest:
    try:
        return V2RepositoryIndexRequest.model_validate_json(body)
    except ValidationError as exc:
        raise V2Error(f"invalid repository index request: {exc.errors()[0]['msg']}") from None


def model_and_version_get(suffix: str, **documented: Any) -> Callable[[Callable], Callable]:
    """GET /models/{name}<suffix> and /models/{name}/versions/{version}<suffix>, one function (there is
    one version, "1"; tritonclient's model_version="1" asks for it)."""

    def register(endpoint: Callable) -> Callable:
        router.get(f"/models/{{name}}{suffix}", **documented)(endpoint)
        router.get(f"/models/{{name}}/versions/{{version}}{suffix}", **documented, **VERSIONED)(endpoint)
        return endpoint

    return register


@model_and_version_get("", response_model=V2ModelMetadata, responses=errors(404, 503, v2=True))
async def model_metadata(served: ModelDep) -> JSONResponse:
    """Model metadata: input (UINT8 [N,28,28], FP32 [N,1,28,28], or BYTES [N] pictures) and outputs."""
    return JSONResponse(v2metadata.model_metadata(served))


@model_and_version_get("/config", response_model=V2ModelConfig, responses=errors(404, 503, v2=True))
async def config(served: ModelDep, runtime: RuntimeDep) -> JSONResponse:
    """The model's configuration in Triton's ModelConfig schema (for perf_analyzer and the like)."""
    return JSONResponse(v2metadata.model_config(served, runtime.settings))


@model_and_version_get("/stats", response_model=V2ModelStatistics, responses=errors(404, 503, v2=True))
async def model_statistics(served: ModelDep, runtime: RuntimeDep) -> JSONResponse:
    """The model's statistics (Triton's statistics extension): counts and cumulative times in ns."""
    return JSONResponse(statistics(runtime.metrics, [served.name]))


@model_and_version_get(
    "/ready",
    response_model=V2ModelReady,
    responses={**errors(404, v2=True), 503: {"model": V2ModelReady, "description": "not ready"}},
)
async def model_ready(served: ModelDep, runtime: RuntimeDep) -> JSONResponse:
    """Model readiness: 200 when it takes requests, else 503."""
    ok = runtime.ready
    return JSONResponse({"name": served.name, "ready": ok}, status_code=200 if ok else 503)


@router.post(
    "/models/{name}/infer",
    response_model=V2InferResponse,
    responses={**errors(400, 404, 413, 415, 422, 503, 504, v2=True), 200: BINARY_RESPONSE},
    openapi_extra={**INFER_BODY, **path_parameters("name")},
)  # fmt: skip
async def infer(request: Request) -> Response:
    """Run inference on a batch of 28x28 images (white digit on black), or of encoded pictures."""
    # The hot route takes no FastAPI parameters, as predict (see pipeline.serving).
    started = time.monotonic()
    runtime, served = serving(request)
    settings = runtime.settings
    body = decompress(await request.body(), request.headers.get("content-encoding"), settings.max_body_bytes)
    header_length = request.headers.get(HEADER_LENGTH)
    if len(body) <= INLINE_MAX_BYTES:  # small tensors parse faster here than through a thread hop
        parsed = parse_request(body, header_length, settings.max_batch_images)
    else:
        parsed = await runtime.run_cpu(parse_request, body, header_length, settings.max_batch_images)
    tensors = await infer_tensors(request, runtime, served, parsed.images, parsed.encoded, started)
    payload, headers = encode_response(served.name, parsed, tensors)
    return Response(payload, headers=headers)


# Inference under /versions/{version} too (the hot route takes no FastAPI parameters: checked inline).


@router.post(
    "/models/{name}/versions/{version}/infer",
    response_model=V2InferResponse,
    responses={**errors(400, 404, 413, 415, 422, 503, 504, v2=True), 200: BINARY_RESPONSE},
    openapi_extra={**INFER_BODY, **path_parameters("name", "version")},
)
async def version_infer(request: Request) -> Response:
    """Run inference (version 1)."""
    await known_version(request.path_params["version"])
    return await infer(request)
