"""Dataset loading: a clear error when MNIST is missing, and a fixed seeded train/val split."""

from __future__ import annotations

import shutil
import urllib.error
from pathlib import Path

import pytest
import torch

from training.cli import main
from training.data import RAW_FILES, DatasetNotFoundError, load_data, load_split


@pytest.fixture
def offline(monkeypatch) -> list[str]:
    """Make every torchvision download attempt fail as it would without network."""
    import torchvision.datasets.mnist as tv_mnist

    attempts: list[str] = []

    def no_network(url, *args, **kwargs):
        attempts.append(url)
        raise urllib.error.URLError("no network in tests")

    monkeypatch.setattr(tv_mnist, "download_and_extract_archive", no_network)
    return attempts


def assert_helpful(message: str, root: Path) -> None:
    for name in RAW_FILES:
        assert name in message
    assert str(root / "MNIST" / "raw") in message
    assert "--data-root" in message and "DATA_ROOT" in message


def test_missing_data_without_download(tmp_path: Path) -> None:
    with pytest.raises(DatasetNotFoundError) as info:
        load_data("mnist", tmp_path, download=False)
    assert_helpful(str(info.value), tmp_path)


def test_missing_data_when_download_fails(tmp_path: Path, offline: list[str]) -> None:
    with pytest.raises(DatasetNotFoundError) as info:
        load_data("mnist", tmp_path, download=True)
    assert offline, "a download should have been attempted"
    assert_helpful(str(info.value), tmp_path)


def test_cli_reports_missing_data_with_exit_code_2(tmp_path: Path, offline: list[str], capsys) -> None:
    paths = ["--data-root", str(tmp_path / "empty"), "--store-dir", str(tmp_path / "store"),
             "--run-dir", str(tmp_path / "run")]  # fmt: skip
    code = main(["train", "--model", "vit-mnist-tiny", "--device", "cpu", *paths, "--no-progress"])
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: MNIST is not available under")
    assert_helpful(err, tmp_path / "empty")
    assert not (tmp_path / "store").exists()


def test_unknown_dataset() -> None:
    with pytest.raises(ValueError, match="unknown dataset 'emnist'"):
        load_data("emnist")


def test_split_is_fixed_disjoint_and_limited(data_root: Path) -> None:
    a = load_data("mnist", data_root, seed=1, limit_train=400, limit_test=30, download=False)
    assert (len(a.train), len(a.val), len(a.test)) == (400, 100, 30)
    assert a.train.images.dtype == torch.uint8 and a.train.images.shape[1:] == (1, 28, 28)
    assert a.train.labels.dtype == torch.int64 and set(a.train.labels.tolist()) == set(range(10))
    assert a.labels == [str(d) for d in range(10)]
    b = load_data("mnist", data_root, seed=1, limit_train=400, limit_test=30, download=False)
    assert torch.equal(a.train.images, b.train.images) and torch.equal(a.val.labels, b.val.labels)
    c = load_data("mnist", data_root, seed=2, limit_train=400, limit_test=30, download=False)
    assert not torch.equal(a.train.images, c.train.images)
    # validation images are held out of training (compare whole images, as bytes)
    train = {bytes(img.numpy()) for img in a.train.images}
    assert not any(bytes(img.numpy()) in train for img in a.val.images)


def test_gzipped_files_alone_are_unpacked_offline(data_root: Path, tmp_path: Path, mnist_test) -> None:
    raw = tmp_path / "MNIST" / "raw"
    raw.mkdir(parents=True)
    for name in RAW_FILES:
        shutil.copy(data_root / "MNIST" / "raw" / name, raw / name)
    split = load_split("mnist", tmp_path, train=False, download=False)
    assert torch.equal(split.images, mnist_test[0]) and torch.equal(split.labels, mnist_test[1])
    unpacked = sorted(p.name for p in raw.iterdir() if not p.name.endswith(".gz"))
    assert unpacked == sorted(name.removesuffix(".gz") for name in RAW_FILES)  # no temp files left
    before = {p.name: p.stat().st_mtime_ns for p in raw.iterdir()}
    load_split("mnist", tmp_path, train=False, download=False)
    assert {p.name: p.stat().st_mtime_ns for p in raw.iterdir()} == before  # not unpacked twice


def test_a_damaged_archive_is_named_and_leaves_nothing_behind(data_root: Path, tmp_path: Path) -> None:
    """A gzipped file cut short (a download that stopped) was an EOFError traceback and a temp file left."""
    raw = tmp_path / "MNIST" / "raw"
    raw.mkdir(parents=True)
    for name in RAW_FILES:
        shutil.copy(data_root / "MNIST" / "raw" / name, raw / name)
    cut = raw / "t10k-images-idx3-ubyte.gz"
    cut.write_bytes(cut.read_bytes()[:50_000])
    with pytest.raises(DatasetNotFoundError, match="t10k-images-idx3-ubyte.gz is damaged"):
        load_split("mnist", tmp_path, train=False, download=False)
    assert not [p for p in raw.iterdir() if p.name.endswith(".tmp")]
