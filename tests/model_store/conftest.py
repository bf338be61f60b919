"""Model-store test settings."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch


@pytest.fixture(scope="module", autouse=True)
def single_torch_thread() -> Iterator[None]:
    """One intra-op thread: these models are small, and on a shared 2-core machine a second
    spinning OpenMP thread costs far more CPU than it saves (7x in a measured training run)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
