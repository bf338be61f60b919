"""Route dependencies (as Annotated aliases) and the await-with-disconnect helper."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Annotated, Any

import numpy as np
from fastapi import Depends, Request

from .batcher import DynamicBatcher, Timing
from .errors import ClientDisconnected
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
    """Queue the images and wait for their results; a client that leaves cancels them (no compute)."""
    work = asyncio.ensure_future(batcher.infer(xs, started + timeout_s))
    watch = asyncio.ensure_future(_disconnected(request))
    try:
        await asyncio.wait((work, watch), return_when=asyncio.FIRST_COMPLETED)
    finally:
        watch.cancel()
        if not work.done():
            work.cancel()
    if work.done() and not work.cancelled():
        return work.result()
    raise ClientDisconnected()


def timing(results: Sequence[tuple[Any, Timing]], started: float) -> dict[str, float]:
    queue = max(t.queue_s for _, t in results)
    compute = max(t.compute_s for _, t in results)
    return {
        "queue_ms": round(queue * 1000, 3),
        "compute_ms": round(compute * 1000, 3),
        "total_ms": round((time.monotonic() - started) * 1000, 3),
        "batch_size": max(t.batch_size for _, t in results),
    }
