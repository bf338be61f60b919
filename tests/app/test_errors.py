"""Bad input gets a clear JSON error with the right status, never a 500, and hurts nobody else."""

from __future__ import annotations

import asyncio
import base64
import gzip
import json
import zlib

import numpy as np
import pytest

from app.inputs import looks_like_image
from app.main import create_app
from testkit.digits import drawn_mnist_digits
from testkit.images import png_declaring

from .conftest import CNN, VIT, make_settings, png_bytes, running

PREDICT = f"/v1/models/{VIT}/predict"


def raw(data: bytes, ctype: str = "image/png") -> dict:
    return {"content": data, "headers": {"content-type": ctype}}


def check(r, status: int, *words: str) -> None:  # type: ignore[no-untyped-def]
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/json")
    detail = r.json()["detail"]
    text = str(detail).lower()
    for w in words:
        assert w.lower() in text, (w, detail)


def test_not_an_image_truncated_and_unsupported(client, digits):
    png = png_bytes(np.kron(digits[0][0], np.ones((4, 4), np.uint8)))
    check(client.post(PREDICT, **raw(b"definitely not a png")), 400, "not an image")
    check(client.post(PREDICT, **raw(png[: len(png) // 2])), 400, "truncated")
    check(client.post(PREDICT, files={"file": ("x.png", b"GIF89a nope", "image/gif")}), 400)
    check(client.post(PREDICT, json={"image": base64.b64encode(b"nope").decode()}), 400, "not an image")
    check(client.post(PREDICT, json={"image": "***"}), 400, "base64")
    check(client.post(PREDICT, **raw(b"seven", "text/plain")), 415, "text/plain")
    assert client.post(PREDICT, **raw(png, "text/plain")).status_code == 200  # a generic label: sniffed
    check(client.post(PREDICT, content=b""), 400, "empty body")  # nothing at all, no content type
    check(client.post(PREDICT, **raw(png, "image/x-icon")), 415, "image/x-icon")
    check(client.post(PREDICT, **raw(png_bytes(digits[0][0], fmt="ICO"), "image/png")), 415, "ICO")
    check(client.post(PREDICT, content=b"digit=7"), 415, "none")  # no content type, and not an image
    check(client.post(PREDICT, **raw(b"\x00\x01", "application/octet-stream")), 415, "octet-stream")
    check(client.post(PREDICT, data={"a": "b"}), 415, "x-www-form-urlencoded")
    # A generic or JSON label on image bytes is read as the image, but never where a batch is expected.
    check(client.post(f"/v1/models/{VIT}/predict/batch", **raw(png, "application/json")), 415, "multipart")


def test_compressed_bodies_are_read_or_refused_clearly(client, make_client, digits):
    u8 = digits[0][0]
    png = png_bytes(u8)
    plain = client.post(PREDICT, **raw(png)).json()["probabilities"]
    doc = json.dumps({"image": base64.b64encode(png).decode()}).encode()
    for encoding, pack in (("gzip", gzip.compress), ("deflate", zlib.compress)):
        for body, ctype in ((png, "image/png"), (doc, "application/json"), (png, "application/octet-stream")):
            r = client.post(
                PREDICT, content=pack(body), headers={"content-type": ctype, "content-encoding": encoding}
            )
            assert r.status_code == 200, (encoding, ctype, r.text)
            assert r.json()["probabilities"] == plain
    gz = {"content-encoding": "gzip"}
    check(client.post(PREDICT, content=b"not gzip", headers={"content-type": "image/png", **gz}), 400, "gzip")
    cut = gzip.compress(doc)[:-20]  # a gzip stream that stops short: refused, not read as a shorter body
    check(
        client.post(PREDICT, content=cut, headers={"content-type": "application/json", **gz}),
        400,
        "truncated",
    )
    check(
        client.post(PREDICT, content=png, headers={"content-type": "image/png", "content-encoding": "br"}),
        415,
        "br",
    )
    multipart = client.post(PREDICT, files={"file": ("d.png", png, "image/png")}, headers=gz)
    check(multipart, 415, "multipart", "uncompressed")
    small = make_client(max_body_bytes=64 * 1024)
    bomb = gzip.compress(b" " * (10 * 1024 * 1024))  # 10 KB that inflate to 10 MB
    check(
        small.post(PREDICT, content=bomb, headers={"content-type": "application/json", **gz}),
        413,
        "decompressed",
    )


@pytest.mark.parametrize("fmt", ["PNG", "JPEG", "GIF", "WEBP", "BMP", "TIFF", "HEIF", "AVIF"])
def test_every_decoded_format_is_recognised_by_its_first_bytes(digits, fmt):
    assert looks_like_image(png_bytes(digits[0][0], fmt=fmt))


@pytest.mark.parametrize("body", [b'{"image": "..."}', b"[]", b"image=abc", b"BMW=1", b"RIFF1234WAVE", b""])
def test_json_and_forms_are_not_taken_for_images(body):
    assert not looks_like_image(body)


def test_bad_json_and_fields_are_422(client):
    check(client.post(PREDICT, **raw(b"{not json", "application/json")), 422, "JSON")
    check(client.post(PREDICT, json=[1, 2]), 422, "object")
    check(client.post(PREDICT, json={}), 422, "exactly one")
    check(client.post(PREDICT, json={"image": "aGk=", "pixels": []}), 422, "exactly one")
    check(client.post(PREDICT, json={"img": "aGk="}), 422, "unknown field")
    check(client.post(PREDICT, json={"image": 5}), 422, "base64 string")
    check(client.post(PREDICT, json={"pixels": [[0] * 28] * 27}), 422, "28 rows")
    check(client.post(PREDICT, json={"pixels": [[0] * 28] * 27 + [[0] * 27]}), 422, "28 rows")
    check(client.post(PREDICT, json={"pixels": [[256] * 28] * 28}), 422, "0..255")
    for not_numbers in ("255", True, None):  # refused as /v2 refuses them, not converted
        check(client.post(PREDICT, json={"pixels": [[not_numbers] * 28] * 28}), 422, "each a number")
    check(client.post(PREDICT, **raw(b'{"pixels": [[NaN]]}', "application/json")), 422)
    deep = b'{"pixels": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"  # beyond Python's recursion limit
    check(client.post(PREDICT, **raw(deep, "application/json")), 422, "JSON")
    r = client.post(f"/v2/models/{VIT}/infer", content=deep)
    assert r.status_code == 400 and "JSON" in r.json()["error"]
    two = {"a": ("a.png", b"x", "image/png"), "b": ("b.png", b"x", "image/png")}
    check(client.post(PREDICT, files=two), 422, "`file` is missing", "a, b")  # which one is the image?
    check(client.post(PREDICT, files={"note": (None, "hi")}), 422, "`file` is missing", "note")  # no file
    check(client.post(PREDICT, files={"image": (None, "hi")}), 422, "text field(s) image", "as a file")
    check(client.post(PREDICT, files={"file": ("d.png", b"", "image/png")}), 400, "'d.png' is empty")
    check(
        client.post(PREDICT, files={"file": (None, "text value")}),
        422,
        "must be a file",
        "without a filename",
    )


def test_empty_canvas_is_422(client):
    check(client.post(PREDICT, **raw(png_bytes(np.zeros((280, 280), np.uint8)))), 422, "no ink")
    check(client.post(PREDICT, **raw(png_bytes(np.full((280, 280), 255, np.uint8)))), 422, "no ink")
    check(client.post(PREDICT, json={"pixels": [[0] * 28] * 28}), 422, "no ink")


def test_unknown_model_is_404(client):
    check(client.get("/v1/models/nope"), 404, "nope")
    check(client.post("/v1/models/nope/predict", json={"pixels": [[0] * 28] * 28}), 404, "unknown model")
    r = client.post("/v2/models/nope/infer", json={})
    assert r.status_code == 404 and "nope" in r.json()["error"]


def test_body_over_the_limit_is_413_declared_or_streamed(test_store):
    app = create_app(make_settings(test_store, max_body_bytes=64 * 1024))
    big = b"\x89PNG" + b"\0" * (200 * 1024)
    sent = 0

    async def chunks():  # no Content-Length: chunked transfer, cut off once over the limit
        nonlocal sent
        for _ in range(10_000):
            sent += 16 * 1024
            yield b"\0" * (16 * 1024)

    async def main() -> list:
        async with running(app) as c:
            return [
                await c.post(PREDICT, **raw(big)),
                await c.post(PREDICT, content=chunks(), headers={"content-type": "image/png"}),
                await c.post(f"/v2/models/{VIT}/infer", content=big),
                await c.post(f"/v1/models/{VIT}/predict/batch", files={"files": ("a.png", big, "image/png")}),
            ]

    declared, streamed, v2, multipart = asyncio.run(main())
    check(declared, 413, "limit")
    check(streamed, 413, "limit")
    assert sent < 1024 * 1024  # reading stopped early: nowhere near the 160 MB offered
    assert v2.status_code == 413 and "limit" in v2.json()["error"]
    check(multipart, 413, "limit")


def test_bodies_in_flight_share_one_budget(test_store, digits):
    """While one upload holds most of MAX_BODY_BYTES_IN_FLIGHT, another that would not fit gets 503 +
    Retry-After before its body is read (declared) or as it crosses the budget (chunked); the holder is
    served, and once it is answered the budget is free again."""
    budget = 64 * 1024
    app = create_app(make_settings(test_store, max_body_bytes=budget, max_body_bytes_in_flight=budget))
    png = png_bytes(np.kron(digits[0][0], np.ones((4, 4), np.uint8)))
    held = png + b"\0" * (48 * 1024 - len(png))  # bytes after a PNG's end are ignored by the decoder
    half_sent, finish = asyncio.Event(), asyncio.Event()

    async def slowly():  # declared length; half now, the rest once the others have been answered
        yield held[: len(held) // 2]
        half_sent.set()
        await finish.wait()
        yield held[len(held) // 2 :]

    async def chunked():
        for _ in range(8):
            yield b"\0" * (8 * 1024)

    async def main() -> list:
        async with running(app) as c:
            headers = {"content-type": "image/png", "content-length": str(len(held))}
            holder = asyncio.create_task(c.post(PREDICT, content=slowly(), headers=headers))
            await half_sent.wait()
            declared = await c.post(PREDICT, **raw(png + b"\0" * (24 * 1024)))
            streamed = await c.post(PREDICT, content=chunked(), headers={"content-type": "image/png"})
            v2 = await c.post(f"/v2/models/{VIT}/infer", content=b"{}" + b" " * (24 * 1024))
            holding = body_bytes((await c.get("/metrics")).text)
            finish.set()
            first = await holder
            after = await c.post(PREDICT, **raw(png + b"\0" * (24 * 1024)))
            return [declared, streamed, v2, first, after, holding, body_bytes((await c.get("/metrics")).text)]

    def body_bytes(exposition: str) -> float:
        (line,) = [x for x in exposition.splitlines() if x.startswith("vit_digits_request_body_bytes ")]
        return float(line.split()[1])

    declared, streamed, v2, first, after, holding, free = asyncio.run(main())
    assert holding == len(held) and free == 0  # /metrics shows what is charged, and its release
    for refused in (declared, streamed):
        check(refused, 503, "MAX_BODY_BYTES_IN_FLIGHT")
        assert refused.headers["retry-after"] == "1"
    assert v2.status_code == 503 and "MAX_BODY_BYTES_IN_FLIGHT" in v2.json()["error"]
    assert first.status_code == 200 and first.json()["digit"] in range(10), first.text
    assert after.status_code == 200, after.text


def test_a_budget_smaller_than_one_body_is_refused_at_start(test_store):
    with pytest.raises(ValueError, match="MAX_BODY_BYTES_IN_FLIGHT"):
        make_settings(test_store, max_body_bytes=2 << 20, max_body_bytes_in_flight=1 << 20)


def test_decompression_bombs_are_413(client, make_client):
    check(client.post(PREDICT, **raw(png_declaring(20000, 20000))), 413, "pixels")
    small_limit = make_client(max_image_pixels=100_000)
    check(small_limit.post(PREDICT, **raw(png_bytes(np.zeros((400, 400), np.uint8)))), 413, "limit")


def test_batch_over_the_limit_is_413(make_client, digits):
    c = make_client(max_batch_images=4)
    u8 = digits[0][0]
    check(c.post(f"/v1/models/{VIT}/predict/batch", json={"pixels": [u8.tolist()] * 5}), 413, "at most 4")
    check(c.post(f"/v1/models/{VIT}/predict/batch", json={"images": ["aGk="] * 5}), 413, "at most 4")
    files = [("files", (f"{i}.png", png_bytes(u8), "image/png")) for i in range(6)]
    check(c.post(f"/v1/models/{VIT}/predict/batch", files=files), 413, "at most 4")
    ok = c.post(f"/v1/models/{VIT}/predict/batch", json={"pixels": [u8.tolist()] * 4})
    assert ok.status_code == 200 and len(ok.json()["predictions"]) == 4
    r = c.post(f"/v2/models/{VIT}/infer", json={"inputs": [{"name": "image", "datatype": "UINT8",
               "shape": [5, 28, 28], "data": [0] * (5 * 784)}]})  # fmt: skip
    assert r.status_code == 413 and "at most 4" in r.json()["error"]


def test_batch_errors_name_the_bad_image(client, digits):
    u8 = digits[0][0]
    r = client.post(
        f"/v1/models/{VIT}/predict/batch", json={"images": [base64.b64encode(png_bytes(u8)).decode(), "eA=="]}
    )
    check(r, 400, "image 1")
    check(client.post(f"/v1/models/{VIT}/predict/batch", json={"images": []}), 422, "non-empty")
    check(client.post(f"/v1/models/{VIT}/predict/batch", **raw(png_bytes(u8))), 415, "multipart")


def test_cnn_has_no_attention(client, digits):
    r = client.post(f"/v1/models/{CNN}/attention", json={"pixels": digits[0][0].tolist()})
    check(r, 400)
    assert r.json() == {"detail": f"model '{CNN}' (cnn) has no attention maps; use a ViT model"}


def test_query_validation_is_422(client, digits):
    body = {"json": {"pixels": digits[0][0].tolist()}}
    check(client.post(f"/v1/models/{VIT}/attention?format=gif", **body), 422)
    check(client.post(f"/v1/models/{VIT}/attention?format=png&layer=99", **body), 422, "out of range")
    check(client.post(f"/v1/models/{VIT}/attention?format=png&head=1", **body), 422, "needs `layer`")
    check(client.post(f"/v1/models/{VIT}/predict?return_input=maybe", **body), 422)


def test_bad_requests_do_not_affect_good_ones_in_the_same_batches(test_store):
    images, _ = drawn_mnist_digits(16)
    app = create_app(make_settings(test_store, max_batch_size=8, max_wait_ms=20))
    bad = [raw(b"garbage"), {"json": {"pixels": [[1e9] * 28] * 28}}, raw(png_declaring(20000, 20000)),
           {"json": {"image": "!!"}}, raw(b"x", "text/html")]  # fmt: skip

    async def main() -> tuple[list, list]:
        async with running(app) as c:
            good = [c.post(PREDICT, json={"pixels": u8.tolist()}) for u8 in images]
            evil = [c.post(PREDICT, **kw) for kw in bad * 3]
            results = await asyncio.gather(*good, *evil)
            return results[: len(good)], results[len(good) :]

    good, evil = asyncio.run(main())
    assert all(r.status_code == 200 for r in good)
    singles = []
    with_client = create_app(make_settings(test_store))

    async def one_by_one() -> None:
        async with running(with_client) as c:
            for u8 in images:
                singles.append((await c.post(PREDICT, json={"pixels": u8.tolist()})).json()["probabilities"])

    asyncio.run(one_by_one())
    assert np.allclose([r.json()["probabilities"] for r in good], singles, atol=1e-5)
    assert all(400 <= r.status_code < 500 for r in evil), [r.status_code for r in evil]


@pytest.mark.parametrize("path", ["/v1/models/x/predict", "/nope", "/v2/models/x/infer"])
def test_unknown_routes_and_methods_are_json(client, path):
    r = client.delete(path)
    assert r.status_code in (404, 405) and r.headers["content-type"].startswith("application/json")


@pytest.mark.parametrize("path", ["/v2/health/ready", "/v1/models", f"/v1/models/{VIT}", "/", "/metrics"])
def test_head_answers_as_get_without_a_body(client, path):
    get, head = client.get(path), client.head(path)
    assert head.status_code == get.status_code == 200
    assert head.content == b"" and head.headers["content-type"] == get.headers["content-type"]
    route = "/v1/models/{name}" if path.endswith(VIT) else path
    assert f'method="HEAD",route="{route}",status="200"' in client.get("/metrics").text


def test_a_trailing_slash_is_answered_as_the_route_without_it(client):
    """Not FastAPI's empty 307 (curl shows nothing, httpx does not follow it): the answer itself."""
    upload = {"files": {"file": ("digit.png", png_bytes(255 - drawn_mnist_digits(1)[0][0]), "image/png")}}
    plain = client.post(PREDICT, **upload)
    slashed = client.post(PREDICT + "/", **upload, follow_redirects=False)
    assert slashed.status_code == plain.status_code == 200
    assert slashed.json()["probabilities"] == plain.json()["probabilities"]
    assert client.get(f"/v2/models/{VIT}/", follow_redirects=False).json()["name"] == VIT
    assert client.get("/nope/").status_code == 404 and client.get("/").status_code == 200
    metrics = client.get("/metrics/", follow_redirects=False).text  # counted under the route's template
    assert 'method="GET",route="/v2/models/{name}",status="200"' in metrics and 'status="307"' not in metrics


def test_head_on_a_post_route_is_405_saying_post(client):
    r = client.head(PREDICT)
    assert r.status_code == 405 and r.headers["allow"] == "POST" and r.content == b""


def test_a_405_allows_every_method_the_path_serves(client):
    """RFC 9110: Allow lists them all (Starlette's names the first route that matched the path only),
    HEAD with GET, as the aliases answer it."""
    assert client.put("/v1/noop").headers["allow"] == "GET, HEAD, POST"
    assert client.post("/v1/models").headers["allow"] == "GET, HEAD"
    assert client.delete(f"/v2/models/{VIT}/infer").headers["allow"] == "POST"
    r = client.patch("/metrics")
    assert r.status_code == 405 and r.headers["allow"] == "GET, HEAD" and "detail" in r.json()
    assert client.put("/static/app.js").headers["allow"] == "GET, HEAD"  # a static file


def test_a_request_reaching_the_engine_while_it_is_away_gets_503(test_store):
    """Readiness is checked before the body is read and decoded: the engine may go in between. Its
    client then holds no slots (room for 0 images): 503, as before the engine calls were split."""
    import time

    from app.errors import Unavailable
    from app.pipeline import infer

    async def go() -> None:
        app = create_app(make_settings(test_store))
        async with running(app):
            runtime = app.state.runtime
            served = runtime.model_for_inference(VIT)
            slots, runtime.client.slots = runtime.client.slots, None
            try:
                with pytest.raises(Unavailable, match="engine is not available"):
                    await infer(None, runtime, served, [np.zeros((28, 28), np.float32)] * 3, time.monotonic())
            finally:
                runtime.client.slots = slots

    asyncio.run(go())
