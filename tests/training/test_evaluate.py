"""``python -m training evaluate`` and ``compare`` on a small temporary store."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from model_store import ModelCard, Preprocessing, create_model, save_checkpoint
from training.cli import main


@pytest.fixture(scope="module")
def store(tiny_run, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny trained ViT plus an untrained small CNN."""
    root = tmp_path_factory.mktemp("eval-store")
    shutil.copytree(tiny_run.store_dir / "vit-mnist-tiny", root / "vit-mnist-tiny")
    torch.manual_seed(0)
    cnn = create_model("cnn-baseline", width=4, hidden=16)
    card = ModelCard(
        name="cnn-small", preset="cnn-baseline", architecture=cnn.cfg.to_dict(), num_params=0,
        labels=[str(d) for d in range(10)], dataset={"name": "mnist"}, preprocessing=Preprocessing(),
        metrics={}, training={"command": "none"},
    )  # fmt: skip
    save_checkpoint(cnn, card, root / "cnn-small")
    return root


def cli(*args: str, store: Path, data_root: Path) -> list[str]:
    return [*args, "--store-dir", str(store), "--data-root", str(data_root), "--device", "cpu"]


def test_evaluate_json(store: Path, data_root: Path, capsys) -> None:
    assert main(cli("evaluate", "--json", "--limit-test", "500", store=store, data_root=data_root)) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["model"] for r in rows] == ["cnn-small", "vit-mnist-tiny"]
    assert [r["arch"] for r in rows] == ["cnn", "vit"]
    for r in rows:
        assert 0 <= r["test_accuracy"] <= 1 and r["test_loss"] > 0 and r["params"] > 0
        assert r["errors"] == round((1 - r["test_accuracy"]) * 500)
    # the trained model scores exactly what its card recorded on the same 500 images
    card = json.loads((store / "vit-mnist-tiny" / "card.json").read_text())
    assert rows[1]["test_accuracy"] == pytest.approx(card["metrics"]["test_accuracy"], abs=1e-6)
    assert rows[1]["params"] == card["num_params"]


def test_evaluate_named_model_with_plots(store: Path, data_root: Path, tmp_path: Path, capsys) -> None:
    argv = cli("evaluate", "vit-mnist-tiny", "--json", "--limit-test", "100", "--plots-dir", str(tmp_path),
               store=store, data_root=data_root)  # fmt: skip
    assert main(argv) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["model"] for r in rows] == ["vit-mnist-tiny"]
    plots = sorted(p.name for p in (tmp_path / "vit-mnist-tiny").iterdir())
    assert plots == ["attention.png", "confusion.png", "misclassified.png"]


def test_evaluate_unknown_model(store: Path, data_root: Path, capsys) -> None:
    assert main(cli("evaluate", "nope", "--limit-test", "10", store=store, data_root=data_root)) == 2
    err = capsys.readouterr().err
    assert "no model 'nope'" in err and "known: cnn-small, vit-mnist-tiny" in err


def test_compare_table_and_json(store: Path, data_root: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "rows.json"
    argv = cli("compare", "--limit-test", "200", "--output", str(out), store=store, data_root=data_root)
    assert main(argv) == 0
    table = capsys.readouterr().out.strip().splitlines()
    assert table[0].startswith(
        "| model | arch | params | test loss | test accuracy | errors | ms/image bs=1 (cpu)"
    )
    assert table[1].startswith("|---|")
    assert len(table) == 4
    assert table[2].startswith("| cnn-small | cnn |")
    assert table[3].startswith("| vit-mnist-tiny | vit | 72,074 |")
    rows = json.loads(out.read_text())
    assert [r["model"] for r in rows] == ["cnn-small", "vit-mnist-tiny"]
    for r in rows:
        assert r["ms_per_image_bs1"] > 0 and r["ms_per_image_bs256"] > 0
        assert f"{100 * r['test_accuracy']:.2f}%" in table[2 + rows.index(r)]
