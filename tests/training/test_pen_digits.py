"""Generated pen-stroke training digits, and the training options that use them (--pen-digits,
--init-from)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from model_store import ModelStore
from training.data import Split
from training.pen_digits import STYLES, add_pen_digits, pen_canvas, pen_digit, pen_digits


def test_pen_digits_are_mnist_shaped_balanced_and_reproducible() -> None:
    images, labels = pen_digits(40, seed=5)
    assert images.shape == (40, 28, 28) and images.dtype == np.uint8
    assert labels.tolist() == [i % 10 for i in range(40)]
    again, _ = pen_digits(40, seed=5)
    assert np.array_equal(images, again)
    assert not np.array_equal(images, pen_digits(40, seed=6)[0])
    for img in images:  # MNIST's framing: white ink fitted into the 20x20 box, centred by mass
        ys, xs = np.nonzero(img > 20)
        assert img.max() == 255 and 18 <= max(np.ptp(ys), np.ptp(xs)) + 1 <= 21
        w = img[ys, xs].astype(float)
        assert abs(np.average(ys, weights=w) - 13.5) < 1.5 and abs(np.average(xs, weights=w) - 13.5) < 1.5


@pytest.mark.parametrize("digit", range(10))
def test_every_style_of_every_digit_draws(digit: int) -> None:
    rng = np.random.default_rng(0)
    for style in range(len(STYLES[digit])):
        img = pen_digit(digit, rng, style)
        assert (img > 128).sum() > 20  # a stroke, not a speck


def test_no_stroke_is_cut_off_at_the_canvas_edge() -> None:
    # Slant, squeeze, turn and a broad pen can together outgrow the canvas; a clipped 7 or 4 then teaches
    # the model a digit nobody wrote (about 1% of them before the strokes were fitted in).
    rng = np.random.default_rng(3)
    for i in range(1500):
        page = np.asarray(pen_canvas(i % 10, rng))
        border = np.concatenate([page[0], page[-1], page[:, 0], page[:, -1]])
        assert border.min() > 230, f"digit {i % 10} (sample {i}) touches the edge"


def test_pen_digits_are_appended_to_a_split() -> None:
    base = Split(torch.zeros(3, 1, 28, 28, dtype=torch.uint8), torch.tensor([1, 2, 3]))
    out = add_pen_digits(base, 20, seed=0)
    assert out.images.shape == (23, 1, 28, 28) and out.images.dtype == torch.uint8
    assert out.labels[:3].tolist() == [1, 2, 3] and out.labels[3:].tolist() == [i % 10 for i in range(20)]


SMALL = ["--model", "cnn-baseline", "--set", "width=4", "--set", "hidden=16", "--limit-train", "256",
         "--limit-test", "50", "--batch-size", "64", "--epochs", "1", "--ema-decay", "0"]  # fmt: skip


def test_pen_digits_join_the_training_split_only(train_cli, tmp_path: Path) -> None:
    result = train_cli([*SMALL, "--pen-digits", "64"], tmp_path / "store", tmp_path / "run")
    assert result.code == 0, result.log
    card = ModelStore(tmp_path / "store").load("cnn-baseline")[1]
    assert card.dataset["pen_digits"] == 64
    assert card.dataset["train_images"] == 256 + 64 and card.dataset["val_images"] == 256 // 4  # val: MNIST
    assert any("320 train /" in line for line in result.log)
    with pytest.raises(SystemExit, match="only for --dataset mnist"):
        train_cli(
            [*SMALL, "--pen-digits", "64", "--dataset", "fashion-mnist"], tmp_path / "s", tmp_path / "r"
        )


def test_init_from_starts_at_the_stored_weights_and_says_so(train_cli, tmp_path: Path) -> None:
    base = train_cli(SMALL, tmp_path / "base", tmp_path / "run-base")
    assert base.code == 0, base.log
    base_dir = tmp_path / "base" / "cnn-baseline"
    base_card = ModelStore(tmp_path / "base").load("cnn-baseline")[1]
    # A learning rate of 0: the fine-tuned weights, the EMA's included, are exactly the ones it started from.
    tuned = train_cli(
        [*SMALL, "--init-from", str(base_dir), "--lr", "0", "--ema-decay", "0.5"],
        tmp_path / "tuned",
        tmp_path / "run",
    )
    assert tuned.code == 0, tuned.log
    card = ModelStore(tmp_path / "tuned").load("cnn-baseline")[1]
    before, after = (
        load_file(base_dir / "model.safetensors"),
        load_file(tmp_path / "tuned/cnn-baseline/model.safetensors"),
    )
    assert before.keys() == after.keys()
    assert all(torch.equal(before[k], after[k]) for k in before)
    start = card.training["init_from"]
    assert start["path"] == str(base_dir) and start["weights_sha256"] == base_card.weights_sha256
    assert start["command"] == base_card.training["command"] and start["epochs"] == 1
    assert f"--init-from {base_dir}" in card.training["command"]

    assert "init_from" not in base_card.training  # a fresh start records none

    # --resume in a folder whose state belongs to another run (the fine-tune's) is refused, not continued.
    with pytest.raises(SystemExit, match="--resume: .* belongs to a run with --init-from"):
        train_cli([*SMALL, "--resume"], tmp_path / "tuned", tmp_path / "run")


def test_init_from_refuses_another_architecture(train_cli, tmp_path: Path) -> None:
    base = train_cli(SMALL, tmp_path / "base", tmp_path / "run-base")
    assert base.code == 0
    wider = [a if a != "width=4" else "width=8" for a in SMALL]
    with pytest.raises(SystemExit, match="another architecture.*width: 4 there, 8 here"):
        train_cli(
            [*wider, "--init-from", str(tmp_path / "base" / "cnn-baseline")], tmp_path / "s", tmp_path / "r"
        )
    with pytest.raises(SystemExit, match="--init-from"):
        train_cli([*SMALL, "--init-from", str(tmp_path / "missing")], tmp_path / "s", tmp_path / "r")
