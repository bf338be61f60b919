"""Prometheus metrics endpoint."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from ..deps import RuntimeDep

router = APIRouter(tags=["metrics"])


@router.get("/metrics", response_class=Response, responses={200: {"content": {CONTENT_TYPE_LATEST: {}}}})
async def metrics(runtime: RuntimeDep) -> Response:
    """Prometheus text format: requests, queue and compute time, batch sizes, pending images."""
    return Response(generate_latest(runtime.metrics.registry), media_type=CONTENT_TYPE_LATEST)
