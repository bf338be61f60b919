"""Route dependencies (as Annotated aliases) and the await-with-disconnect helper."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Annotated, Any

import numpy as np
from fastapi import Depends, Request
from fastapi.exceptions import RequestValidationError

from .batcher import DynamicBatcher, Timing
from .errors import ClientDisconnected, DeadlineExceeded
from .inputs import read_payload
from .registry import ServedModel
from .runtime import Runtime
from .settings import Settings

# Dependencies are ``async def`` on purpose: FastAPI runs plain ``def`` ones in a thread pool,
# a thread hop (~0.1-0.2 ms) per dependency per request.


async def get_runtime(request: Request) -> Runtime:
    return request.app.state.runtime


RuntimeDep = Annotated[Runtime, Depends(get_runtime)]


async def get_settings_dep(runtime: RuntimeDep) -> Settings:
    return runtime.settings


SettingsDep = Annotated[Settings, Depends(get_settings_dep)]


async def get_model(name: str, runtime: RuntimeDep) -> ServedModel:
    """A loaded model for reading its card (works while draining)."""
    return runtime.model(name)


async def get_serving_model(name: str, runtime: RuntimeDep) -> ServedModel:
    """A loaded model that may take inference requests (503 while starting or draining)."""
    return runtime.model_for_inference(name)


ModelDep = Annotated[ServedModel, Depends(get_model)]
ServingModelDep = Annotated[ServedModel, Depends(get_serving_model)]


def serving(request: Request) -> tuple[Runtime, ServedModel]:
    """(runtime, model) for the hot inference routes, read straight off the request: FastAPI's
    dependency solving (path/query validation, four dependencies) took a quarter of the event loop's
    time per predict request. The routes document their parameters with ``openapi_extra``."""
    runtime: Runtime = request.app.state.runtime
    return runtime, runtime.model_for_inference(request.path_params["name"])


_TRUE = frozenset({"1", "on", "t", "true", "y", "yes"})  # pydantic's lax bool strings
_FALSE = frozenset({"0", "off", "f", "false", "n", "no"})


def query_flag(request: Request, name: str) -> bool:
    """A boolean query parameter (absent: False); anything else is a 422 like FastAPI's own."""
    if not request.scope.get("query_string"):
        return False
    value = request.query_params.get(name)
    if value is None:
        return False
    if value.lower() in _TRUE:
        return True
    if value.lower() in _FALSE:
        return False
    raise RequestValidationError(
        [{"type": "bool_parsing", "loc": ("query", name), "msg": "Input should be a valid boolean, "
          "unable to interpret input"}]
    )  # fmt: skip


def path_and_flag(flag: str, description: str) -> dict[str, Any]:
    """``openapi_extra`` parameters for a route that reads ``name`` and one flag by hand."""
    return {
        "parameters": [
            {"name": "name", "in": "path", "required": True, "schema": {"type": "string", "title": "Name"}},
            {"name": flag, "in": "query", "required": False, "description": description,
             "schema": {"type": "boolean", "default": False, "title": flag.replace("_", " ").title()}},
        ]
    }  # fmt: skip


async def arrival() -> float:
    return time.monotonic()


ArrivalDep = Annotated[float, Depends(arrival)]


async def _disconnected(request: Request) -> None:
    """Returns once the client has gone (call only after the body has been read)."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return


async def run_batched(
    request: Request, batcher: DynamicBatcher, xs: Sequence[np.ndarray], started: float, timeout_s: float
) -> list[tuple[Any, Timing]]:
    """Queue the images and wait for their results; a client that leaves cancels them (no compute).

    Hot path: one watcher task and one timer per request, no gather for a single image (an extra
    task, ``asyncio.wait`` and ``asyncio.timeout`` cost ~10% of the event loop's time per request).
    """
    futures = batcher.submit(xs, started + timeout_s)
    done: asyncio.Future = futures[0] if len(futures) == 1 else asyncio.gather(*futures)
    loop = asyncio.get_running_loop()
    why: list[type[Exception]] = []

    def stop(reason: type[Exception]) -> None:
        if not done.done():
            why.append(reason)
            done.cancel()

    watch = loop.create_task(_disconnected(request))
    watch.add_done_callback(lambda t: None if t.cancelled() else stop(ClientDisconnected))
    timer = loop.call_later(max(started + timeout_s - time.monotonic(), 0.0), stop, DeadlineExceeded)
    try:
        result = await done
    except asyncio.CancelledError:
        if why and why[0] is DeadlineExceeded:
            raise DeadlineExceeded(f"no answer from {batcher.name} within the request timeout") from None
        if why:
            raise ClientDisconnected() from None
        raise  # this request's own task was cancelled
    finally:
        timer.cancel()
        watch.cancel()
        for f in futures:  # on error or cancellation the rest is dropped before compute
            f.cancel()
    return [result] if len(futures) == 1 else list(result)


async def infer_upload(
    request: Request, runtime: Runtime, batcher: DynamicBatcher, started: float, *, many: bool
) -> tuple[list[np.ndarray], list[tuple[Any, Timing]]]:
    """Read the body, decode it (announced to the batcher, which waits for images on their way)
    and run it: the preprocessed inputs and one (result, timing) per image, in order."""
    payload = await read_payload(request, runtime.settings, many=many)
    with batcher.expect(payload.expected):
        xs = await runtime.decode(payload, many)
    results = await run_batched(request, batcher, xs, started, runtime.settings.request_timeout_s)
    return xs, results


def timing(results: Sequence[tuple[Any, Timing]], started: float) -> dict[str, float]:
    queue = max(t.queue_s for _, t in results)
    compute = max(t.compute_s for _, t in results)
    return {
        "queue_ms": round(queue * 1000, 3),
        "compute_ms": round(compute * 1000, 3),
        "total_ms": round((time.monotonic() - started) * 1000, 3),
        "batch_size": max(t.batch_size for _, t in results),
    }
