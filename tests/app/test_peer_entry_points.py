"""The names ../shared/peers imports to serve our model in LitServe and Triton stay importable and
compute what the engine computes."""

from __future__ import annotations

import numpy as np
import torch

from app.preprocess import preprocess_bytes
from app.registry import trace_for_inference
from model_store import ModelStore

from .conftest import CNN, VIT, png_bytes


def test_traced_forward_equals_the_eager_model(test_store):
    store = ModelStore(test_store)
    x = torch.rand(3, 1, 28, 28)
    for name in (VIT, CNN):
        model, card = store.load(name, torch.device("cpu"))
        traced = trace_for_inference(model, card, torch.device("cpu"))
        with torch.inference_mode():
            assert torch.allclose(traced(x), model(x), atol=1e-5)


def test_preprocess_bytes_gives_an_mnist_style_image():
    u8 = np.zeros((28, 28), np.uint8)
    u8[4:24, 12:16] = 255
    out = preprocess_bytes(png_bytes(u8), 25_000_000)
    assert out.shape == (28, 28) and out.dtype == np.float32 and 0.5 < out.max() <= 1.0
