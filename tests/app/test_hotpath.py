"""The predict hot path: parameters read by hand, small payloads decoded inline, no wait after a
busy batch. Behaviour must match what FastAPI's own parameter handling and the thread pool gave."""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest
from PIL import PngImagePlugin

from app.inputs import BATCH, INLINE_MAX_BYTES, SINGLE, Payload, is_small_png
from testkit.images import png_declaring

from .conftest import VIT, png_bytes

PREDICT = f"/v1/models/{VIT}/predict"


FLAGS = [
    ("true", True),
    ("1", True),
    ("YES", True),
    ("on", True),
    ("false", False),
    ("0", False),
    ("off", False),
]


@pytest.mark.parametrize(("value", "has_input"), FLAGS)
def test_return_input_accepts_the_usual_booleans(client, digits, value, has_input):
    body = {"pixels": digits[0][0].tolist()}
    r = client.post(f"{PREDICT}?return_input={value}", json=body)
    assert r.status_code == 200
    assert ("input" in r.json()) is has_input


def test_a_bad_flag_is_a_fastapi_style_422(client, digits):
    r = client.post(f"{PREDICT}?return_input=maybe", json={"pixels": digits[0][0].tolist()})
    assert r.status_code == 422
    (error,) = r.json()["detail"]
    assert error["loc"] == ["query", "return_input"] and error["type"] == "bool_parsing"
    # unknown model and draining come first, as with dependencies
    assert client.post("/v1/models/nope/predict?return_input=maybe", json={}).status_code == 404


def test_openapi_still_documents_the_parameters(client):
    params = client.get("/openapi.json").json()["paths"][PREDICT.replace(VIT, "{name}")]["post"]["parameters"]
    by_name = {p["name"]: p for p in params}
    assert by_name["name"]["in"] == "path" and by_name["name"]["required"] is True
    assert by_name["return_input"]["in"] == "query"
    assert by_name["return_input"]["schema"] == {"type": "boolean", "default": False, "title": "Return Input"}


def test_only_small_payloads_are_decoded_inline(digits):
    u8 = digits[0][0]
    assert is_small_png(png_bytes(u8))
    assert Payload(SINGLE, images=[png_bytes(u8)]).inline
    assert not is_small_png(png_bytes(np.kron(u8, np.ones((4, 4), np.uint8))))  # 112x112
    assert not is_small_png(png_declaring(20_000, 20_000))  # tiny file, huge image: thread pool
    assert not is_small_png(b"GIF89a")
    assert not Payload(BATCH, images=[png_bytes(u8), png_bytes(u8)]).inline
    assert Payload(SINGLE, json_body=json.dumps({"pixels": u8.tolist()}).encode()).inline
    # a key written with escapes is still `image` or `strokes` once parsed: not decoded inline
    for key in ("\\u0069mage", "\\u0073trokes"):
        assert not Payload(SINGLE, json_body=b'{"' + key.encode() + b'": "x"}').inline
    image_json = json.dumps({"image": base64.b64encode(png_bytes(u8)).decode()}).encode()
    assert not Payload(SINGLE, json_body=image_json).inline  # base64 could hide a bomb


def padded_png(u8: np.ndarray, size: int) -> bytes:
    """The same picture as ``png_bytes(u8)`` in a file of more than ``size`` bytes (a text chunk)."""
    info = PngImagePlugin.PngInfo()
    info.add_text("Comment", "x" * size)
    return png_bytes(u8, pnginfo=info)


def test_inline_and_pooled_decoding_give_the_same_answer(client, digits):
    images, _ = digits
    for u8 in images[:4]:
        small, padded = png_bytes(u8), padded_png(u8, INLINE_MAX_BYTES)
        # the same pixels, one file decoded on the event loop and one on the worker pool
        assert Payload(SINGLE, images=[small]).inline and not Payload(SINGLE, images=[padded]).inline
        answers = [
            client.post(PREDICT + "?return_input=1", content=png, headers={"content-type": "image/png"})
            for png in (small, padded)
        ]
        assert [a.status_code for a in answers] == [200, 200], [a.text for a in answers]
        inline, pooled = (a.json() for a in answers)
        assert inline["input"] == pooled["input"]
        np.testing.assert_allclose(inline["input"], u8 / 255.0, atol=1e-6)  # the picture sent, not a blank
        assert inline["probabilities"] == pooled["probabilities"] and inline["digit"] == pooled["digit"]
