"""Service errors and the handlers that turn them into JSON (v1: {"detail"}, v2: {"error"})."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match, Mount

log = logging.getLogger(__name__)


class ServiceError(Exception):
    """An error with an HTTP status and a message meant for the client."""

    status_code = 400

    def __init__(self, message: str, status_code: int | None = None, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.message = message
        if status_code is not None:
            self.status_code = status_code
        self.headers = headers


class BadImage(ServiceError):
    status_code = 400


class UnsupportedMediaType(ServiceError):
    status_code = 415


class PayloadTooLarge(ServiceError):
    status_code = 413


class NoInk(ServiceError):
    status_code = 422


class InvalidInput(ServiceError):
    status_code = 422


class ModelNotFound(ServiceError):
    status_code = 404


class NotSupported(ServiceError):
    """A request this service understands and never serves (Triton's model loading): 405, allowing no
    method on the resource (a client's request, so not a 5xx; gRPC: UNIMPLEMENTED)."""

    status_code = 405

    def __init__(self, message: str):
        super().__init__(message, headers={"Allow": ""})


class Unavailable(ServiceError):
    """Not ready, draining, or the queue is full: the client may retry later."""

    status_code = 503

    def __init__(self, message: str, retry_after_s: int = 1):
        super().__init__(message, headers={"Retry-After": str(retry_after_s)})


class DeadlineExceeded(ServiceError):
    status_code = 504


class ClientDisconnected(Exception):
    """The client went away; nothing is sent back."""


def is_v2(request: Request) -> bool:
    return is_v2_path(request.url.path)


def is_v2_path(path: str) -> bool:
    """Open Inference Protocol routes answer errors as ``{"error": ...}``, the others ``{"detail": ...}``."""
    return path.startswith("/v2")


def error_response(
    request: Request, status: int, message: object, headers: dict | None = None
) -> JSONResponse:
    body = {"error": str(message)} if is_v2(request) else {"detail": message}
    return JSONResponse(body, status_code=status, headers=headers)


async def _service_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ServiceError)
    return error_response(request, exc.status_code, exc.message, exc.headers)


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    headers = getattr(exc, "headers", None)
    if exc.status_code == 405 and (allowed := _allowed_methods(request)):
        headers = {**(headers or {}), "Allow": allowed}
    return error_response(request, exc.status_code, exc.detail, headers)


def _allowed_methods(request: Request) -> str:
    """Every method some route serves at the request's path (Starlette's 405 names those of the first
    route that matched the path only), HEAD wherever GET is (``app.aliases`` answers it)."""
    routes = request.app.router.routes
    if any(isinstance(r, Mount) and r.matches(request.scope)[0] is not Match.NONE for r in routes):
        return "GET, HEAD"  # static files (a Mount matches any method)
    methods = {
        method
        for method in ("GET", "POST", "PUT", "PATCH", "DELETE")
        if any(r.matches({**request.scope, "method": method})[0] is Match.FULL for r in routes)
    }
    if "GET" in methods:
        methods.add("HEAD")
    return ", ".join(sorted(methods))


def validation_text(errors: Sequence[Mapping[str, Any]], most: int | None = None) -> str:
    """pydantic's errors as one line, "loc: msg; ...": the first ``most`` of them, and how many more."""
    shown = errors if most is None else errors[:most]
    text = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'body'}: {e['msg']}" for e in shown)
    return text + (f"; {len(errors) - len(shown)} more error(s)" if len(errors) > len(shown) else "")


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = [
        {k: v for k, v in e.items() if k in ("type", "loc", "msg")}  # no echo of the (maybe huge) input
        for e in exc.errors()
    ]
    if is_v2(request):
        return error_response(request, 400, validation_text(errors))
    return JSONResponse({"detail": errors}, status_code=422)


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    # Answered outside the middleware that adds the request's ID to its response: added here.
    rid = getattr(request.state, "request_id", "")
    log.exception("unhandled error on %s %s (id=%s)", request.method, request.url.path, rid, exc_info=exc)
    return error_response(request, 500, "internal server error", {"X-Request-ID": rid} if rid else None)


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(ServiceError, _service_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(Exception, _unexpected)
