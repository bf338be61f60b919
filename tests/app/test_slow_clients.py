"""Slow and hostile clients against the real process tree (`python -m app`, one worker): a request head
that never completes is cut off, an upload that stalls gets 408, a slow upload that keeps making progress
is served, and past MAX_CONNECTIONS a request gets a JSON 503 with Retry-After.

The pauses below are the clients' own pacing (a slow link), not waits for the server; every wait for the
server is a blocking read with a generous timeout.
"""

from __future__ import annotations

import io
import json
import socket
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager

import pytest
from PIL import Image

from testkit.server import ServiceProcess

from .conftest import CNN

READ_TIMEOUT_S = 30.0  # an upper bound on a blocking read; the behaviour, not the speed, is asserted


@contextmanager
def connect(port: int) -> Iterator[socket.socket]:
    with closing(socket.create_connection(("127.0.0.1", port), timeout=READ_TIMEOUT_S)) as sock:
        yield sock


def read_response(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """One HTTP/1.1 response with a Content-Length (all of ours have one)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"connection closed before a response head: {data!r}"
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines)}
    while len(body) < int(headers.get("content-length", 0)):
        chunk = sock.recv(65536)
        assert chunk, "connection closed inside the body"
        body += chunk
    return int(status_line.split()[1]), headers, body


def closed_by_server(sock: socket.socket) -> bool:
    """Block until the server closes the connection (True) or READ_TIMEOUT_S passes (False)."""
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def digit_png() -> bytes:
    img = Image.new("L", (28, 28), 0)
    img.paste(255, (12, 4, 16, 24))  # a "1"; any picture with ink will do here
    out = io.BytesIO()
    img.save(out, format="PNG")
    return out.getvalue()


def predict_head(port: int, length: int) -> bytes:
    return (
        f"POST /v1/models/{CNN}/predict HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Content-Type: image/png\r\nContent-Length: {length}\r\n\r\n"
    ).encode()


def get(port: int, path: str) -> tuple[int, dict[str, str], bytes]:
    with connect(port) as sock:
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
        return read_response(sock)


@pytest.fixture(scope="module")
def strict(test_store) -> Iterator[ServiceProcess]:
    """One worker whose request heads and stalled bodies time out after 1 s."""
    env = {"MODEL_STORE_DIR": str(test_store), "DEVICE": "cpu", "TORCH_THREADS": "1",
           "HEADER_TIMEOUT_S": "1", "BODY_IDLE_TIMEOUT_S": "1"}  # fmt: skip
    with ServiceProcess(env, workers=1) as server:
        yield server


def test_an_unfinished_request_head_is_cut_off(strict):
    server = strict
    with connect(server.port) as silent, connect(server.port) as half:
        half.sendall(b"GET /v2/health/live HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # never the blank line
        assert closed_by_server(half), "a half-sent request head was kept open"
        assert closed_by_server(silent), "a connection that never sent anything was kept open"
    assert get(server.port, "/v2/health/live")[0] == 200  # the worker still serves everyone else


def test_a_stalled_upload_gets_408(strict):
    server = strict
    body = digit_png()
    with connect(server.port) as sock:
        sock.sendall(predict_head(server.port, len(body)) + body[:2])  # then nothing more
        status, headers, payload = read_response(sock)
    assert status == 408
    assert headers["content-type"] == "application/json"
    assert "no progress" in json.loads(payload)["detail"]


def test_a_slow_upload_that_keeps_sending_is_served(strict):
    server = strict
    body = digit_png()
    pieces = [body[i : i + max(1, len(body) // 8)] for i in range(0, len(body), max(1, len(body) // 8))]
    head = predict_head(server.port, len(body))
    with connect(server.port) as sock:
        for i in range(0, len(head), 16):  # the head arrives in pieces too (within its deadline)
            sock.sendall(head[i : i + 16])
            time.sleep(0.4 / (len(head) / 16))
        for piece in pieces:  # ~3 s in all, longer than both timeouts, never idle for 1 s
            time.sleep(0.4)
            sock.sendall(piece)
        status, _, payload = read_response(sock)
    assert status == 200, payload
    assert json.loads(payload)["digit"] in range(10)


def test_past_max_connections_a_request_gets_a_json_503(start_server):
    server = start_server(workers=1, MAX_CONNECTIONS="3", HEADER_TIMEOUT_S="60")
    idle = [socket.create_connection(("127.0.0.1", server.port), timeout=READ_TIMEOUT_S) for _ in range(3)]
    try:
        # a request on each idle connection proves the worker has accepted all three
        for sock in idle:
            sock.sendall(b"GET /v2/health/live HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            assert read_response(sock)[0] == 200
        status, headers, body = get(server.port, "/v2/health/live")
        assert status == 503
        assert headers["content-type"] == "application/json"
        assert headers["retry-after"] == "1"
        assert "too many open connections" in json.loads(body)["error"]  # /v2's error key
        status, _, body = get(server.port, "/v1/models")
        assert status == 503
        assert "too many open connections" in json.loads(body)["detail"]
    finally:
        for sock in idle:
            sock.close()
    for _ in range(100):  # the worker notices the closed sockets on its own schedule
        if get(server.port, "/v2/health/live")[0] == 200:
            break
        time.sleep(0.05)
    else:
        raise AssertionError("the worker still refuses after the idle connections closed")
