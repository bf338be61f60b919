"""HEAD answered as GET would be, without the body (RFC 9110, 9.3.2): `curl -I`, link checkers and load
balancers' probes send it, and FastAPI's GET routes do not take it."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send


class HeadAsGetMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return

        async def headers_only(message: Message) -> None:
            if message["type"] == "http.response.body":
                if message.get("more_body", False):
                    return
                message = {"type": "http.response.body", "body": b"", "more_body": False}
            await send(message)

        inner = {**scope, "method": "GET"}
        try:
            await self.app(inner, receive, headers_only)
        finally:  # the matched route, for the metrics' label
            if "route" in inner:
                scope["route"] = inner["route"]
