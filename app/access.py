"""Request IDs and the access log. Every response carries ``X-Request-ID``: the client's own, when it
sent a sane one (a proxy's or a tracing system's), else a new one. The access log writes one line per
request with that ID, the method, path, status and duration: for the requests ``ACCESS_LOG`` selects
(``errors``, the default: status 400 and up; ``all``; ``off``). An overloaded service answers thousands of
503s a second: ``errors`` writes at most ERROR_LINES_PER_S of them per worker and says how many it left
out, so that the log does not add to the load (the metrics count every one)."""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Callable
from typing import Literal

from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger("app.access")

HEADER = b"x-request-id"
SANE_ID = re.compile(rb"[A-Za-z0-9._:/+=@-]{1,128}")  # what a log line or a header can carry as it is

AccessLog = Literal["off", "errors", "all"]
ERROR_LINES_PER_S = 50


def request_id(sent: bytes | None) -> str:
    """The client's own ID when it sent a sane one, else a new one."""
    return sent.decode() if sent is not None and SANE_ID.fullmatch(sent) else os.urandom(8).hex()


def _sent_id(scope: Scope) -> bytes | None:
    for name, value in scope["headers"]:
        if name == HEADER:
            return value
    return None


class AccessLine:
    """Which requests get an access line (``ACCESS_LOG``), error lines held to ERROR_LINES_PER_S a
    second with a count of those left out; one per protocol server of a worker (HTTP, gRPC)."""

    def __init__(self, access_log: AccessLog = "errors", clock: Callable[[], float] = time.monotonic) -> None:
        self.access_log = access_log
        self.clock = clock
        self._second, self._lines, self._left_out = 0, 0, 0  # the error lines of the current second

    def wanted(self, status: int) -> bool:
        return self.access_log == "all" or (self.access_log == "errors" and status >= 400 and self._room())

    def _room(self) -> bool:
        """Whether this second has room for another error line (and the last one's tally said)."""
        second = int(self.clock())
        if second != self._second:
            if self._left_out:
                log.warning(
                    "access log: %d error lines over %d in one second left out", self._left_out,
                    ERROR_LINES_PER_S, extra={"left_out": self._left_out},
                )  # fmt: skip
            self._second, self._lines, self._left_out = second, 0, 0
        if self._lines >= ERROR_LINES_PER_S:
            self._left_out += 1
            return False
        self._lines += 1
        return True


class RequestIdMiddleware:
    """Pure ASGI: names the request (``scope["state"]["request_id"]``, which handlers read as
    ``request.state.request_id``), adds the header to its response and writes its access line."""

    def __init__(
        self, app: ASGIApp, access_log: AccessLog = "errors", clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.app = app
        self.lines = AccessLine(access_log, clock)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rid = request_id(_sent_id(scope))
        scope.setdefault("state", {})["request_id"] = rid
        start = time.perf_counter()
        status = 500  # nothing sent: the server failed before answering

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message = {**message, "headers": [*message.get("headers", ()), (HEADER, rid.encode())]}
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            if self.lines.wanted(status):
                client = scope.get("client")
                write(scope["method"], scope["path"], status, 1000 * (time.perf_counter() - start), rid,
                      client[0] if client else None)  # fmt: skip


def write(method: str, path: str, status: int, ms: float, rid: str, client: str | None) -> None:
    """One access line: a warning for a server error, else info."""
    fields = {
        "request_id": rid, "method": method, "path": path, "status": status, "duration_ms": round(ms, 2),
        "client": client,
    }  # fmt: skip
    log.log(
        logging.WARNING if status >= 500 else logging.INFO,
        "%s %s %d %.1f ms id=%s", method, path, status, ms, rid, extra=fields,
    )  # fmt: skip
