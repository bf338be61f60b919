"""Every input route gives the model's own answer on drawn digits; batching keeps answers apart.

The contract tests need no MNIST: the answers are compared with the model called in-process, not
with labels. Only the shipped models' accuracy is checked on real MNIST digits.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient
from PIL import Image

from app.main import create_app
from model_store.preprocess import preprocess_bytes
from testkit.digits import drawn_mnist_digits
from testkit.metrics import parse as parse_metrics
from testkit.metrics import total
from testkit.reference import reference_probabilities

from .conftest import CNN, VIT, make_settings, png_bytes, running

ATOL = 1e-5  # batched vs single forward passes differ only by float rounding


@pytest.fixture(scope="module", params=["random-weights", "shipped"])
def served(request: pytest.FixtureRequest, test_store: Path) -> Iterator[tuple[Path, TestClient, list[str]]]:
    """(store, client, model names) for the test store, and for the shipped checkpoints when present."""
    if request.param == "shipped":
        store = request.getfixturevalue("shipped_store")  # skips when there are none
    else:
        store = test_store
    with TestClient(create_app(make_settings(store))) as client:
        names = [m["name"] for m in client.get("/v1/models").json()["models"]]
        yield store, client, names


def b64(data: bytes, data_url: bool = False) -> str:
    text = base64.b64encode(data).decode()
    return f"data:image/png;base64,{text}" if data_url else text


def single_routes(u8: np.ndarray):
    """(name, request kwargs) for every way of sending one image to /predict."""
    png = png_bytes(u8)
    yield "multipart", {"files": {"file": ("digit.png", png, "image/png")}}
    yield "raw image/png", {"content": png, "headers": {"content-type": "image/png"}}
    yield "json base64", {"json": {"image": b64(png)}}
    yield "json data URL", {"json": {"image": b64(png, data_url=True)}}
    yield "json base64url, unpadded", {"json": {"image": base64.urlsafe_b64encode(png).decode().rstrip("=")}}
    yield "json pixels", {"json": {"pixels": u8.tolist()}}
    # What standard clients send when not told otherwise: the body's own bytes say it is an image.
    yield "multipart, another field name", {"files": {"image": ("digit.png", png, "image/png")}}
    yield "raw, no content type (requests' data=)", {"content": png}
    yield (
        "raw, application/octet-stream",
        {"content": png, "headers": {"content-type": "application/octet-stream"}},
    )
    yield "raw, curl --data-binary's form type", {
        "content": png, "headers": {"content-type": "application/x-www-form-urlencoded"},
    }  # fmt: skip
    yield (
        "raw, labelled JSON (httpie piping a file)",
        {"content": png, "headers": {"content-type": "application/json"}},
    )


def test_every_single_image_route_matches_the_model_in_process(served, digits):
    store, client, names = served
    images, labels = digits
    for name in names:
        ref = reference_probabilities(store, name, images)
        for i, u8 in enumerate(images[:6]):
            for route, kwargs in single_routes(u8):
                r = client.post(f"/v1/models/{name}/predict", **kwargs)
                assert r.status_code == 200, (route, r.text)
                body = r.json()
                assert body["model"] == name
                assert np.allclose(body["probabilities"], ref[i], atol=ATOL), (name, route)
                assert body["digit"] == int(ref[i].argmax()) and body["label"] == str(body["digit"])
                assert body["confidence"] == pytest.approx(float(ref[i].max()), abs=ATOL)
                assert set(body["timing"]) >= {"queue_ms", "compute_ms", "total_ms"}


@pytest.mark.parametrize(
    "fmt, media, suffix", [("HEIF", "image/heic", "heic"), ("AVIF", "image/avif", "avif")]
)
def test_phone_formats_are_served_like_any_upload(served, digits, fmt, media, suffix):
    """A HEIC or AVIF photo, labelled, unlabelled (its own first bytes say what it is), as a form file
    and as base64: the model's answer on the same bytes preprocessed in process."""
    store, client, names = served
    photo = Image.fromarray(255 - np.kron(digits[0][0], np.ones((4, 4), np.uint8))).convert("RGB")
    data = png_bytes(photo, fmt=fmt, quality=90)
    seen = preprocess_bytes(data, 25_000_000)
    requests = {
        "raw, labelled": {"content": data, "headers": {"content-type": media}},
        "raw, no content type": {"content": data},
        "multipart": {"files": {"file": (f"photo.{suffix}", data, media)}},
        "json base64": {"json": {"image": b64(data)}},
    }
    for name in names:
        ref = reference_probabilities(store, name, 255 * seen[None])[0]
        for route, kwargs in requests.items():
            r = client.post(f"/v1/models/{name}/predict", **kwargs)
            assert r.status_code == 200, (route, r.text)
            assert np.allclose(r.json()["probabilities"], ref, atol=ATOL), (name, route)


def test_a_digit_drawn_in_yellow_on_white_is_served(served, digits):
    """Yellow ink on white paper stands out in colour, not in luminance: the service reads it (it
    answered 422 "no ink found" when it looked at luminance alone), as the same bytes in process."""
    ink = np.kron(digits[0][1], np.ones((10, 10), np.uint8))[..., None] / 255.0
    photo = np.rint(255 * (1.0 - ink * np.array([0.0, 0.0, 1.0]))).astype(np.uint8)  # blue taken away
    assert_served_as_in_process(served, png_bytes(Image.fromarray(photo)), "image/png")


def test_a_full_size_phone_photo_is_served(served, digits):
    """A 12-megapixel JPEG with the grain of a phone camera is larger than 5 MB (the old body limit) and
    is served under the default limits, like the same bytes preprocessed in process."""
    rng = np.random.default_rng(0)
    paper = rng.normal(225, 9, (3000, 4000, 3))
    digit = Image.fromarray(np.kron(digits[0][0], np.ones((50, 50), np.uint8))).resize((1400, 1400))
    ink = np.asarray(digit, np.float64)[..., None] / 255
    paper[800:2200, 1300:2700] = paper[800:2200, 1300:2700] * (1 - ink) + 40 * ink
    data = png_bytes(Image.fromarray(paper.clip(0, 255).astype(np.uint8)), fmt="JPEG", quality=95)
    assert 5 * 1024 * 1024 < len(data) < 20 * 1024 * 1024, len(data)
    assert_served_as_in_process(served, data, "image/jpeg")


def assert_served_as_in_process(served, data: bytes, media: str) -> None:
    """Every served model answers the upload ``data`` with what it gives on the same bytes in process."""
    store, client, names = served
    seen = preprocess_bytes(data, 25_000_000)
    for name in names:
        ref = reference_probabilities(store, name, 255 * seen[None])[0]
        r = client.post(f"/v1/models/{name}/predict", content=data, headers={"content-type": media})
        assert r.status_code == 200, r.text
        assert np.allclose(r.json()["probabilities"], ref, atol=ATOL), name


def test_every_batch_route_matches_the_model_in_process_in_order(served, digits):
    store, client, names = served
    images, _ = digits
    pngs = [png_bytes(u8) for u8 in images]
    for name in names:
        ref = reference_probabilities(store, name, images)
        requests = {
            "multipart files": {
                "files": [("files", (f"{i}.png", p, "image/png")) for i, p in enumerate(pngs)]
            },
            "json images": {"json": {"images": [b64(p) for p in pngs]}},
            "json pixels": {"json": {"pixels": [u8.tolist() for u8 in images]}},
        }
        for route, kwargs in requests.items():
            r = client.post(f"/v1/models/{name}/predict/batch", **kwargs)
            assert r.status_code == 200, (route, r.text)
            preds = r.json()["predictions"]
            assert len(preds) == len(images)
            got = np.array([p["probabilities"] for p in preds])
            assert np.allclose(got, ref, atol=ATOL), (name, route)
            assert [p["digit"] for p in preds] == list(ref.argmax(1))


def test_v2_uint8_and_fp32_match_the_model_in_process(served, digits):
    store, client, names = served
    images, _ = digits
    for name in names:
        ref = reference_probabilities(store, name, images)
        tensors = {
            "UINT8 nested": {"datatype": "UINT8", "shape": [len(images), 28, 28], "data": images.tolist()},
            "UINT8 flat": {
                "datatype": "UINT8",
                "shape": [len(images), 28, 28],
                "data": images.ravel().tolist(),
            },
            "FP32": {
                "datatype": "FP32",
                "shape": [len(images), 1, 28, 28],
                "data": (images[:, None] / 255.0).astype(np.float32).ravel().tolist(),
            },
        }
        for kind, tensor in tensors.items():
            r = client.post(
                f"/v2/models/{name}/infer", json={"id": "r1", "inputs": [{"name": "image", **tensor}]}
            )
            assert r.status_code == 200, (kind, r.text)
            body = r.json()
            assert body["model_name"] == name and body["id"] == "r1"
            out = {o["name"]: o for o in body["outputs"]}
            probs_out, digit_out = out["probabilities"], out["digit"]
            assert probs_out["datatype"] == "FP32" and probs_out["shape"] == [len(images), 10]
            assert digit_out["datatype"] == "INT64" and digit_out["shape"] == [len(images)]
            probs = np.array(probs_out["data"]).reshape(-1, 10)
            assert np.allclose(probs, ref, atol=ATOL), (name, kind)
            assert digit_out["data"] == list(ref.argmax(1))


def test_shipped_models_read_real_digits(shipped_store, mnist_test):
    images, labels = mnist_test[0][:12, 0].numpy(), mnist_test[1][:12].numpy()
    with TestClient(create_app(make_settings(shipped_store))) as client:
        for info in client.get("/v1/models").json()["models"]:
            r = client.post(f"/v1/models/{info['name']}/predict/batch", json={"pixels": images.tolist()})
            correct = sum(p["digit"] == y for p, y in zip(r.json()["predictions"], labels, strict=True))
            assert correct >= len(labels) - 1, info["name"]


def test_return_input_gives_the_image_the_model_saw(client, digits):
    u8 = digits[0][0]
    r = client.post(f"/v1/models/{VIT}/predict?return_input=true", content=png_bytes(255 - u8),
                    headers={"content-type": "image/png"})  # fmt: skip
    seen = np.array(r.json()["input"])
    assert seen.shape == (28, 28)
    assert np.abs(seen - u8 / 255.0).max() < 1e-6  # white on black, 0..1, before mean/std
    assert "input" not in client.post(f"/v1/models/{VIT}/predict", json={"pixels": u8.tolist()}).json()
    # that input, 0..1 as torchvision's tensors are, posted back as pixels: the same answer (was 422)
    again = client.post(f"/v1/models/{VIT}/predict", json={"pixels": r.json()["input"]})
    assert again.status_code == 200, again.text
    assert np.allclose(again.json()["probabilities"], r.json()["probabilities"], atol=1e-5)


def test_model_cards(client):
    body = client.get("/v1/models").json()
    names = [m["name"] for m in body["models"]]
    assert names == sorted([VIT, CNN])
    vit = client.get(f"/v1/models/{VIT}").json()
    assert vit["arch"] == "vit" and vit["supports_attention"] is True and vit["device"] == "cpu"
    assert vit["preprocessing"] == {"image_size": 28, "mean": 0.1307, "std": 0.3081}
    assert vit["labels"] == [str(i) for i in range(10)] and vit["num_params"] > 0
    assert set(vit) >= {"preset", "metrics", "architecture", "dataset", "training", "weights_sha256"}
    assert vit["created_at"]
    cnn = client.get(f"/v1/models/{CNN}").json()
    assert cnn["arch"] == "cnn" and cnn["supports_attention"] is False


def test_concurrent_requests_are_batched_and_each_gets_its_own_answer(test_store):
    images, _ = drawn_mnist_digits(48)
    ref = reference_probabilities(test_store, VIT, images)
    app = create_app(make_settings(test_store, max_batch_size=16, max_wait_ms=20))

    async def main() -> tuple[list, object]:
        async with running(app) as c:
            headers = {"content-type": "image/png"}
            responses = await asyncio.gather(
                *(
                    c.post(f"/v1/models/{VIT}/predict", content=png_bytes(u8), headers=headers)
                    for u8 in images
                )
            )
            return responses, (await c.get("/metrics")).text

    responses, metrics = asyncio.run(main())
    for i, r in enumerate(responses):
        assert r.status_code == 200
        assert np.allclose(r.json()["probabilities"], ref[i], atol=ATOL), i
    assert max(r.json()["timing"]["batch_size"] for r in responses) > 1
    samples = parse_metrics(metrics)
    count = total(samples, "vit_digits_batch_size_count", model=VIT)
    images_counted = total(samples, "vit_digits_batch_size_sum", model=VIT)
    assert images_counted == len(images) and 1 <= count < len(images)
