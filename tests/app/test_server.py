"""A real uvicorn server on loopback: the official Triton client, and graceful SIGTERM shutdown."""

from __future__ import annotations

import base64
import json
import signal
from concurrent.futures import ThreadPoolExecutor

import httpx
import numpy as np
import pytest

from testkit.reference import reference_probabilities

from .conftest import CNN, VIT, pictures_and_v1_answers, queued_in_the_batcher

tritonclient_http = pytest.importorskip("tritonclient.http")
from tritonclient.utils import InferenceServerException  # noqa: E402


def test_tritonclient_against_a_real_server(start_server, test_store, digits):
    server = start_server()
    images, _ = digits
    client = tritonclient_http.InferenceServerClient(url=f"127.0.0.1:{server.port}")
    try:
        assert client.is_server_live() and client.is_server_ready()
        assert client.is_model_ready(VIT) and client.is_model_ready(CNN)
        assert not client.is_model_ready("nope")
        assert client.get_server_metadata()["name"] == "vit-digits"
        meta = client.get_model_metadata(VIT)
        assert meta["name"] == VIT and {o["name"] for o in meta["outputs"]} == {
            "probabilities",
            "digit",
            "digit_score",
            "is_digit",
        }

        for name in (VIT, CNN):
            ref = reference_probabilities(test_store, name, images)
            # JSON tensors both ways.
            inp = tritonclient_http.InferInput("image", list(images.shape), "UINT8")
            inp.set_data_from_numpy(images, binary_data=False)
            outs = [
                tritonclient_http.InferRequestedOutput(n, binary_data=False)
                for n in ("probabilities", "digit")
            ]
            res = client.infer(name, [inp], outputs=outs, request_id="42")
            assert res.get_response()["id"] == "42"
            assert np.allclose(res.as_numpy("probabilities"), ref, atol=1e-5)
            assert res.as_numpy("digit").tolist() == ref.argmax(1).tolist()
            # Binary tensors both ways (the client's default), FP32 input, gzip-compressed request.
            fp32 = (images[:, None] / 255.0).astype(np.float32)
            inp = tritonclient_http.InferInput("image", list(fp32.shape), "FP32")
            inp.set_data_from_numpy(fp32, binary_data=True)
            res = client.infer(name, [inp], request_compression_algorithm="gzip")
            assert res.as_numpy("probabilities").dtype == np.float32
            assert np.allclose(res.as_numpy("probabilities"), ref, atol=1e-5)
            assert res.as_numpy("digit").dtype == np.int64

        versioned = client.infer(VIT, [inp], model_version="1")  # /v2/models/{name}/versions/1/infer
        assert versioned.as_numpy("probabilities").shape == (len(images), 10)
        assert client.is_model_ready(VIT, model_version="1")
        assert not client.is_model_ready(VIT, model_version="2")

        bad = tritonclient_http.InferInput("image", [1, 28, 27], "UINT8")
        bad.set_data_from_numpy(np.zeros((1, 28, 27), np.uint8), binary_data=False)
        with pytest.raises(InferenceServerException, match=r"shape \[N,28,28\]"):
            client.infer(VIT, [bad])
        with pytest.raises(InferenceServerException, match="unknown model"):
            client.infer("nope", [bad])
    finally:
        client.close()


def test_tritonclient_sends_encoded_pictures_as_bytes(start_server, digits):
    """`image_bytes` (BYTES [N]): the pictures a Triton user has, preprocessed as /v1 uploads are; the
    answers equal /v1 predict/batch's for the same files, in binary mode (raw bytes) and JSON (base64)."""
    server = start_server()
    images, _ = digits
    pictures, v1 = pictures_and_v1_answers(server, images)
    want = np.array([p["probabilities"] for p in v1])
    client = tritonclient_http.InferenceServerClient(url=f"127.0.0.1:{server.port}")
    try:
        meta = client.get_model_metadata(VIT)
        assert {"name": "image_bytes", "datatype": "BYTES", "shape": [-1, 1]} in meta["inputs"]
        raw = np.array(pictures, dtype=np.object_)
        as_text = np.array([base64.b64encode(p) for p in pictures], dtype=np.object_)
        for data, binary in ((raw, True), (as_text, False)):
            inp = tritonclient_http.InferInput("image_bytes", [len(pictures)], "BYTES")
            inp.set_data_from_numpy(data, binary_data=binary)
            res = client.infer(VIT, [inp])
            assert np.allclose(res.as_numpy("probabilities"), want, atol=1e-5), binary
            assert res.as_numpy("digit").tolist() == want.argmax(1).tolist()
        broken = tritonclient_http.InferInput("image_bytes", [2], "BYTES")
        broken.set_data_from_numpy(np.array([pictures[0], b"not a picture"], dtype=np.object_))
        with pytest.raises(InferenceServerException, match="image 1"):
            client.infer(VIT, [broken])
    finally:
        client.close()


def test_sigterm_answers_queued_requests_then_exits(start_server, digits):
    # One image per forward pass and big batches, so that the queue is long when the signal arrives.
    per_request, n_requests = 384, 8
    server = start_server(MAX_BATCH_SIZE="1", MAX_QUEUE_SIZE="8192", MAX_BATCH_IMAGES=str(per_request),
                          MAX_BODY_BYTES=str(32 << 20), REQUEST_TIMEOUT_S="120")  # fmt: skip
    images, _ = digits
    body = json.dumps({"pixels": [images[i % len(images)].tolist() for i in range(per_request)]}).encode()

    def post() -> httpx.Response:
        return httpx.post(f"{server.url}/v1/models/{VIT}/predict/batch", content=body, timeout=120,
                          headers={"content-type": "application/json"})  # fmt: skip

    with ThreadPoolExecutor(n_requests) as pool:
        futures = [pool.submit(post) for _ in range(n_requests)]
        pending = queued_in_the_batcher(server, VIT, n_requests * per_request)
        assert pending > 100, "the model drained the queue before the signal: test is not meaningful"
        server.proc.send_signal(signal.SIGTERM)
        responses = [f.result(timeout=60) for f in futures]  # the timeouts only catch a hang
    code = server.proc.wait(timeout=30)
    assert [r.status_code for r in responses] == [200] * n_requests, server.log()
    assert all(len(r.json()["predictions"]) == per_request for r in responses)
    # uvicorn re-raises the signal once shut down cleanly: "killed by SIGTERM" is the normal exit.
    assert code in (0, -signal.SIGTERM), (code, server.log())
    log = server.log()
    assert "Traceback" not in log and "stopped" in log
    with pytest.raises(httpx.TransportError):
        httpx.get(f"{server.url}/health", timeout=2)


def test_server_starts_on_cpu_with_auto_device(start_server):
    server = start_server(DEVICE="auto")  # waits, with its own deadline, until ready
    health = httpx.get(f"{server.url}/health").json()
    assert health["ready"] is True and health["status"] == "ok"
    import torch

    assert health["device"] == ("cuda" if torch.cuda.is_available() else "cpu")
    assert "ready in" in server.log()
