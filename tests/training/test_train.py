"""``python -m training train`` on a small slice of real MNIST: learning, the card, resuming."""

from __future__ import annotations

import math
import re
import shlex
import shutil
from pathlib import Path

import pytest
import torch

from model_store import ModelStore, sha256_file
from training.data import load_data
from training.engine import evaluate

LN10 = math.log(10)  # cross-entropy of uniform predictions (the ViT head starts at zero)


def test_loss_goes_down(tiny_run) -> None:
    rows = tiny_run.metrics()
    assert [r["epoch"] for r in rows] == [1, 2]
    first, second = rows
    assert second["train_loss"] < first["train_loss"]
    assert second["val_loss"] < first["val_loss"]
    assert second["val_loss"] < LN10 - 0.05
    assert second["lr"] < first["lr"]  # cosine decay after the warm-up
    assert (tiny_run.run_dir / "last.pt").is_file()


def test_checkpoint_loads_and_card_records_the_run(tiny_run, data_root: Path) -> None:
    store = ModelStore(tiny_run.store_dir)
    assert [c.name for c in store.list()] == ["vit-mnist-tiny"]
    model, card = store.load("vit-mnist-tiny")  # verifies the sha256
    assert card.weights_sha256 == sha256_file(tiny_run.store_dir / "vit-mnist-tiny" / "model.safetensors")
    assert card.preset == "vit-mnist-tiny"
    assert card.architecture["depth"] == 2 and card.architecture["dropout"] == 0.1
    assert card.num_params == sum(p.numel() for p in model.parameters())
    assert card.labels == [str(d) for d in range(10)]
    assert card.dataset == {"name": "mnist", "train_images": 1024, "val_images": 256, "test_images": 500,
                            "val_split_seed": 3, "pen_digits": 0}  # fmt: skip

    training = card.training
    assert training["command"].startswith("python -m training train --model vit-mnist-tiny")
    assert shlex.split(training["command"])[3:5] == ["train", "--model"]
    assert training["args"]["overrides"] == ["depth=2", "dropout=0.1"]
    assert training["args"]["lr"] == 2e-3 and training["args"]["batch_size"] == 64
    assert training["seed"] == 3 and training["epochs"] == 2
    assert training["torch_version"] == torch.__version__
    assert training["world_size"] == 1 and training["amp"] == "fp32"
    assert training["wall_time_s"] > 0

    rows = tiny_run.metrics()
    assert set(card.metrics) >= {"test_accuracy", "test_loss", "val_accuracy", "val_loss", "train_loss"}
    assert card.metrics["val_loss"] == pytest.approx(rows[-1]["val_loss"])
    assert card.metrics["train_loss"] == pytest.approx(rows[-1]["train_loss"])
    # The recorded test metrics are reproducible from the stored weights.
    data = load_data("mnist", data_root, limit_train=1, limit_test=500, download=False)
    loss, acc, _ = evaluate(model, data.test, mean=card.preprocessing.mean, std=card.preprocessing.std)
    assert acc == pytest.approx(card.metrics["test_accuracy"], abs=1e-6)
    assert loss == pytest.approx(card.metrics["test_loss"], rel=1e-5)
    assert loss < LN10 - 0.05


def test_interrupted_run_resumes_exactly(tiny_run, tiny_args, train_cli, tmp_path: Path, monkeypatch) -> None:
    """Kill a 2-epoch run right after epoch 1 is saved, resume it, and land on the same weights as
    the uninterrupted run (same total epochs, so the same LR schedule)."""
    import training.train as train_module

    real_save_state = train_module.save_state

    class Killed(Exception):
        pass

    def save_then_die(path, state):
        real_save_state(path, state)
        raise Killed

    store, run = tmp_path / "store", tmp_path / "run"
    monkeypatch.setattr(train_module, "save_state", save_then_die)
    with pytest.raises(Killed):
        train_cli(tiny_args, store, run)
    monkeypatch.setattr(train_module, "save_state", real_save_state)
    assert (run / "last.pt").is_file() and not store.exists()

    resumed = train_cli([*tiny_args, "--resume"], store, run)
    assert resumed.code == 0
    assert any(f"resumed from {run / 'last.pt'} at epoch 2" in line for line in resumed.log)
    assert not any(line.startswith("epoch   1/2") for line in resumed.log)  # epoch 1 was not redone

    got, expected = resumed.metrics(), tiny_run.metrics()
    assert [r["epoch"] for r in got] == [1, 2]
    for g, e in zip(got, expected, strict=True):
        for key in ("train_loss", "train_acc", "val_loss", "val_acc", "lr"):
            assert g[key] == pytest.approx(e[key], rel=1e-6, abs=1e-7), (g["epoch"], key)
    a = ModelStore(tiny_run.store_dir).load("vit-mnist-tiny")[0].state_dict()
    b = ModelStore(store).load("vit-mnist-tiny")[0].state_dict()
    for key in a:
        torch.testing.assert_close(b[key], a[key], rtol=1e-5, atol=1e-6, msg=key)


def test_resume_extends_a_finished_run(train_cli, tmp_path: Path) -> None:
    """``--epochs 1`` then ``--epochs 2 --resume`` continues at epoch 2, EMA and history included."""
    args = ["--model", "cnn-baseline", "--set", "width=8", "--set", "hidden=32", "--limit-train", "512",
            "--limit-test", "100", "--batch-size", "64", "--warmup-epochs", "0",
            "--ema-decay", "0.5"]  # fmt: skip
    store, run = tmp_path / "store", tmp_path / "run"
    first = train_cli([*args, "--epochs", "1"], store, run)
    assert first.code == 0
    assert not any("resumed" in line for line in first.log)
    epoch1 = first.metrics()
    assert [r["epoch"] for r in epoch1] == [1]

    second = train_cli([*args, "--epochs", "2", "--resume"], store, run)
    assert second.code == 0
    assert any("at epoch 2" in line and line.startswith("resumed from") for line in second.log)
    rows = second.metrics()
    assert [r["epoch"] for r in rows] == [1, 2]
    assert rows[0] == epoch1[0]  # history carried over, not recomputed

    state = torch.load(run / "last.pt", map_location="cpu", weights_only=True)
    assert state["epoch"] == 2
    assert int(state["ema"]["n_averaged"]) == 2 * (512 // 64)  # the EMA kept counting across the restart
    card = ModelStore(store).load("cnn-baseline")[1]
    assert card.training["epochs"] == 2 and card.training["args"]["resume"] is True
    # Resumed as another architecture: refused by name (was a load_state_dict traceback).
    wider = [a if a != "width=8" else "width=16" for a in args]
    with pytest.raises(SystemExit, match=r"--resume: .* --set \{'width': 8, 'hidden': 32\}, not"):
        train_cli([*wider, "--epochs", "3", "--resume"], store, run)
    assert card.training["ema_decay"] == 0.5


def test_resume_without_state_starts_from_scratch(train_cli, tmp_path: Path) -> None:
    args = ["--model", "cnn-baseline", "--set", "width=4", "--set", "hidden=16", "--limit-train", "128",
            "--limit-test", "50", "--batch-size", "64", "--epochs", "1", "--ema-decay", "0",
            "--resume"]  # fmt: skip
    result = train_cli(args, tmp_path / "store", tmp_path / "run")
    assert result.code == 0
    assert any("starting from scratch" in line for line in result.log)
    assert [r["epoch"] for r in result.metrics()] == [1]


def test_regularisation_options_reach_the_run_and_the_card(train_cli, tmp_path: Path) -> None:
    args = ["--model", "vit-mnist-tiny", "--set", "depth=2", "--set", "drop_path=0.1", "--limit-train", "256",
            "--limit-test", "50", "--batch-size", "64", "--epochs", "1", "--ema-decay", "0",
            "--elastic-alpha", "20", "--elastic-sigma", "3", "--erase-prob", "0.2"]  # fmt: skip
    result = train_cli(args, tmp_path / "store", tmp_path / "run")
    assert result.code == 0
    model, card = ModelStore(tmp_path / "store").load("vit-mnist-tiny")
    assert card.architecture["drop_path"] == 0.1 and model.cfg.drop_path == 0.1
    assert [b.drop_path.p for b in model.blocks] == pytest.approx([0.0, 0.1])
    recorded = card.training["args"]
    assert (recorded["elastic_alpha"], recorded["elastic_sigma"], recorded["erase_prob"]) == (20, 3, 0.2)
    assert "--elastic-alpha 20" in card.training["command"]


def test_compiled_training_stores_the_plain_model(train_cli, tmp_path: Path, data_root: Path) -> None:
    """--compile trains through torch.compile, yet the checkpoint is the plain module's (no wrapper
    prefixes) and reproduces the test metrics its card records."""
    args = ["--model", "vit-mnist-tiny", "--set", "depth=1", "--limit-train", "256", "--limit-test", "100",
            "--batch-size", "64", "--epochs", "1", "--ema-decay", "0", "--compile"]  # fmt: skip
    result = train_cli(args, tmp_path / "store", tmp_path / "run")
    assert result.code == 0, result.log
    model, card = ModelStore(tmp_path / "store").load("vit-mnist-tiny")  # strict load: the plain keys
    assert card.training["args"]["compile"] is True and "--compile" in card.training["command"]
    data = load_data("mnist", data_root, limit_train=1, limit_test=100, download=False)
    _, acc, _ = evaluate(model, data.test, mean=card.preprocessing.mean, std=card.preprocessing.std)
    assert acc == pytest.approx(card.metrics["test_accuracy"], abs=1e-6)
    assert model.head.weight.abs().sum() > 0  # starts at zero: the compiled steps trained the stored weights


def test_no_calibrate_leaves_the_fit_for_later(train_cli, tmp_path: Path) -> None:
    """--no-calibrate stores the trained model without a temperature or digit detector (served
    uncalibrated, with a warning) and says which command fits them."""
    args = ["--model", "cnn-baseline", "--set", "width=4", "--set", "hidden=16", "--limit-train", "128",
            "--limit-test", "50", "--batch-size", "64", "--epochs", "1", "--ema-decay", "0",
            "--no-calibrate"]  # fmt: skip
    result = train_cli(args, tmp_path / "store", tmp_path / "run")
    assert result.code == 0, result.log
    _, card = ModelStore(tmp_path / "store").load("cnn-baseline")
    assert card.calibration is None
    assert any("python -m training calibrate cnn-baseline" in line for line in result.log)

    plain = train_cli([a for a in args if a != "--no-calibrate"], tmp_path / "store2", tmp_path / "run2")
    assert plain.code == 0
    assert ModelStore(tmp_path / "store2").load("cnn-baseline")[1].calibration is not None


def test_a_checkpoint_in_the_store_is_replaced_only_when_asked(
    train_cli, tiny_run, tiny_args, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    """A run into a store entry that exists is refused before any data is read or folder made (it
    replaced the shipped checkpoint without a word); so is a name that would leave the store (``..``
    deleted the store's parent) and a --set value of the wrong type. --replace replaces it."""
    store = tmp_path / "store"
    shutil.copytree(tiny_run.store_dir, store)
    card = (store / "vit-mnist-tiny" / "card.json").read_bytes()
    for extra, says in (
        ([], "already holds a checkpoint: pass --name NEW to keep it, or --replace"),
        (["--name", ".."], "--name '..'"),
        (["--name", "a/b"], "--name 'a/b'"),
        (["--name", "other", "--set", "dim=abc"], "--set: option 'dim' takes an int"),
        (["--resume"], "--resume: no "),  # no state in the run folder: it would start from scratch
    ):
        with pytest.raises(SystemExit, match=re.escape(says)):
            train_cli([*tiny_args, *extra], store, tmp_path / "run")
        assert not (tmp_path / "run").exists()
    assert (store / "vit-mnist-tiny" / "card.json").read_bytes() == card
    replaced = train_cli([*tiny_args, "--epochs", "1", "--replace"], store, tmp_path / "run")
    assert replaced.code == 0 and (store / "vit-mnist-tiny" / "card.json").read_bytes() != card
