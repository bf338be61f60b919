"""Attention maps: rows from the softmax, head means, rollout against a numpy reference, batching, PNG."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from app.main import create_app
from model_store import ModelStore
from testkit.digits import drawn_mnist_digits

from .conftest import VIT, make_settings, png_bytes, running

ATTENTION = f"/v1/models/{VIT}/attention"


def reference(store: Path, images_u8: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """In-process: probabilities (N, 10) and full attention (N, L, H, T, T), one image at a time."""
    model, card = ModelStore(store).load(VIT, "cpu")
    probs, attns = [], []
    for u8 in images_u8:
        x = torch.from_numpy(u8.astype(np.float32) / 255.0)[None, None]
        x = (x - card.preprocessing.mean) / card.preprocessing.std
        with torch.inference_mode():
            logits, attn = model.forward_with_attention(x)
        probs.append(torch.softmax(logits, -1)[0].numpy())
        attns.append(attn[0].double().numpy())
    return np.array(probs), np.array(attns)


def rollout_reference(attn: np.ndarray) -> np.ndarray:
    """Abnar & Zuidema 2020, written out: (L, H, T, T) -> (T-1,) CLS rollout over the patches."""
    layers, _, tokens, _ = attn.shape
    eye = np.eye(tokens)
    joint = eye
    for layer in range(layers):
        a = 0.5 * attn[layer].mean(axis=0) + 0.5 * eye  # residual connection
        a = a / a.sum(axis=-1, keepdims=True)
        joint = a @ joint  # the later layer mixes the already mixed tokens
    cls = joint[0, 1:]
    return cls / cls.sum()


def test_rows_sum_to_one_and_rollout_matches_the_reference(client, test_store, digits):
    images, _ = digits
    probs, attns = reference(test_store, images[:4])
    for i, u8 in enumerate(images[:4]):
        r = client.post(ATTENTION, content=png_bytes(u8), headers={"content-type": "image/png"})
        assert r.status_code == 200, r.text
        body = r.json()
        layers, heads, grid = body["layers"], body["heads"], body["grid_size"]
        assert (layers, heads, grid, body["patch_size"]) == (6, 4, 7, 4)
        att = np.array(body["attention"])
        cls_self = np.array(body["cls_attention"])
        assert att.shape == (layers, heads, grid * grid) and cls_self.shape == (layers, heads)
        patch_sums = att.sum(-1)
        # Straight from the softmax: the patch row plus the CLS->CLS entry is exactly a distribution.
        assert np.allclose(patch_sums + cls_self, 1.0, atol=1e-5), (patch_sums, cls_self)
        assert (cls_self > 0).all() and (patch_sums < 1).all()
        assert np.allclose(att, attns[i][:, :, 0, 1:], atol=1e-5)
        assert np.allclose(cls_self, attns[i][:, :, 0, 0], atol=1e-5)
        assert np.allclose(body["attention_mean"], att.mean(axis=1), atol=1e-6)
        rollout = np.array(body["rollout"])
        assert rollout.shape == (grid * grid,) and abs(rollout.sum() - 1) < 1e-5
        assert np.allclose(rollout, rollout_reference(attns[i]), atol=1e-5)
        assert np.allclose(body["probabilities"], probs[i], atol=1e-5)
        assert body["digit"] == int(probs[i].argmax())
        assert np.abs(np.array(body["input"]) - u8 / 255.0).max() < 1e-6


def test_attention_is_batched_and_correct_for_every_image_in_a_batch(test_store):
    images, _ = drawn_mnist_digits(24)
    probs, attns = reference(test_store, images)
    app = create_app(make_settings(test_store, max_batch_size=8, max_wait_ms=20))

    async def main() -> tuple[list, object]:
        async with running(app) as c:
            responses = await asyncio.gather(
                *(c.post(ATTENTION, json={"pixels": u8.tolist()}) for u8 in images)
            )
            return responses, (await c.get("/metrics")).text

    responses, metrics = asyncio.run(main())
    assert max(r.json()["timing"]["batch_size"] for r in responses) > 1
    assert f'vit_digits_inference_count_total{{model="{VIT}:attention"}} {float(len(images))}' in metrics
    for i, r in enumerate(responses):
        body = r.json()
        assert np.allclose(body["attention"], attns[i][:, :, 0, 1:], atol=1e-5), i
        assert np.allclose(body["rollout"], rollout_reference(attns[i]), atol=1e-5), i
        assert np.allclose(body["probabilities"], probs[i], atol=1e-5), i


def test_png_overlay(client, digits):
    u8 = digits[0][0]
    maps = {}
    for query in ("", "&layer=0", "&layer=5&head=3", "&scale=4"):
        r = client.post(f"{ATTENTION}?format=png{query}", json={"pixels": u8.tolist()})
        assert r.status_code == 200 and r.headers["content-type"] == "image/png", r.text
        assert r.headers["x-digit"].isdigit()
        img = Image.open(io.BytesIO(r.content))
        assert img.format == "PNG" and img.mode == "RGB"
        assert img.size == ((112, 112) if "scale=4" in query else (224, 224))
        maps[query] = np.asarray(img)
    assert not np.array_equal(maps[""], maps["&layer=0"])
    assert not np.array_equal(maps["&layer=0"], maps["&layer=5&head=3"])
    # The digit shows through: stroke pixels are brighter than background pixels on average.
    big = np.kron(u8, np.ones((8, 8))) > 128
    gray = maps[""].astype(float).mean(-1)
    assert gray[big].mean() > gray[~big].mean()


def test_colormap_is_monotonic_in_brightness():
    from app.overlay import colormap

    rgb = colormap(np.linspace(0, 1, 50)).astype(float)
    luminance = rgb @ [0.299, 0.587, 0.114]
    assert (np.diff(luminance) > 0).all() and rgb.shape == (50, 3)
