"""Knowledge distillation (training.distill, ``train --teacher``): the loss, and a student that really
learns what its teacher says."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from model_store import ModelStore, load_checkpoint, save_checkpoint
from training.data import load_split
from training.distill import distillation_loss


def test_loss_mixes_the_labels_and_the_teacher() -> None:
    g = torch.Generator().manual_seed(0)
    student, teacher = torch.randn(16, 10, generator=g), torch.randn(16, 10, generator=g)
    labels = torch.randint(0, 10, (16,), generator=g)
    plain = F.cross_entropy(student, labels, label_smoothing=0.1)
    only_labels = distillation_loss(student, labels, teacher, "hard", 0.0, label_smoothing=0.1)
    assert torch.allclose(only_labels, plain)
    to_teacher = F.cross_entropy(student, teacher.argmax(1))
    assert torch.allclose(distillation_loss(student, labels, teacher, "hard", 1.0), to_teacher)
    half = distillation_loss(student, labels, teacher, "hard", 0.5, label_smoothing=0.1)
    assert torch.allclose(half, 0.5 * plain + 0.5 * to_teacher)
    # soft: nothing to learn from a teacher that already agrees; more the further apart they are
    agree = distillation_loss(student, labels, student.clone(), "soft", 1.0, temperature=3.0)
    assert agree.abs() < 1e-6
    apart = distillation_loss(student, labels, teacher, "soft", 1.0, temperature=3.0)
    closer = distillation_loss(student, labels, 0.5 * (student + teacher), "soft", 1.0, temperature=3.0)
    assert apart > closer > 0


SMALL = ["--model", "cnn-baseline", "--set", "width=8", "--set", "hidden=32", "--limit-train", "2048",
         "--limit-test", "500", "--batch-size", "64", "--epochs", "3", "--lr", "3e-3",
         "--warmup-epochs", "0.2", "--ema-decay", "0", "--no-augment"]  # fmt: skip


@pytest.fixture(scope="module")
def shifted_teacher(shipped_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shipped CNN with its output rows rotated: it reads a d as (d + 1) % 10."""
    model, card = load_checkpoint(shipped_store / "cnn-mnist")
    head = model.classifier[-1]
    with torch.no_grad():
        head.weight.copy_(head.weight.roll(1, dims=0))
        head.bias.copy_(head.bias.roll(1, dims=0))
    out = tmp_path_factory.mktemp("teacher") / "shifted"
    return save_checkpoint(model, dataclasses.replace(card, name="shifted", calibration=None), out)


def test_a_student_learns_its_teachers_answers(
    train_cli, shifted_teacher: Path, data_root: Path, tmp_path: Path
) -> None:
    """Taught by the teacher alone (weight 1), the student reads what the teacher reads, not the labels;
    the card says who taught it."""
    result = train_cli([*SMALL, "--teacher", str(shifted_teacher), "--distill-weight", "1"],
                       tmp_path / "store", tmp_path / "run")  # fmt: skip
    assert result.code == 0, result.log
    assert any(line.startswith(f"distilling from {shifted_teacher}") for line in result.log)
    model, card = ModelStore(tmp_path / "store").load("cnn-baseline")
    teacher_card = load_checkpoint(shifted_teacher)[1]
    taught = card.training["teacher"]
    assert taught["weights_sha256"] == teacher_card.weights_sha256 and taught["kind"] == "hard"
    assert taught["weight"] == 1.0 and f"--teacher {shifted_teacher}" in card.training["command"]
    assert card.metrics["test_accuracy"] < 0.2  # against the true labels

    test = load_split("mnist", data_root, train=False, download=False)
    x = (test.images[:500].float() / 255 - card.preprocessing.mean) / card.preprocessing.std
    with torch.no_grad():
        read = model(x).argmax(1)
    assert (read == (test.labels[:500] + 1) % 10).float().mean() > 0.6  # what the teacher would say
    with pytest.raises(SystemExit, match="belongs to a run with --teacher"):  # its state is the teacher's
        train_cli([*SMALL, "--resume"], tmp_path / "store", tmp_path / "run")


def test_distillation_options_need_a_teacher_of_the_same_digits(
    train_cli, shifted_teacher: Path, tmp_path: Path
) -> None:
    with pytest.raises(SystemExit, match="need --teacher"):
        train_cli([*SMALL, "--distill-weight", "0.3"], tmp_path / "s", tmp_path / "r")
    with pytest.raises(SystemExit, match="--distill-weight: between 0 and 1"):
        train_cli([*SMALL, "--teacher", str(shifted_teacher), "--distill-weight", "2"], tmp_path / "s",
                  tmp_path / "r")  # fmt: skip
    model, card = load_checkpoint(shifted_teacher)
    letters = save_checkpoint(model, dataclasses.replace(card, labels=list("abcdefghij")), tmp_path / "abc")
    with pytest.raises(SystemExit, match="--teacher: .* trained for labels"):
        train_cli([*SMALL, "--teacher", str(letters)], tmp_path / "s", tmp_path / "r")
