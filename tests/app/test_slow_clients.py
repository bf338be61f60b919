"""Slow and hostile clients against the real process tree (`python -m app`, one worker): a request head
that never completes is cut off, an upload that stalls gets 408, a slow upload that keeps making progress
is served, past MAX_CONNECTIONS a request gets a JSON 503 with Retry-After, a head past MAX_HEAD_BYTES
gets 414 or 431, and a request the HTTP parser refuses gets a JSON 400 saying why.

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

import numpy as np
import pytest
from PIL import Image

from testkit.images import png_bytes
from testkit.server import ServiceProcess

from .conftest import CNN

READ_TIMEOUT_S = 30.0  # an upper bound on a blocking read; the behaviour, not the speed, is asserted
HEAD_LIMIT = 4096  # MAX_HEAD_BYTES of the strict server


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
    """One worker whose request heads and stalled bodies time out after 1 s, heads of 4 KiB at most."""
    env = {"MODEL_STORE_DIR": str(test_store), "DEVICE": "cpu", "TORCH_THREADS": "1", "HEADER_TIMEOUT_S": "1",
           "BODY_IDLE_TIMEOUT_S": "1", "MAX_HEAD_BYTES": str(HEAD_LIMIT)}  # fmt: skip
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


def exchange(port: int, request: bytes, pieces: int = 1) -> tuple[int, dict[str, str], bytes]:
    """Send ``request`` (in ``pieces``, as a slow or streaming client would) and read the answer."""
    with connect(port) as sock:
        step = -(-len(request) // pieces)
        try:
            for i in range(0, len(request), step):
                sock.sendall(request[i : i + step])
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered and closed before the rest arrived: read what it said
        return read_response(sock)


@pytest.mark.parametrize("pieces", [1, 40])
def test_a_request_head_past_max_head_bytes_gets_414_or_431(strict, pieces):
    server = strict
    long_url = f"GET /v2/health/live?q={'a' * HEAD_LIMIT} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode()
    status, headers, body = exchange(server.port, long_url, pieces)
    assert (status, headers["content-type"]) == (414, "application/json")
    assert "URL longer than MAX_HEAD_BYTES (4096 bytes)" in json.loads(body)["error"]  # a /v2 path
    assert len(headers["x-request-id"]) == 16  # a new one: no header was read
    # one endless header, or many: 431; the bytes may arrive at once or piece by piece
    one = f"GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Request-ID: mine\r\nX-Big: {'b' * HEAD_LIMIT}\r\n\r\n"
    many = "GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n" + "X-Pad: 0123456789\r\n" * 300 + "\r\n"
    for request in (one, many):
        status, headers, body = exchange(server.port, request.encode(), pieces)
        assert status == 431, body
        assert "request headers larger than MAX_HEAD_BYTES" in json.loads(body)["detail"]
        assert headers["x-request-id"] == "mine" if request is one else len(headers["x-request-id"]) == 16
    # a head just under the limit, then its body, is served (the body does not count against it)
    png = digit_png()
    head = predict_head(server.port, len(png))
    pad = f"X-Pad: {'c' * (HEAD_LIMIT - len(head) - 16)}\r\n".encode()
    full = head[:-2] + pad + b"\r\n" + png
    assert len(full) - len(png) < HEAD_LIMIT
    status, _, body = exchange(server.port, full, pieces)
    assert status == 200, body
    assert json.loads(body)["digit"] in range(10)


def test_keep_alive_heads_each_get_the_whole_limit(strict):
    server = strict
    near = f"GET /v2/health/live HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: {'d' * (HEAD_LIMIT - 100)}\r\n\r\n"
    with connect(server.port) as sock:
        for _ in range(3):  # three heads of nearly the limit on one connection: each is its own
            sock.sendall(near.encode())
            assert read_response(sock)[0] == 200


@pytest.mark.parametrize(
    ("request_bytes", "reason"),
    [
        (b"GET /v1/mo dels HTTP/1.1\r\nHost: x\r\n\r\n", "Expected HTTP/"),
        (b"HELLO\r\n\r\n", "Invalid method"),
        (b"GET /v1/models HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n", "Invalid header token"),
        (b"POST /v1/models/cnn-mnist/predict HTTP/1.1\r\nHost: x\r\nContent-Length: ten\r\n\r\n",
         "Content-Length"),
    ],
)  # fmt: skip
def test_a_request_the_parser_refuses_gets_a_json_400_saying_why(strict, request_bytes, reason):
    sent = request_bytes.replace(b"\r\n", b"\r\nX-Request-ID: r-1\r\n", 1)  # the first header
    status, headers, body = exchange(strict.port, sent)
    assert (status, headers["content-type"]) == (400, "application/json")
    headers_read = reason in ("Invalid header token", "Content-Length")  # else the first line was refused
    assert headers["x-request-id"] == "r-1" if headers_read else len(headers["x-request-id"]) == 16
    detail = json.loads(body)["detail"]
    assert detail.startswith("malformed HTTP request: ") and reason in detail


def test_a_malformed_chunked_v2_body_gets_the_v2_error_key(strict):
    request = (b"POST /v2/models/cnn-mnist/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               b"Transfer-Encoding: chunked\r\n\r\nzz\r\n")  # fmt: skip
    status, _, body = exchange(strict.port, request)
    assert status == 400
    assert "chunk size" in json.loads(body)["error"]


def test_a_head_pipelined_after_a_large_body_is_not_charged_for_the_body(strict):
    """Two requests on one connection, pipelined: an upload of ~200 kB and, in the same send, the start of
    a small GET, whose head then ends a moment later. The GET's head starts inside the body's last read;
    it must be answered, not refused as a head past MAX_HEAD_BYTES (4 KiB here)."""
    server = strict
    noise = np.random.default_rng(0).integers(0, 256, (450, 450), dtype=np.uint8)
    picture = png_bytes(noise)
    assert len(picture) > 40 * HEAD_LIMIT
    get = b"GET /v2/health/live HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    with connect(server.port) as sock:
        sock.sendall(predict_head(server.port, len(picture)) + picture + get[:20])
        time.sleep(0.3)  # the client's own pacing: the rest of the GET's head comes in a later read
        sock.sendall(get[20:])
        first, _, _ = read_response(sock)
        second, _, body = read_response(sock)
    assert first in (200, 422)  # whatever it reads in noise: it was read, not refused
    assert second == 200, body


def test_a_body_left_unread_after_an_early_answer_is_no_head(strict):
    """A route that answers before reading the body (an unknown model: 404): the rest of the body still
    comes, and then the next request on the same connection. Neither may be taken for an oversized head
    (a stray 431 / 414 would be read as the next request's answer)."""
    server = strict
    body = b"\x89PNG" + bytes(50 * HEAD_LIMIT)
    head = (f"POST /v1/models/nope/predict HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: image/png\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode()  # fmt: skip
    with connect(server.port) as sock:
        sock.sendall(head + body)
        assert read_response(sock)[0] == 404
        sock.sendall(b"GET /v2/health/live HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        status, _, payload = read_response(sock)
    assert status == 200, payload


def test_a_refused_head_on_a_v2_path_gets_the_v2_error_key(strict):
    long_url = f"GET /v2/health/live?q={'a' * HEAD_LIMIT} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode()
    status, _, body = exchange(strict.port, long_url)
    assert status == 414 and "URL longer" in json.loads(body)["error"]
    bad_header = b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n"
    status, _, body = exchange(strict.port, bad_header)
    assert status == 400 and "Invalid header token" in json.loads(body)["error"]


def test_blank_lines_past_the_limit_and_a_url_that_is_not_ascii_get_json_answers(strict):
    """httptools skips blank lines before a request line, so no request ever begins: past the limit they
    are refused like any head (they had crashed the protocol's refusal, answering nothing). A URL with
    bytes that are not ASCII is the client's mistake: a 400 that says so."""
    server = strict
    status, headers, body = exchange(server.port, b"\r\n" * HEAD_LIMIT)
    assert (status, headers["content-type"]) == (431, "application/json"), body
    status, _, body = exchange(server.port, "GET /v1/models/\u00e9 HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    assert status == 400 and "Invalid char in url" in json.loads(body)["detail"]
    assert get(server.port, "/v2/health/live")[0] == 200
