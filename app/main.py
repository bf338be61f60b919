"""The FastAPI application: ``create_app(settings)`` and the module-level ``app`` for uvicorn.

``python -m app`` runs it in several worker processes beside one engine (app.supervisor); plain
``uvicorn app.main:app`` runs one process with its own engine on a thread. Creating the app loads
nothing; the lifespan connects to the engine (or starts one).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import Response
from fastapi_offline import FastAPIOffline
from starlette.requests import ClientDisconnect

from . import __version__
from .access import RequestIdMiddleware
from .aliases import AliasesMiddleware
from .errors import ClientDisconnected, install_error_handlers
from .limits import BodyLimitMiddleware
from .logs import LogFormat, handler
from .metrics import Metrics, MetricsMiddleware
from .openapi import install_openapi
from .routes import attention, health, metrics, models, page, read, v2
from .runtime import Runtime
from .settings import Settings, get_settings

log = logging.getLogger("app")
DOCS_ASSETS = "/docs-assets"


def _configure_logging(level: str, fmt: LogFormat) -> None:
    """Level for the app's loggers; a handler only when nobody configured logging (plain uvicorn)."""
    logger = logging.getLogger("app")
    logger.setLevel(level)
    if not logger.handlers and not logging.getLogger().handlers:
        logger.addHandler(handler(fmt))


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()
    _configure_logging(settings.log_level, settings.log_format)
    runtime = Runtime(settings, Metrics())
    runtime.metrics.process_starts.labels("worker").inc()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await runtime.start()
        grpc_server = None
        try:
            if settings.grpc_port:  # imported only then: grpc adds ~11 MB to a worker
                from .oip_grpc import server as oip_grpc

                grpc_server = await oip_grpc.start(runtime)
            yield
        finally:
            if grpc_server is not None:
                await grpc_server.stop(settings.shutdown_grace_s)  # calls in progress get the grace
            await runtime.shutdown()

    # /docs loads Swagger UI from this server (DOCS_ASSETS), not from a CDN: it works where the service
    # has no internet, as the demo page does. (ReDoc would still fetch its logo from its CDN: not served.)
    app = FastAPIOffline(
        static_url=DOCS_ASSETS,
        redoc_url=None,
        title="vit-digits",
        version=__version__,
        description="Handwritten digits with a from-scratch Vision Transformer and a CNN baseline: "
        "dynamic batching, attention maps and the Open Inference Protocol v2.",
        lifespan=lifespan,
    )
    app.state.runtime = runtime
    install_error_handlers(app)

    async def disconnected(request: object, exc: Exception) -> Response:
        return Response(status_code=499)  # nginx's "client closed request"; nobody reads it

    app.add_exception_handler(ClientDisconnected, disconnected)
    app.add_exception_handler(ClientDisconnect, disconnected)  # left while we were reading the body
    for module in (health, models, read, attention, v2, metrics, page):
        app.include_router(module.router)
    app.mount("/static", page.static_files(), name="static")
    install_openapi(app)

    # Added last = outermost: request IDs and metrics see every response, CORS decorates the 413s too;
    # HEAD reaches the routes as GET, and a path with a trailing slash as the route without it.
    app.add_middleware(AliasesMiddleware)
    app.add_middleware(
        BodyLimitMiddleware, max_bytes=settings.max_body_bytes, idle_timeout_s=settings.body_idle_timeout_s,
        budget=runtime.body_budget,
    )  # fmt: skip
    if settings.cors_origins:
        app.add_middleware(
            CORSMiddleware, allow_origins=settings.cors_origins, allow_methods=["GET", "POST"],
            allow_headers=["*"],
            expose_headers=["Retry-After", "X-Digit", "X-Confidence", "X-Request-ID"],
        )  # fmt: skip
    app.add_middleware(MetricsMiddleware, metrics=runtime.metrics)
    app.add_middleware(RequestIdMiddleware, access_log=settings.access_log)  # every response, 413s too
    return app


app = create_app()
