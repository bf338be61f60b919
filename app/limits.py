"""Limits on what clients may hold: body size (Content-Length and bytes actually received), the request
bodies one worker holds at once, a deadline for the request head, and an idle timeout while a body is
uploading."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sys
from collections.abc import Iterator
from http import HTTPStatus
from typing import Any

from prometheus_client import Gauge
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .access import HEADER, request_id
from .errors import PayloadTooLarge, ServiceError, Unavailable, is_v2_path

log = logging.getLogger("app.http")


class BodyBudget:
    """The request bytes one worker holds at once (MAX_BODY_BYTES_IN_FLIGHT): HTTP bodies and gRPC
    messages together, until they are answered; ``held`` is shown as vit_digits_request_body_bytes."""

    def __init__(self, limit: int, gauge: Gauge) -> None:
        self.limit = limit
        self.held = 0
        self.gauge = gauge
        self._freed: asyncio.Event | None = None  # set (and dropped) when bytes are given back

    def fits(self, n: int) -> bool:
        return self.held + n <= self.limit

    def hold(self, n: int) -> None:
        if n:
            self.held += n
            self.gauge.set(self.held)

    def release(self, n: int) -> None:
        if n:
            self.held -= n
            self.gauge.set(self.held)
            if self._freed is not None:  # wake whoever waits for room
                self._freed.set()
                self._freed = None

    @contextlib.contextmanager
    def holding(self, n: int) -> Iterator[None]:
        """Hold ``n`` bytes for the block, or refuse with 503 (Retry-After) when they do not fit."""
        if not self.fits(n):
            raise Unavailable(self.busy())
        self.hold(n)
        try:
            yield
        finally:
            self.release(n)

    async def room_for(self, n: int) -> None:
        """Wait until ``n`` bytes fit (or nothing else is held: one message may be the whole budget)."""
        while self.held and not self.fits(n):
            if self._freed is None:
                self._freed = asyncio.Event()
            await self._freed.wait()

    def busy(self) -> str:
        return (
            f"this worker holds {self.held} bytes of requests (MAX_BODY_BYTES_IN_FLIGHT {self.limit}); "
            "retry shortly"
        )


class BodyLimitMiddleware:
    """A declared Content-Length over the limit is refused before reading; a chunked body is cut
    off as soon as it crosses the limit (the reading route gets PayloadTooLarge -> 413).

    The bodies of all requests in this worker share one budget (``BodyBudget``, with its gRPC
    messages), so that a per-request limit large enough for a phone photo does not let a crowd of them
    exhaust memory: a request is charged its declared length before anything is read (or its bytes as
    they arrive, when chunked) until it has been answered; one that does not fit gets 503 + Retry-After."""

    def __init__(
        self, app: ASGIApp, max_bytes: int, budget: BodyBudget, idle_timeout_s: float = 10.0
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.budget = budget
        self.idle_timeout_s = idle_timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.max_bytes:
            await _reject(
                scope, send, f"request body of {declared} bytes exceeds the limit of {self.max_bytes}"
            )
            return
        budget = self.budget
        if declared and not budget.fits(declared):
            await _reject(scope, send, budget.busy(), 503, ((b"retry-after", b"1"),))
            return
        charged = declared or 0
        budget.hold(charged)
        received = 0
        limit = self.max_bytes

        idle = self.idle_timeout_s
        complete = False

        async def limited_receive() -> Message:
            nonlocal received, complete, charged
            if complete:  # after the body: only the disconnect is left, which may take any time
                return await receive()
            try:  # a slow link that keeps sending is fine; one that stops is cut off
                async with asyncio.timeout(idle):  # no Task per chunk, unlike wait_for
                    message = await receive()
            except TimeoutError:
                raise BodyTimeout(f"the request body made no progress for {idle:g} s") from None
            complete = message["type"] != "http.request" or not message.get("more_body", False)
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise PayloadTooLarge(f"request body exceeds the limit of {limit} bytes")
                if received > charged:  # chunked: charged as it arrives
                    budget.hold(received - charged)
                    charged = received
                    if budget.held > budget.limit:
                        raise Unavailable(budget.busy())
            return message

        try:
            await self.app(scope, limited_receive, send)
        finally:
            budget.release(charged)


class BodyTimeout(ServiceError):
    status_code = 408


def guarded_http_protocol(header_timeout_s: float, max_connections: int, max_head_bytes: int) -> type:
    """uvicorn's HTTP protocol with guards against slow and hostile clients, four jobs in one class (each
    is a few lines in uvicorn's callbacks):

    - a deadline for each request head (a client that opens a connection, or starts a request, and
      never finishes its headers is disconnected);
    - a size limit for each request head, checked before the parser sees the bytes: past it the URL
      gets 414, the headers 431 (httptools grows a header value one piece at a time, so an endless one
      had held the worker's event loop for seconds);
    - a cap on open connections and running requests per worker: past it a request gets our JSON 503
      with Retry-After (uvicorn's own ``limit_concurrency`` answers in plain text, without it);
    - a request the parser refuses gets a JSON 400 naming what it found wrong (uvicorn's is plain text,
      "Invalid HTTP request received.")."""
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    class GuardedHttpProtocol(HttpToolsProtocol):
        url = b""  # uvicorn sets it when a message begins: blank lines alone never begin one
        _head_timer: Any = None
        _in_head = True  # between requests or inside a head: what arrives counts against max_head_bytes
        _head_bytes = 0
        _heads_done = 0
        _line_done = False  # the head's request line (method, URL, version) has ended

        def _arm(self) -> None:
            self._disarm()
            self._head_timer = self.loop.call_later(header_timeout_s, self._head_expired)

        def _disarm(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None

        def _head_expired(self) -> None:
            if not self.transport.is_closing():
                self.transport.close()

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            room = max(max_head_bytes - self._head_bytes, 0)
            if self._in_head and len(data) > room:
                done = self._heads_done
                if room:
                    self._parse(data[:room])
                if self.transport.is_closing() or self.transport.get_protocol() is not self:
                    return  # answered, or handed to the websocket protocol
                if self._in_head and self._heads_done == done:  # this head filled its room
                    self._refuse_head()
                    return
                data = data[room:]
            self._parse(data)

        def _parse(self, data: bytes) -> None:
            # A head awaited or in progress when ``data`` came, and still in progress after it: all of
            # ``data`` counts. A head that begins inside ``data`` after another request's head or body
            # (pipelining, keep-alive) is counted from the next read on: at most one read's worth more.
            counted, heads = self._in_head, self._heads_done
            super().data_received(data)
            if self._in_head and counted and self._heads_done == heads:
                self._head_bytes += len(data)
                self._line_done = self._line_done or b"\n" in data

        def _refuse_head(self) -> None:
            if self._line_done:
                self.send_json(431, f"request headers larger than MAX_HEAD_BYTES ({max_head_bytes} bytes)")
            else:
                self.send_json(414, f"URL longer than MAX_HEAD_BYTES ({max_head_bytes} bytes)")

        def send_400_response(self, msg: str) -> None:
            """uvicorn calls this inside its ``except httptools.HttpParserError``: say what it was. An
            exception from a parser callback (httptools keeps it as the context) is ours, not the
            client's: logged, and a 500."""
            exc = sys.exc_info()[1]
            cause = exc.__context__ if exc is not None else None
            if cause is not None:
                log.error("reading an HTTP request failed", exc_info=cause)
                self.send_json(500, "the server failed to read this request")
            else:
                self.send_json(400, f"malformed HTTP request: {exc or msg}")

        def send_json(self, status: int, message: str) -> None:
            """Answer ``{"detail": message}`` (``error`` on /v2 paths) with the request's ID (the client's
            when its header was read, else a new one) and close, outside any app."""
            if self._in_head and self.cycle is not None and not self.cycle.response_complete:
                self.transport.close()  # an earlier pipelined request's answer is due first: no answer fits
                return
            if self._in_head:  # the path as far as it came (uvicorn sets the scope's once the head is in)
                path = self.url.split(b"?", 1)[0].decode("latin-1")
            else:
                path = self.scope["path"]
            body = json.dumps({"error" if is_v2_path(path) else "detail": message}).encode()
            sent = next((v for n, v in self.headers or () if n == HEADER), None)  # as far as it was read
            head = [f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n".encode()]
            head += [name + b": " + value + b"\r\n" for name, value in self.server_state.default_headers]
            head.append(HEADER + b": " + request_id(sent).encode() + b"\r\n")
            head.append(f"content-type: application/json\r\ncontent-length: {len(body)}\r\n".encode())
            self.transport.write(b"".join(head) + b"connection: close\r\n\r\n" + body)
            self.transport.close()

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._in_head, self._line_done = True, False

        def on_headers_complete(self) -> None:
            self._disarm()
            self._in_head, self._head_bytes = False, 0
            self._heads_done += 1
            if len(self.connections) > max_connections or len(self.tasks) >= max_connections:
                served, self.app = self.app, _over_capacity  # the cycle built next runs this app
                try:
                    super().on_headers_complete()
                finally:
                    self.app = served
            else:
                super().on_headers_complete()

        def on_message_complete(self) -> None:
            super().on_message_complete()
            self._in_head = True  # what comes next on this connection is the next head (counted from 0)
            if self.cycle is not None and self.cycle.response_complete and not self.transport.is_closing():
                self._arm()  # answered before its body was in (an early 404): the next head's deadline

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                # The next head on this keep-alive connection gets its own deadline. The rest of an
                # unread body may still come first: it is no head (``_in_head`` waits for its end).
                self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

    return GuardedHttpProtocol


async def _over_capacity(scope: Scope, receive: Receive, send: Send) -> None:
    message = "too many open connections to this worker; retry shortly"
    await _reject(scope, send, message, 503, ((b"retry-after", b"1"),))


def _content_length(scope: Scope) -> int | None:
    for key, value in scope["headers"]:
        if key == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def _reject(
    scope: Scope, send: Send, message: str, status: int = 413, headers: tuple[tuple[bytes, bytes], ...] = ()
) -> None:
    key = "error" if is_v2_path(scope.get("path", "")) else "detail"
    await _send_json(send, status, {key: message}, headers)


async def _send_json(
    send: Send, status: int, doc: dict, headers: tuple[tuple[bytes, bytes], ...] = ()
) -> None:
    """A JSON answer sent before (or instead of) the app; the connection closes after it."""
    body = json.dumps(doc).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
