"""A path with a trailing slash answered as the route without it (``.../predict/`` as ``.../predict``):
a client that adds one gets the answer, not the empty 307 redirect FastAPI sends by default, which curl
shows as nothing and httpx does not follow."""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send


class TrailingSlashMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] not in ("http", "websocket") or len(path) < 2 or not path.endswith("/"):
            await self.app(scope, receive, send)
            return
        raw = scope.get("raw_path")
        inner = {**scope, "path": path.rstrip("/") or "/"}
        if isinstance(raw, bytes):
            inner["raw_path"] = raw.rstrip(b"/") or b"/"
        try:
            await self.app(inner, receive, send)
        finally:  # the matched route, for the metrics' label
            if "route" in inner:
                scope["route"] = inner["route"]
