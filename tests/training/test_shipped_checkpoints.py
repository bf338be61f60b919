"""The checkpoints shipped in model_store/checkpoints load, verify and are as good as their cards say."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from model_store import MNIST_MEAN, MNIST_STD, ModelStore, sha256_file
from training.data import Split
from training.engine import evaluate

EXPECTED = ["cnn-mnist", "vit-mnist"]


@pytest.fixture(scope="module")
def test_slice(mnist_test) -> Split:
    """Every 10th official test image: 1000 images from both halves of the test set (the first
    5000 are written more cleanly than the last 5000, so a leading slice would flatter a model)."""
    images, labels = mnist_test
    return Split(images[::10].contiguous(), labels[::10].contiguous())


def test_every_shipped_entry_is_readable(shipped_store: Path) -> None:
    dirs = sorted(p.parent.name for p in shipped_store.glob("*/card.json"))
    assert [c.name for c in ModelStore(shipped_store).list()] == dirs  # nothing skipped as broken
    assert set(EXPECTED) <= set(dirs)


@pytest.mark.parametrize("name", EXPECTED)
def test_shipped_card_describes_its_weights(shipped_store: Path, name: str) -> None:
    if not (shipped_store / name / "card.json").is_file():
        pytest.skip(f"{name} is not shipped in {shipped_store}")
    model, card = ModelStore(shipped_store).load(name)  # refuses on a sha256 mismatch
    assert card.weights_sha256 == sha256_file(shipped_store / name / card.weights_file)
    assert card.name == name and card.preset == name
    assert card.num_params == sum(p.numel() for p in model.parameters())
    assert card.labels == [str(d) for d in range(10)]
    assert (card.preprocessing.mean, card.preprocessing.std) == (MNIST_MEAN, MNIST_STD)
    assert card.preprocessing.image_size == 28
    assert card.dataset["name"] == "mnist" and card.dataset["test_images"] == 10_000
    assert card.metrics["test_accuracy"] >= 0.994
    for key in ("command", "args", "seed", "epochs", "torch_version"):
        assert key in card.training, key


@pytest.mark.parametrize("name", EXPECTED)
def test_shipped_model_is_as_accurate_as_its_card_says(
    shipped_store: Path, test_slice: Split, name: str
) -> None:
    if not (shipped_store / name / "card.json").is_file():
        pytest.skip(f"{name} is not shipped in {shipped_store}")
    model, card = ModelStore(shipped_store).load(name)
    with torch.no_grad():
        _, acc, logits = evaluate(model, test_slice, mean=card.preprocessing.mean, std=card.preprocessing.std)
    errors = int((logits.argmax(1) != test_slice.labels).sum())
    assert acc >= 0.99, f"{name}: {errors} errors on 1000 test images"
