"""Prometheus metrics endpoint."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST

from ..deps import RuntimeDep
from ..metrics import exposition

router = APIRouter(tags=["metrics"])


@router.get("/metrics", response_class=Response, responses={200: {"content": {CONTENT_TYPE_LATEST: {}}}})
async def metrics(runtime: RuntimeDep) -> Response:
    """Prometheus text format: requests, queue and compute time, batch sizes, pending images."""
    return Response(exposition(runtime.metrics), media_type=CONTENT_TYPE_LATEST)
