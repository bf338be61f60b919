"""Liveness, readiness, the service summary and the no-op benchmark endpoint."""

from __future__ import annotations

import os

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from ..deps import RuntimeDep
from ..schemas import Health, Live, Noop, Ready

router = APIRouter(tags=["health"])


@router.get("/health", response_model=Health)
async def health(runtime: RuntimeDep) -> JSONResponse:
    """Service status, device and served models."""
    return JSONResponse(
        {
            "status": runtime.status,
            "ready": runtime.ready,
            "device": runtime.device,
            "models": list(runtime.models),
            "worker_pid": os.getpid(),
        }
    )


@router.get("/v2/health/live", response_model=Live)
async def live() -> JSONResponse:
    """Liveness: the process answers."""
    return JSONResponse({"live": True})


@router.get(
    "/v2/health/ready", response_model=Ready, responses={503: {"model": Ready, "description": "not ready"}}
)
async def ready(runtime: RuntimeDep) -> JSONResponse:
    """Readiness: models loaded and warmed up, not draining."""
    if runtime.ready:
        return JSONResponse({"ready": True})
    return JSONResponse({"ready": False, "reason": runtime.not_ready_reason}, status_code=503)


@router.get("/v1/noop", response_model=Noop, tags=["benchmark"])
async def noop() -> JSONResponse:
    """No model, no batching: the HTTP stack's ceiling for benchmarks."""
    return JSONResponse({"ok": True})


@router.post("/v1/noop", response_model=Noop, tags=["benchmark"])
async def noop_post() -> JSONResponse:
    """No model, no batching, body not read: the HTTP stack's ceiling for benchmarks."""
    return JSONResponse({"ok": True})
