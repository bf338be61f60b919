"""Where the MNIST raw files are on this machine, and the test split read through training.data
(torchvision's IDX reader): nothing here downloads."""

from __future__ import annotations

from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parent.parent
TEST_IMAGES = Path("MNIST", "raw", "t10k-images-idx3-ubyte")


def find_data_root() -> Path | None:
    """DATA_ROOT (training's setting), else ../shared/data beside the checkout, else data/: the first
    that holds MNIST's test images (raw or gzipped)."""
    from training.settings import TrainSettings

    for root in (TrainSettings().data_root, REPO_ROOT.parent / "shared" / "data", REPO_ROOT / "data"):
        images = root / TEST_IMAGES
        if images.is_file() or images.with_name(images.name + ".gz").is_file():
            return root
    return None


def load_test_split(limit: int | None = None) -> tuple[np.ndarray, np.ndarray] | None:
    """The first `limit` MNIST test digits, (N, 28, 28) uint8 white-on-black, and their labels; None
    where MNIST is not on the machine."""
    root = find_data_root()
    if root is None:
        return None
    from training.data import load_split

    split = load_split("mnist", root, train=False, download=False)
    return split.images[:limit, 0].numpy(), split.labels[:limit].numpy()
