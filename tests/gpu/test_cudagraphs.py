"""CUDA graphs replay the predict path exactly: for every bucket and for odd batch sizes (padded up to
the next bucket), the graph's outputs match the eager forward on the same GPU. GPU only."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from app.engine.cudagraphs import GraphRunner, buckets
from app.engine.models import EngineModel
from app.settings import Settings
from model_store import ModelStore
from model_store.serving import ServingHead

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (none on this machine)"),
]


@pytest.mark.parametrize("name", ["vit-mnist", "cnn-mnist"])
def test_graph_replay_matches_eager(shipped_store, name):
    device = torch.device("cuda")
    store = ModelStore(shipped_store)
    model, card = store.load(name, device)
    head = ServingHead(model, card, store.path(name)).to(device).eval()
    settings = Settings(model_store_dir=shipped_store, device="cuda", amp="off", max_batch_size=32)
    served = EngineModel(card, head, device, settings)
    assert served.fast_path == "cuda-graphs" and isinstance(served.graphs, GraphRunner)
    rng = np.random.default_rng(0)
    for n in sorted({*buckets(32), 3, 5, 17, 31, 45}):  # 45 > the largest bucket: split in two
        sizes = [len(part) for part in np.array_split(np.arange(n), 3) if len(part)]  # several requests
        views = [rng.random((k, 28, 28), dtype=np.float32) for k in sizes]
        got = served.predict(views)
        with torch.inference_mode():
            x = torch.from_numpy(np.concatenate(views)).to(device).unsqueeze(1)
            want = head(x).float().cpu().numpy()
        assert got.shape == want.shape == (n, len(card.labels) + 1)
        # Probabilities to 1e-4. The last column, the digit score (near -80 for the CNN on this
        # noise), to 1e-3 of itself: cuDNN convolutions run in TF32 (PyTorch's default) with an algorithm
        # chosen per batch shape, so 45 images at once and 32 + 13 through the graphs round apart (H200:
        # up to 3e-4 of the score for the CNN).
        np.testing.assert_allclose(got[:, :-1], want[:, :-1], atol=1e-4, err_msg=f"{name}, batch of {n}")
        np.testing.assert_allclose(got[:, -1], want[:, -1], rtol=1e-3, err_msg=f"{name} score, batch of {n}")
