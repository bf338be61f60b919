"""Malformed input of every kind the contract lists, plus hostile transport: each gets a clear 4xx JSON
answer (never a 5xx), and the real server stays healthy throughout."""

from __future__ import annotations

import base64
import gzip
import json
import socket
import time
import zlib

import httpx
import numpy as np
import pytest
from hardening_support import hardening_service
from PIL import Image

from testkit.http import multipart_body
from testkit.images import gray_png, png_bytes, png_chunk
from testkit.metrics import total

MAX_BODY = 256 * 1024
MAX_PIXELS = 1_000_000
MAX_BATCH = 8
PREDICT = "/v1/models/vit-mnist/predict"


@pytest.fixture(scope="module")
def server(tiny_store, tmp_path_factory):
    srv = hardening_service(
        {
            "MODEL_STORE_DIR": str(tiny_store),
            "DEVICE": "cpu",
            "MAX_BODY_BYTES": str(MAX_BODY),
            "MAX_IMAGE_PIXELS": str(MAX_PIXELS),
            "MAX_BATCH_IMAGES": str(MAX_BATCH),
        },
        tmp_path_factory.mktemp("malformed") / "server.log",
    ).start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def client(server):
    with httpx.Client(base_url=server.url, timeout=30) as c:
        yield c


@pytest.fixture(autouse=True)
def still_healthy(server, client, digit_png):
    """After every test: the process is alive, ready, and still predicts."""
    yield
    assert server.alive(), server.log()
    assert client.get("/v2/health/ready").status_code == 200
    r = client.post(PREDICT, content=digit_png, headers={"Content-Type": "image/png"})
    assert r.status_code == 200, r.text


def assert_error(r: httpx.Response, *statuses: int, v2: bool = False) -> dict:
    """A clear error: one of the expected statuses, a JSON body with a non-empty message."""
    assert r.status_code in statuses, f"{r.status_code} not in {statuses}: {r.text[:300]}"
    assert r.headers.get("content-type", "").startswith("application/json"), r.headers
    body = r.json()
    key = "error" if v2 else "detail"
    assert body.get(key), body
    return body


def zeros_deflated(n: int) -> bytes:
    """zlib stream of n zero bytes, built in 1 MiB pieces (a few KB per 16 MB)."""
    comp = zlib.compressobj(9)
    block = bytes(1 << 20)
    out = [comp.compress(block) for _ in range(n >> 20)]
    out.append(comp.compress(bytes(n & ((1 << 20) - 1))))
    return b"".join(out) + comp.flush()


def multipart(parts: list[tuple[str, str, bytes, str]], boundary: str = "hardening") -> bytes:
    return multipart_body(parts, boundary)[0]


# ------------------------------------------------------------------------------------ not an image


@pytest.mark.parametrize(
    "body",
    [b"hello, not an image", b"\x89PNG\r\n\x1a\n", b"\x00" * 100, b"GIF89a", b"\xff\xd8\xff\xe0garbage"],
    ids=["text", "png-signature-only", "zeros", "gif-header-only", "jpeg-header-only"],
)
def test_not_an_image(client, body):
    assert_error(client.post(PREDICT, content=body, headers={"Content-Type": "image/png"}), 400, 415)


def test_empty_body(client):
    assert_error(client.post(PREDICT, content=b"", headers={"Content-Type": "image/png"}), 400, 415, 422)


def test_truncated_png(client, digit_png):
    r = client.post(PREDICT, content=digit_png[: len(digit_png) // 2], headers={"Content-Type": "image/png"})
    assert_error(r, 400, 415)


@pytest.mark.parametrize(
    ("ctype", "body"),
    [
        ("text/plain", b"7"),
        ("application/xml", b"<digit>7</digit>"),
        ("application/octet-stream", b"\x00\x01"),
        ("image/svg+xml", b'<svg xmlns="http://www.w3.org/2000/svg"/>'),
        ("image/tiff", b"II*\x00\x08\x00\x00\x00"),
        ("application/x-www-form-urlencoded", b"pixels=1"),
    ],
)
def test_unsupported_content_type(client, ctype, body):
    assert_error(client.post(PREDICT, content=body, headers={"Content-Type": ctype}), 415, 400, 422)


def test_missing_content_type(client, digit_png):
    r = client.post(PREDICT, content=digit_png, headers={"Content-Type": ""})
    assert r.status_code < 500
    if r.status_code != 200:
        assert_error(r, 400, 415, 422)


@pytest.mark.parametrize("shape", [(1, 1), (3, 2), (7, 7), (1, 500), (500, 1)], ids=str)
def test_tiny_and_thin_images(client, shape):
    """Images smaller than the preprocessing's tiles: a prediction or a clear 4xx, never a 5xx."""
    img = np.zeros(shape, dtype=np.uint8)
    img[shape[0] // 2, shape[1] // 2] = 255
    r = client.post(PREDICT, content=png_bytes(img), headers={"Content-Type": "image/png"})
    if r.status_code != 200:
        assert_error(r, 400, 422)


def float_tiff(values: np.ndarray) -> bytes:
    return png_bytes(Image.fromarray(values.astype(np.float32), mode="F"), fmt="TIFF")


def test_float_pixels_not_finite_or_far_out_of_range(client):
    """A 32-bit float picture (TIFF): NaN or infinity is a 400 naming it; finite values far outside
    0..1 are read by their own range (a digit, or a clear 4xx), on the one-digit and number routes."""
    paper = np.ones((60, 60), dtype=np.float32)
    paper[15:45, 28:33] = 0.0
    for bad in (np.nan, np.inf, -np.inf):
        pixels = paper.copy()
        pixels[0, 0] = bad
        for route in (PREDICT, "/v1/models/vit-mnist/read"):
            r = client.post(route, content=float_tiff(pixels), headers={"Content-Type": "image/tiff"})
            assert "not finite" in assert_error(r, 400)["detail"]
    for extreme in (paper * 3e38, np.where(paper > 0, 3e38, -3e38)):
        for route in (PREDICT, "/v1/models/vit-mnist/read"):
            r = client.post(route, content=float_tiff(extreme), headers={"Content-Type": "image/tiff"})
            if r.status_code != 200:
                assert_error(r, 422)


@pytest.mark.parametrize("field", ["images", "row"])
def test_long_json_lists_are_refused_by_their_length(client, field):
    """A JSON list longer than any body needs is refused by its length before its items are checked
    (an error object per wrong item costs pydantic memory: 20 MiB of them would cost gigabytes)."""
    bodies = {  # each as large as MAX_BODY allows, every item wrong
        "images": ("/v1/models/vit-mnist/predict/batch", {"images": [1] * 60_000}),
        "row": (PREDICT, {"pixels": [[""] * 60_000] + [[0] * 28] * 27}),
    }
    route, body = bodies[field]
    detail = assert_error(client.post(route, json=body), 422)["detail"]
    assert "at most" in detail, detail


def test_empty_canvas_is_422(client):
    assert_error(
        client.post(PREDICT, content=png_bytes(np.zeros((28, 28))), headers={"Content-Type": "image/png"}),
        422,
    )
    assert_error(client.post(PREDICT, json={"pixels": [[0] * 28] * 28}), 422)


# ---------------------------------------------------------------------------------------- size limits


def test_body_over_limit_is_413(client):
    body = b"\x89PNG\r\n\x1a\n" + bytes(MAX_BODY + 1024)
    assert_error(client.post(PREDICT, content=body, headers={"Content-Type": "image/png"}), 413)


def test_chunked_body_over_limit_is_413(client):
    def chunks():
        for _ in range(MAX_BODY // 8192 + 8):
            yield bytes(8192)

    assert_error(client.post(PREDICT, content=chunks(), headers={"Content-Type": "image/png"}), 413)


def test_json_body_over_limit_is_413(client):
    body = b'{"image": "' + b"A" * (MAX_BODY + 10) + b'"}'
    assert_error(client.post(PREDICT, content=body, headers={"Content-Type": "application/json"}), 413)


def test_declared_length_over_limit_answers_without_the_body(server):
    """Content-Length above the limit: refused from the header, the server does not wait for the body."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=15) as s:
        s.sendall(
            f"POST {PREDICT} HTTP/1.1\r\nHost: x\r\nContent-Type: image/png\r\n"
            f"Content-Length: {50 * MAX_BODY}\r\n\r\n".encode()
            + bytes(1000)
        )
        head = s.recv(65536)
    assert head.startswith(b"HTTP/1.1 413"), head[:200]


def test_decompression_bomb_dimensions_is_413(client):
    side = 4000  # 16 MP > MAX_IMAGE_PIXELS (1 MP); ~16 KB on the wire
    bomb = gray_png(side, side, zeros_deflated((side + 1) * side))
    assert len(bomb) < MAX_BODY
    assert_error(client.post(PREDICT, content=bomb, headers={"Content-Type": "image/png"}), 413)


def test_decompression_bomb_huge_header_is_413(client):
    bomb = gray_png(100_000, 100_000, zeros_deflated(1 << 20))  # 10 GP declared, truncated data
    assert_error(client.post(PREDICT, content=bomb, headers={"Content-Type": "image/png"}), 413, 400)


def test_decompression_bomb_in_text_chunk(client, digits):
    """A zTXt chunk that inflates to 64 MB: refused or ignored, never inflated into memory or a 5xx."""
    good = png_bytes(digits[0])
    ztxt = png_chunk(b"zTXt", b"Comment\x00\x00" + zeros_deflated(64 << 20))
    bomb = good[:33] + ztxt + good[33:]  # right after IHDR
    r = client.post(PREDICT, content=bomb, headers={"Content-Type": "image/png"})
    assert r.status_code in (200, 400, 413), r.text[:300]
    if r.status_code != 200:
        assert_error(r, 400, 413)
    else:  # the text chunk was skipped: the digit is read as if it were not there
        plain = client.post(PREDICT, content=good, headers={"Content-Type": "image/png"})
        assert r.json()["probabilities"] == plain.json()["probabilities"]


def test_idat_bomb_for_small_image(client):
    """A 28x28 header whose pixel data inflates to 64 MB: only what the image needs is inflated."""
    bomb = gray_png(28, 28, zeros_deflated(64 << 20))
    r = client.post(PREDICT, content=bomb, headers={"Content-Type": "image/png"})
    assert_error(r, 400, 413, 422)  # all-black if decoded: no ink


def test_batch_over_limit_is_413(client, digit_png):
    parts = [("files", f"{i}.png", digit_png, "image/png") for i in range(MAX_BATCH + 1)]
    r = client.post(
        PREDICT + "/batch",
        content=multipart(parts),
        headers={"Content-Type": "multipart/form-data; boundary=hardening"},
    )
    assert_error(r, 413)
    pixels = [[[0] * 28] * 28] * (MAX_BATCH + 1)
    assert_error(client.post(PREDICT + "/batch", json={"pixels": pixels}), 413)


def test_batch_empty_and_bad_member(client, digit_png):
    assert_error(client.post(PREDICT + "/batch", json={"images": []}), 400, 422)
    assert_error(client.post(PREDICT + "/batch", json={"pixels": []}), 400, 422)
    good = base64.b64encode(digit_png).decode()
    assert_error(client.post(PREDICT + "/batch", json={"images": [good, "bm90IGFuIGltYWdl"]}), 400, 415, 422)


# ---------------------------------------------------------------------------------------------- JSON


@pytest.mark.parametrize(
    "body",
    [
        b'{"pixels": ',
        b"{pixels: 1}",
        b'{"pixels": [[1,2,]]}',
        b'{"pixels": [[\xff\xfe\xfd]]}',
        b'\xff\xfe{"image": "x"}',
        b'{"image": "\xc3\x28"}',
        b"",
        b"null",
        b"[]",
        b'"pixels"',
        b"{}",
        b'{"pixels": null}',
        b'{"image": 123}',
        b'{"image": null}',
        b'{"unknown": 1}',
    ],
    ids=lambda b: repr(b[:24]),
)
def test_bad_json(client, body):
    r = client.post(PREDICT, content=body, headers={"Content-Type": "application/json"})
    assert_error(r, 400, 415, 422)


def test_deeply_nested_json(client):
    depth = 100_000  # deeper than Python's recursion limit
    body = b'{"pixels": ' + b"[" * depth + b"]" * depth + b"}"
    assert len(body) < MAX_BODY
    assert_error(
        client.post(PREDICT, content=body, headers={"Content-Type": "application/json"}), 400, 413, 422
    )
    body = b'{"pixels": ' + b"[" * 500 + b"1" + b"]" * 500 + b"}"
    assert_error(client.post(PREDICT, content=body, headers={"Content-Type": "application/json"}), 400, 422)


def _pixels_json(fill: str) -> bytes:
    row = "[" + ",".join([fill] + ["0"] * 27) + "]"
    return ('{"pixels": [' + ",".join([row] * 28) + "]}").encode()


@pytest.mark.parametrize(
    "value", ["NaN", "Infinity", "-Infinity", "1e999", "-1", "256", "1e308", '"12"', "null", "[1]", "{}"]
)
def test_bad_pixel_values(client, value):
    r = client.post(PREDICT, content=_pixels_json(value), headers={"Content-Type": "application/json"})
    assert_error(r, 422, 400)


@pytest.mark.parametrize(
    "pixels",
    [
        [[0] * 28] * 27,
        [[0] * 27] * 28,
        [[255] * 28] * 27 + [[255] * 27],
        [255] * 784,
        [[[255] * 28] * 28],
        [],
        [[]],
        255,
        "255",
        [[255] * 28] * 2000,
    ],
    ids=[
        "27-rows",
        "27-cols",
        "ragged",
        "flat-784",
        "extra-dim",
        "empty",
        "empty-row",
        "scalar",
        "string",
        "long",
    ],
)
def test_wrong_pixel_shapes(client, pixels):
    assert_error(client.post(PREDICT, json={"pixels": pixels}), 422, 400)


@pytest.mark.parametrize(
    "image",
    [
        "!!!! not base64 !!!!",
        "data:image/png;base64",
        "data:image/png;base64,@@@",
        "QUJD",  # valid base64, not an image
        "iVBORw0KGgo",  # PNG signature, cut
        "",
        "A" * 1001,
        "====",
    ],
)
def test_base64_garbage(client, image):
    assert_error(client.post(PREDICT, json={"image": image}), 400, 415, 422)


# ----------------------------------------------------------------------------------------- multipart


def test_multipart_wrong_boundary(client, digit_png):
    body = multipart([("file", "d.png", digit_png, "image/png")], boundary="actual")
    r = client.post(PREDICT, content=body, headers={"Content-Type": "multipart/form-data; boundary=declared"})
    assert_error(r, 400, 415, 422)


def test_multipart_missing_boundary(client, digit_png):
    body = multipart([("file", "d.png", digit_png, "image/png")])
    assert_error(
        client.post(PREDICT, content=body, headers={"Content-Type": "multipart/form-data"}), 400, 415, 422
    )


def test_multipart_unterminated(client, digit_png):
    body = multipart([("file", "d.png", digit_png, "image/png")])[:-20]
    r = client.post(
        PREDICT, content=body, headers={"Content-Type": "multipart/form-data; boundary=hardening"}
    )
    assert_error(r, 400, 415, 422)


def test_multipart_wrong_field_and_not_an_image(client, digit_png):
    ctype = {"Content-Type": "multipart/form-data; boundary=hardening"}
    # The only file, under another name, is the image; two files under other names are ambiguous.
    named = client.post(
        PREDICT, content=multipart([("file", "d.png", digit_png, "image/png")]), headers=ctype
    )
    other = client.post(
        PREDICT, content=multipart([("picture", "d.png", digit_png, "image/png")]), headers=ctype
    )
    assert other.status_code == named.status_code == 200, other.text
    assert other.json()["probabilities"] == named.json()["probabilities"]
    body = multipart(
        [("picture", "d.png", digit_png, "image/png"), ("scan", "e.png", digit_png, "image/png")]
    )
    assert_error(client.post(PREDICT, content=body, headers=ctype), 422)
    body = multipart([("file", "d.png", b"definitely not a png", "image/png")])
    assert_error(client.post(PREDICT, content=body, headers=ctype), 400, 415)


def test_multipart_many_parts(client, digit_png):
    parts = [("junk", f"{i}.bin", b"x", "application/octet-stream") for i in range(2000)]
    body = multipart([("file", "d.png", digit_png, "image/png"), *parts])
    r = client.post(
        PREDICT, content=body, headers={"Content-Type": "multipart/form-data; boundary=hardening"}
    )
    assert r.status_code < 500, r.text[:300]


def test_several_files_to_a_one_image_route_are_422_however_many(client):
    """Two files or two thousand: the same 422 pointing at the batch route (three or more were a 413),
    before any is decoded."""
    ctype = {"Content-Type": "multipart/form-data; boundary=hardening"}
    for n in (2, 3, 2000):
        body = multipart([("file", f"{i}.png", b"x", "image/png") for i in range(n)])
        detail = assert_error(client.post(PREDICT, content=body, headers=ctype), 422)["detail"]
        assert "one image per request" in detail, detail


# -------------------------------------------------------------------------------- routes and params


def test_unknown_model_and_method(client, digit_png):
    ctype = {"Content-Type": "image/png"}
    assert_error(client.post("/v1/models/nope/predict", content=digit_png, headers=ctype), 404)
    assert_error(client.post("/v1/models/..%2F..%2Fetc/predict", content=digit_png, headers=ctype), 404)
    assert_error(client.get("/v1/models/nope"), 404)
    assert_error(client.get(PREDICT), 405)


def test_bad_query_params(client, digit_png):
    ctype = {"Content-Type": "image/png"}
    assert_error(client.post(PREDICT + "?return_input=maybe", content=digit_png, headers=ctype), 422, 400)
    att = "/v1/models/vit-mnist/attention"
    for query in ("?format=png&layer=99", "?format=png&layer=-99", "?format=png&layer=x", "?format=bmp"):
        assert_error(client.post(att + query, content=digit_png, headers=ctype), 400, 422)


def test_attention_on_cnn_is_400(client, digit_png):
    r = client.post(
        "/v1/models/cnn-mnist/attention", content=digit_png, headers={"Content-Type": "image/png"}
    )
    assert_error(r, 400)


# ---------------------------------------------------------------------------------------------- v2

PAST_FLOAT64 = [10**400] + [0] * 783


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"inputs": []},
        {"inputs": "x"},
        {"inputs": [{"name": "image", "datatype": "BYTES", "shape": [1, 28, 28], "data": [0] * 784}]},
        {"inputs": [{"name": "image", "datatype": "UINT8", "shape": [1, 28, 28], "data": [0] * 10}]},
        {"inputs": [{"name": "image", "datatype": "UINT8", "shape": [1, 28, 27], "data": [0] * 756}]},
        {"inputs": [{"name": "image", "datatype": "UINT8", "shape": [-1, 28, 28], "data": [0] * 784}]},
        {"inputs": [{"name": "image", "datatype": "UINT8", "shape": [10**9, 28, 28], "data": []}]},
        {"inputs": [{"name": "image", "datatype": "UINT8", "shape": [1, 28, 28], "data": [300] * 784}]},
        {"inputs": [{"name": "image", "datatype": "FP32", "shape": [1, 1, 28, 28], "data": ["a"] * 784}]},
        {"inputs": [{"name": "image", "datatype": "UINT8", "shape": [1, 28, 28]}]},
        # numbers only: past float64, written as strings, booleans
        {"inputs": [{"name": "image", "datatype": "UINT8", "shape": [1, 28, 28], "data": PAST_FLOAT64}]},
        {"inputs": [{"name": "image", "datatype": "FP32", "shape": [1, 1, 28, 28], "data": ["1"] * 784}]},
        {"inputs": [{"name": "image", "datatype": "UINT8", "shape": [1, 28, 28], "data": [True] * 784}]},
    ],
    ids=lambda b: json.dumps(b)[:60] + json.dumps(b)[-20:],
)
def test_v2_bad_infer(client, body):
    assert_error(client.post("/v2/models/vit-mnist/infer", json=body), 400, 413, 422, v2=True)


def test_v2_parameters_are_booleans(client, digits):
    """A binary-output flag written as the string "false" is refused, not taken as true."""
    pixels = digits[0].ravel().tolist()
    tensor = {"name": "image", "datatype": "UINT8", "shape": [1, 28, 28], "data": pixels}
    for body in (
        {"inputs": [tensor], "parameters": {"binary_data_output": "false"}},
        {"inputs": [tensor], "outputs": [{"name": "digit", "parameters": {"binary_data": "false"}}]},
    ):
        error = assert_error(client.post("/v2/models/vit-mnist/infer", json=body), 400, v2=True)["error"]
        assert "must be true or false" in error, error


@pytest.mark.parametrize("field", ["shape", "outputs"])
def test_v2_long_lists_are_refused_briefly(client, field):
    """Thousands of wrong items: one short answer, not an error per item (each costs pydantic memory)."""
    tensor = {"name": "image", "datatype": "UINT8", "shape": [1, 28, 28], "data": [0] * 784}
    body: dict = {"inputs": [tensor]}
    if field == "shape":
        tensor["shape"] = [""] * 60_000  # as many as MAX_BODY allows
    else:
        body["outputs"] = [{"name": 0}] * 15_000
    r = client.post("/v2/models/vit-mnist/infer", json=body)
    assert_error(r, 400, v2=True)
    assert len(r.content) < 2_000, r.content[:300]


def test_v2_unknown_model_and_bad_json(client):
    assert_error(client.post("/v2/models/nope/infer", json={"inputs": []}), 404, 400, v2=True)
    r = client.post(
        "/v2/models/vit-mnist/infer", content=b"{not json", headers={"Content-Type": "application/json"}
    )
    assert_error(r, 400, 422, v2=True)


def test_v2_deeply_nested_json(client):
    depth = 100_000
    body = b'{"inputs": [{"name": "image", "datatype": "UINT8", "shape": [1, 28, 28], "data": '
    body += b"[" * depth + b"]" * depth + b"}]}"
    r = client.post("/v2/models/vit-mnist/infer", content=body, headers={"Content-Type": "application/json"})
    assert_error(r, 400, 413, 422, v2=True)


def test_v2_gzip_bomb(client):
    """Content-Encoding gzip that inflates to 64 MB: refused without inflating it all."""
    bomb = gzip.compress(b" " * (64 << 20), compresslevel=9)
    assert len(bomb) < MAX_BODY
    r = client.post(
        "/v2/models/vit-mnist/infer",
        content=bomb,
        headers={"Content-Type": "application/json", "Content-Encoding": "gzip"},
    )
    assert_error(r, 400, 413, 415, v2=True)


def test_v2_binary_tensor_nan(client):
    header = json.dumps(
        {
            "inputs": [
                {
                    "name": "image",
                    "datatype": "FP32",
                    "shape": [1, 1, 28, 28],
                    "parameters": {"binary_data_size": 784 * 4},
                }
            ]
        }
    ).encode()
    data = np.full(784, np.nan, dtype=np.float32).tobytes()
    headers = {"Content-Type": "application/octet-stream"}
    headers["Inference-Header-Content-Length"] = str(len(header))
    for body in (header + data, header + data[:100]):
        r = client.post("/v2/models/vit-mnist/infer", content=body, headers=headers)
        assert_error(r, 400, 422, v2=True)


# -------------------------------------------------------------------------------- hostile transport


def test_huge_and_many_headers(server, client):
    r = None
    try:
        r = client.get("/v2/health/live", headers={"X-Big": "a" * 200_000})
    except httpx.HTTPError:
        pass  # the server may drop the connection: fine, as long as it survives
    assert r is None or r.status_code < 500
    headers = {f"X-H{i}": "v" * 100 for i in range(1000)}
    try:
        r = client.get("/v2/health/live", headers=headers)
        assert r.status_code < 500
    except httpx.HTTPError:
        pass


def _partial_request(port: int, declared: int, sent: bytes) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(
        f"POST {PREDICT} HTTP/1.1\r\nHost: x\r\nContent-Type: image/png\r\n"
        f"Content-Length: {declared}\r\n\r\n".encode()
        + sent
    )
    return s


def test_stalled_uploads_do_not_block_others(server, client, digit_png):
    """Clients that send part of the body and stall hold no worker: others are served meanwhile."""
    stalled = [_partial_request(server.port, 5000, digit_png[:100]) for _ in range(30)]
    try:
        # Give the server time to start reading the stalled bodies: nothing it exposes says so, and a
        # shorter wait only makes the test weaker (the stalled clients not yet accepted), never flaky.
        time.sleep(0.3)
        for _ in range(5):
            r = client.post(PREDICT, content=digit_png, headers={"Content-Type": "image/png"})
            assert r.status_code == 200, r.text
    finally:
        for s in stalled:
            s.close()


def test_partial_uploads_then_close(server, client, digit_png):
    for i in range(20):
        s = _partial_request(server.port, 5000, digit_png[: i * 5])
        if i % 2:
            s.shutdown(socket.SHUT_WR)  # half-close: EOF mid-body
            s.settimeout(10)
            try:
                s.recv(4096)  # an error answer or a closed connection, both fine
            except OSError:
                pass
        s.close()
    r = client.post(PREDICT, content=digit_png, headers={"Content-Type": "image/png"})
    assert r.status_code == 200


def test_slow_headers_then_complete(server, digit_png):
    """Headers dribbled a few bytes at a time, then a complete request: answered normally."""
    request = (
        f"POST {PREDICT} HTTP/1.1\r\nHost: x\r\nContent-Type: image/png\r\n"
        f"Content-Length: {len(digit_png)}\r\nConnection: close\r\n\r\n"
    ).encode() + digit_png
    with socket.create_connection(("127.0.0.1", server.port), timeout=15) as s:
        head, rest = request[:80], request[80:]
        for i in range(0, len(head), 8):
            s.sendall(head[i : i + 8])
            time.sleep(0.02)  # a deliberately slow client: the pause is the behaviour under test
        s.sendall(rest)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    assert data.startswith(b"HTTP/1.1 200"), data[:300]


def test_garbage_on_the_wire(server):
    for junk in (
        b"\x00\xff" * 100 + b"\r\n\r\n",
        b"GET / HTTP/9.9\r\n\r\n",
        b"POST " + b"/a" * 5000 + b" HTTP/1.1\r\n\r\n",
    ):
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
            s.sendall(junk)
            try:
                data = s.recv(4096)
            except OSError:
                data = b""
        assert not data.startswith(b"HTTP/1.1 5"), data[:200]


def test_zz_no_server_errors_recorded(server):
    """Runs last in this module: the service counted no 5xx answers across all of the above."""
    samples = server.metrics()
    errors = {
        dict(labels).get("route"): v
        for (name, labels), v in samples.items()
        if name == "vit_digits_requests_total" and dict(labels).get("status", "").startswith("5") and v
    }
    assert not errors, errors
    assert total(samples, "vit_digits_requests_total") > 0
    assert "Traceback" not in server.log(), server.log()
