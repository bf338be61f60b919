"""The service on a real GPU: models land on CUDA and answer like the CPU reference.

Skipped without CUDA (CI has none); run on a GPU machine with ``pytest tests/gpu``.
"""

from __future__ import annotations

import io
import os
import socket
import subprocess
import sys
import time

import httpx
import numpy as np
import pytest
import torch
from PIL import Image

from model_store import ModelStore

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (none on this machine)"),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def gpu_server(shipped_store):
    port = _free_port()
    env = {**os.environ, "MODEL_STORE_DIR": str(shipped_store), "DEVICE": "auto"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "app.main:app", "--host", "127.0.0.1", "--port", str(port)],
        env=env,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/v2/health/ready", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        assert proc.poll() is None, "server exited during startup"
        time.sleep(0.2)
    else:
        proc.kill()
        pytest.fail("GPU server not ready within 120 s")
    yield base
    proc.terminate()
    proc.wait(timeout=30)


def _png(image: np.ndarray) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(image).save(buf, format="PNG")
    return buf.getvalue()


def test_models_are_on_cuda(gpu_server):
    health = httpx.get(f"{gpu_server}/health").json()
    assert health["device"].startswith("cuda")
    for info in httpx.get(f"{gpu_server}/v1/models").json()["models"]:
        assert info["device"].startswith("cuda"), info


def test_gpu_answers_match_cpu_reference(gpu_server, shipped_store, mnist_test):
    images, labels = mnist_test
    images, labels = images[:200], labels[:200]
    store = ModelStore(shipped_store)
    for card in store.list():
        model, _ = store.load(card.name, "cpu")
        pre = card.preprocessing
        with torch.inference_mode():
            ref = model((images.float() / 255 - pre.mean) / pre.std).softmax(1).numpy()
        with httpx.Client(base_url=gpu_server, timeout=30) as client:
            got = []
            for img in images[:, 0].numpy():
                r = client.post(f"/v1/models/{card.name}/predict", files={"file": ("d.png", _png(img))})
                assert r.status_code == 200, r.text
                got.append(r.json()["probabilities"])
        got = np.array(got)
        assert (got.argmax(1) == ref.argmax(1)).mean() >= 0.995, card.name
        np.testing.assert_allclose(got, ref, atol=2e-2)  # TF32/bf16 kernels differ slightly from CPU fp32
        assert (got.argmax(1) == labels.numpy()).mean() >= 0.98


def test_gpu_attention_and_batches(gpu_server, mnist_test):
    images, _ = mnist_test
    files = [("files", (f"{i}.png", _png(images[i, 0].numpy()))) for i in range(16)]
    r = httpx.post(f"{gpu_server}/v1/models/vit-mnist/predict/batch", files=files, timeout=30)
    assert r.status_code == 200 and len(r.json()["predictions"]) == 16
    r = httpx.post(
        f"{gpu_server}/v1/models/vit-mnist/attention",
        files={"file": ("d.png", _png(images[0, 0].numpy()))},
        timeout=30,
    )
    body = r.json()
    assert r.status_code == 200
    assert abs(sum(body["rollout"]) - 1) < 1e-3
