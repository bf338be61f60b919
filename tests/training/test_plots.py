"""The PNG plots are written, non-empty, for a ViT (with attention maps) and a CNN (without), on drawn
digits (no MNIST needed)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from model_store import create_model
from testkit.digits import drawn_mnist_digits
from training.data import DataBundle, Split
from training.engine import predict
from training.plots import write_all_plots

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def bundle() -> DataBundle:
    """60 drawn digits as a split: the plots need digits, not MNIST itself."""
    images, labels = drawn_mnist_digits(60)
    split = Split(torch.from_numpy(images).unsqueeze(1), torch.from_numpy(labels))
    return DataBundle("mnist", split, split, split, [str(d) for d in range(10)])


HISTORY = [
    {"epoch": 1, "train_loss": 0.9, "train_acc": 0.96, "val_loss": 0.5, "val_acc": 0.97},
    {"epoch": 2, "train_loss": 0.7, "train_acc": 0.98, "val_loss": 0.3, "val_acc": 0.985},
]


def assert_png(path: Path) -> None:
    assert path.is_file(), path
    data = path.read_bytes()
    assert data.startswith(PNG_MAGIC) and len(data) > 2000, path


@pytest.mark.parametrize(
    ("preset", "overrides", "expected"),
    [
        ("vit-mnist-tiny", {"depth": 2}, ["curves", "confusion", "misclassified", "attention"]),
        ("cnn-baseline", {"width": 4, "hidden": 16}, ["curves", "confusion", "misclassified"]),
    ],
)
def test_write_all_plots(bundle: DataBundle, tmp_path: Path, preset: str, overrides: dict, expected) -> None:
    torch.manual_seed(0)
    model = create_model(preset, **overrides)
    with torch.no_grad():
        for p in model.parameters():  # an untrained but non-constant classifier: some mistakes to show
            p.add_(torch.randn_like(p) * 0.1)
    logits = predict(model, bundle.test, mean=bundle.mean, std=bundle.std)
    assert (logits.argmax(1) != bundle.test.labels).any()
    out = tmp_path / "plots"
    paths = write_all_plots(model, bundle.test, logits, HISTORY, bundle, out)
    assert paths == [out / f"{name}.png" for name in expected]
    for path in paths:
        assert_png(path)
    assert sorted(p.name for p in out.iterdir()) == sorted(f"{name}.png" for name in expected)


def test_no_history_no_curves(bundle: DataBundle, tmp_path: Path) -> None:
    model = create_model("cnn-baseline", width=4, hidden=16)
    logits = predict(model, bundle.test, mean=bundle.mean, std=bundle.std)
    paths = write_all_plots(model, bundle.test, logits, [], bundle, tmp_path)
    assert [p.name for p in paths] == ["confusion.png", "misclassified.png"]


def test_attention_plot_with_fewer_images_than_rows(bundle: DataBundle, tmp_path: Path) -> None:
    few = Split(bundle.test.images[:3], bundle.test.labels[:3])
    model = create_model("vit-mnist-tiny", depth=1)
    logits = predict(model, few, mean=bundle.mean, std=bundle.std)
    paths = write_all_plots(model, few, logits, [], bundle, tmp_path)
    assert_png(tmp_path / "attention.png")
    assert len(paths) == 3
