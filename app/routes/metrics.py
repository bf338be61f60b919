"""Prometheus metrics endpoint."""

from __future__ import annotations

import gzip

from fastapi import APIRouter, Request
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST

from ..deps import RuntimeDep
from ..metrics import exposition

router = APIRouter(tags=["metrics"])


@router.get("/metrics", response_class=Response, responses={200: {"content": {CONTENT_TYPE_LATEST: {}}}})
async def metrics(request: Request, runtime: RuntimeDep) -> Response:
    """Prometheus text format: requests, queue and compute time, batch sizes, pending images. Gzipped
    when the scraper accepts it, as Prometheus does (tens of kB of text, under a tenth of that gzipped)."""
    body = exposition(runtime.metrics)
    if "gzip" not in request.headers.get("accept-encoding", "").lower():
        return Response(body, media_type=CONTENT_TYPE_LATEST, headers={"Vary": "Accept-Encoding"})
    headers = {"Content-Encoding": "gzip", "Vary": "Accept-Encoding"}
    return Response(gzip.compress(body, compresslevel=6), media_type=CONTENT_TYPE_LATEST, headers=headers)
