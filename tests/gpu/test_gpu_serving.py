"""The service on a real GPU: models land on CUDA and answer like the CPU reference.

Skipped without CUDA (CI has none); run on a GPU machine with ``pytest tests/gpu``.
"""

from __future__ import annotations

import httpx
import numpy as np
import pytest
import torch

from model_store import ModelStore
from testkit.images import png_bytes
from testkit.reference import reference_probabilities
from testkit.server import ServiceProcess

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (none on this machine)"),
]


@pytest.fixture(scope="module")
def gpu_server(shipped_store):
    env = {"MODEL_STORE_DIR": str(shipped_store), "DEVICE": "auto"}
    with ServiceProcess(env, workers=None) as server:
        yield server.url


def test_models_are_on_cuda(gpu_server):
    health = httpx.get(f"{gpu_server}/health").json()
    assert health["device"].startswith("cuda")
    for info in httpx.get(f"{gpu_server}/v1/models").json()["models"]:
        assert info["device"].startswith("cuda"), info


def test_gpu_answers_match_cpu_reference(gpu_server, shipped_store, mnist_test):
    images, labels = mnist_test
    images, labels = images[:200], labels[:200]
    for card in ModelStore(shipped_store).list():
        ref = reference_probabilities(shipped_store, card.name, images)  # normalisation + calibration
        with httpx.Client(base_url=gpu_server, timeout=30) as client:
            got = []
            for img in images[:, 0].numpy():
                r = client.post(f"/v1/models/{card.name}/predict", files={"file": ("d.png", png_bytes(img))})
                assert r.status_code == 200, r.text
                got.append(r.json()["probabilities"])
        got = np.array(got)
        assert (got.argmax(1) == ref.argmax(1)).mean() >= 0.995, card.name
        np.testing.assert_allclose(got, ref, atol=2e-2)  # TF32/bf16 kernels differ slightly from CPU fp32
        assert (got.argmax(1) == labels.numpy()).mean() >= 0.98


def test_gpu_attention_and_batches(gpu_server, mnist_test):
    images, _ = mnist_test
    files = [("files", (f"{i}.png", png_bytes(images[i, 0].numpy()))) for i in range(16)]
    r = httpx.post(f"{gpu_server}/v1/models/vit-mnist/predict/batch", files=files, timeout=30)
    assert r.status_code == 200 and len(r.json()["predictions"]) == 16
    r = httpx.post(
        f"{gpu_server}/v1/models/vit-mnist/attention",
        files={"file": ("d.png", png_bytes(images[0, 0].numpy()))},
        timeout=30,
    )
    body = r.json()
    assert r.status_code == 200
    assert abs(sum(body["rollout"]) - 1) < 1e-3
