"""MNIST-family datasets as in-memory tensors (whole dataset fits on any GPU: 47 MB as uint8)."""

from __future__ import annotations

import contextlib
import gzip
import os
import shutil
import zlib
from dataclasses import dataclass
from pathlib import Path

import torch

from model_store import MNIST_MEAN, MNIST_STD

DATASETS = {"mnist": "MNIST", "fashion-mnist": "FashionMNIST"}
RAW_FILES = [
    "train-images-idx3-ubyte.gz",
    "train-labels-idx1-ubyte.gz",
    "t10k-images-idx3-ubyte.gz",
    "t10k-labels-idx1-ubyte.gz",
]
FASHION_LABELS = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                  "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]  # fmt: skip


class DatasetNotFoundError(RuntimeError):
    pass


@dataclass
class Split:
    images: torch.Tensor  # (N, 1, 28, 28) uint8
    labels: torch.Tensor  # (N,) int64

    def __len__(self) -> int:
        return len(self.labels)

    def to(self, device: torch.device | str) -> Split:
        return Split(self.images.to(device), self.labels.to(device))


@dataclass
class DataBundle:
    name: str
    train: Split
    val: Split
    test: Split
    labels: list[str]
    mean: float = MNIST_MEAN
    std: float = MNIST_STD


def _unpack_archives(folder: Path) -> None:
    """Decompress ``*.gz`` beside themselves, atomically (temp file + rename).

    torchvision would unpack in place, and several training processes sharing a data root
    (torchrun, or runs side by side) could then read a half-written file.
    """
    for gz in folder.glob("*-ubyte.gz"):
        target = gz.with_suffix("")
        if target.exists():
            continue
        tmp = folder / f".{target.name}.{os.getpid()}.tmp"
        try:
            with gzip.open(gz, "rb") as src, open(tmp, "wb") as out:
                shutil.copyfileobj(src, out)
            os.replace(tmp, target)
        except (EOFError, gzip.BadGzipFile, zlib.error) as exc:  # cut short or corrupt: say which file
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
            raise DatasetNotFoundError(f"{gz} is damaged ({exc or 'cut short'}): fetch it again") from exc
        except OSError:  # read-only data root: torchvision then says what is missing
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)


def _load_torchvision(name: str, root: Path, train: bool, download: bool):
    import torchvision

    cls = getattr(torchvision.datasets, DATASETS[name])
    raw = root / DATASETS[name] / "raw"
    if raw.is_dir():
        _unpack_archives(raw)
    try:
        return cls(root=str(root), train=train, download=download)
    except RuntimeError as exc:  # "Dataset not found" or a failed download
        folder = root / DATASETS[name] / "raw"
        raise DatasetNotFoundError(
            f"{DATASETS[name]} is not available under {root} and could not be downloaded ({exc}).\n"
            f"Put these four files (the official gzipped IDX files) into {folder}/:\n  "
            + "\n  ".join(RAW_FILES)
            + "\nor point --data-root (env DATA_ROOT) at a folder that has "
            f"{DATASETS[name]}/raw/ inside. torchvision verifies their md5 and unpacks them offline."
        ) from exc


def load_split(name: str, root: str | Path, train: bool, download: bool = True) -> Split:
    ds = _load_torchvision(name, Path(root), train, download)
    return Split(ds.data.unsqueeze(1).contiguous(), ds.targets.long().clone())


def load_data(
    name: str = "mnist",
    root: str | Path = "data",
    val_size: int = 5000,
    seed: int = 0,
    limit_train: int | None = None,
    limit_test: int | None = None,
    download: bool = True,
) -> DataBundle:
    """Train/val split is a fixed seeded permutation of the official training set; the official
    test set is kept for the final report only."""
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; choose from {sorted(DATASETS)}")
    full = load_split(name, root, train=True, download=download)
    test = load_split(name, root, train=False, download=download)
    order = torch.randperm(len(full), generator=torch.Generator().manual_seed(seed))
    val_idx, train_idx = order[:val_size], order[val_size:]
    if limit_train:
        train_idx = train_idx[:limit_train]
        val_idx = val_idx[: max(1, min(val_size, limit_train // 4))]
    if limit_test:
        test = Split(test.images[:limit_test], test.labels[:limit_test])
    train = Split(full.images[train_idx], full.labels[train_idx])
    val = Split(full.images[val_idx], full.labels[val_idx])
    if name == "mnist":
        labels = [str(d) for d in range(10)]
        mean, std = MNIST_MEAN, MNIST_STD
    else:
        labels = FASHION_LABELS
        pixels = full.images.float() / 255
        mean, std = pixels.mean().item(), pixels.std().item()
    return DataBundle(name, train, val, test, labels, mean, std)


def normalize(images_u8: torch.Tensor, mean: float, std: float) -> torch.Tensor:
    return (images_u8.float() / 255 - mean) / std
