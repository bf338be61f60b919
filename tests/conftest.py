"""Fixtures shared by every test folder: repository paths and real MNIST test images."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from testkit.mnist import find_data_root

# An app a test builds in this process serves no gRPC unless it asks for it: several in one run would
# otherwise each take port 8001. (testkit's ServiceProcess gives its service a free port of its own.)
os.environ.setdefault("GRPC_PORT", "0")

REPO_ROOT = Path(__file__).resolve().parent.parent
SHIPPED_STORE = REPO_ROOT / "model_store" / "checkpoints"


@pytest.fixture(scope="session")
def data_root() -> Path:
    root = find_data_root()
    if root is None:
        pytest.skip("MNIST not found: set DATA_ROOT or put the raw files in ../shared/data/MNIST/raw/")
    return root


@pytest.fixture(scope="session")
def mnist_test(data_root: Path):
    """The official MNIST test split: (images uint8 (N,1,28,28), labels int64 (N,))."""
    from training.data import load_split

    split = load_split("mnist", data_root, train=False, download=False)
    return split.images, split.labels


@pytest.fixture(scope="session")
def shipped_store() -> Path:
    if not any(SHIPPED_STORE.glob("*/card.json")):
        pytest.skip(f"no shipped checkpoints in {SHIPPED_STORE}")
    return SHIPPED_STORE


@pytest.fixture(scope="module", autouse=True)
def single_torch_thread() -> Iterator[None]:
    """One intra-op thread: these models are small, and on a shared 2-core machine a second
    spinning OpenMP thread costs far more CPU than it saves (7x in a measured training run)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
