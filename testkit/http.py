"""Request bodies and raw HTTP/1.1 exchanges, both built and parsed by libraries (httpx, h11).

The raw exchange is for tests that need the socket in their own hands: clients that hang up while
queued, a batch of requests written before any answer is read, bursts on fresh connections.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass

import h11
import httpx


def multipart_body(
    parts: list[tuple[str, str, bytes, str]], boundary: str | None = None
) -> tuple[bytes, str]:
    """(field, filename, content, content type) parts -> (multipart/form-data body, its Content-Type),
    encoded by httpx; a fixed `boundary` lets a test send a body that disagrees with its header."""
    headers = {"Content-Type": f"multipart/form-data; boundary={boundary}"} if boundary else {}
    files = [(field, (filename, content, ctype)) for field, filename, content, ctype in parts]
    request = httpx.Request("POST", "http://multipart.invalid/", files=files, headers=headers)
    return request.read(), request.headers["Content-Type"]


@dataclass
class Answer:
    """One HTTP answer read off a raw connection (header names lower-case)."""

    status: int
    headers: dict[str, str]
    body: bytes

    def json(self):  # type: ignore[no-untyped-def]
        return json.loads(self.body)


def _request_events(method: str, path: str, body: bytes, content_type: str | None) -> list:
    headers = [("Host", "127.0.0.1"), ("Connection", "close"), ("Content-Length", str(len(body)))]
    if content_type:
        headers.append(("Content-Type", content_type))
    return [h11.Request(method=method, target=path, headers=headers), h11.Data(data=body), h11.EndOfMessage()]


def wire_request(method: str, path: str, body: bytes = b"", content_type: str | None = None) -> bytes:
    """The bytes of one request (Connection: close), to write on a connection of one's own."""
    client = h11.Connection(h11.CLIENT)
    return b"".join(client.send(event) or b"" for event in _request_events(method, path, body, content_type))


async def read_answer(reader: asyncio.StreamReader, method: str = "POST") -> Answer:
    """Read one response to a request made with `wire_request` (`method` as sent) from a stream."""
    client = h11.Connection(h11.CLIENT)
    for event in _request_events(method, "/", b"", None):  # h11 reads an answer only to a request it sent:
        client.send(event)  # replay one (the real bytes went out already; only the state matters)
    status, headers, body = 0, {}, bytearray()
    while True:
        event = client.next_event()
        if event is h11.NEED_DATA:
            client.receive_data(await reader.read(65536))
        elif isinstance(event, h11.Response):
            status = event.status_code
            headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in event.headers}
        elif isinstance(event, h11.Data):
            body += event.data
        elif isinstance(event, h11.EndOfMessage):
            return Answer(status, headers, bytes(body))
        elif isinstance(event, h11.ConnectionClosed):
            raise ConnectionResetError("the server closed the connection before answering in full")


async def send_request(port: int, payload: bytes, timeout: float) -> Answer:
    """Write `payload` (from `wire_request`) on a fresh connection to 127.0.0.1 and read the answer."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(payload)
        await writer.drain()
        return await asyncio.wait_for(read_answer(reader), timeout)
    finally:
        writer.close()
