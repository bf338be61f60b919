"""Requests answered as the request they stand for, in one layer before routing:
- HEAD as GET, without the body (RFC 9110, 9.3.2): `curl -I`, link checkers and load balancers' probes
  send it, and FastAPI's GET routes do not take it;
- a path with a trailing slash as the route without it (``.../predict/`` as ``.../predict``): not the
  empty 307 redirect FastAPI sends by default, which curl shows as nothing and httpx does not follow."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send


class AliasesMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        head, path = scope["method"] == "HEAD", scope["path"]
        slashed = len(path) > 1 and path.endswith("/")
        if not (head or slashed):
            await self.app(scope, receive, send)
            return
        inner = dict(scope)
        if slashed:
            inner["path"] = path.rstrip("/") or "/"
            raw = scope.get("raw_path")
            if isinstance(raw, bytes):
                inner["raw_path"] = raw.rstrip(b"/") or b"/"
        if head:
            inner["method"] = "GET"

            async def headers_only(message: Message) -> None:
                if message["type"] == "http.response.body":
                    if message.get("more_body", False):
                        return
                    message = {"type": "http.response.body", "body": b"", "more_body": False}
                await send(message)

        try:
            await self.app(inner, receive, headers_only if head else send)
        finally:  # the matched route, for the metrics' label
            if "route" in inner:
                scope["route"] = inner["route"]
