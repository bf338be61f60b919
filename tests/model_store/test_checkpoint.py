"""The checkpoint contract: safetensors + card.json, verified by sha256, never unpickled."""

from __future__ import annotations

import json
import logging
import pickle
import re
import stat
from pathlib import Path

import pytest
import torch
from torch import nn

import model_store
from model_store import (
    CheckpointError,
    ModelCard,
    ModelStore,
    Preprocessing,
    create_model,
    load_checkpoint,
    read_card,
    save_checkpoint,
    sha256_file,
)

MODEL_STORE_DIR = Path(model_store.__file__).resolve().parent


def make_card(model: nn.Module, name: str, preset: str) -> ModelCard:
    return ModelCard(
        name=name,
        preset=preset,
        architecture=model.cfg.to_dict(),
        num_params=0,  # save_checkpoint fills it in
        labels=[str(d) for d in range(10)],
        dataset={"name": "mnist", "train_images": 10, "val_images": 0, "test_images": 0},
        preprocessing=Preprocessing(),
        metrics={"test_accuracy": 0.5, "test_loss": 1.25},
        training={"command": "python -m training train --model x", "seed": 0, "epochs": 1},
    )


def save_tiny(directory: Path, preset: str = "vit-mnist-tiny", **overrides) -> tuple[nn.Module, ModelCard]:
    torch.manual_seed(0)
    model = create_model(preset, **overrides)
    with torch.no_grad():
        for p in model.parameters():  # the default head is zeros: make the logits informative
            p.add_(torch.randn_like(p) * 0.05)
    card = make_card(model, directory.name, preset)
    save_checkpoint(model, card, directory)
    return model.eval(), card


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    directory = tmp_path / "store" / "tiny"
    save_tiny(directory, depth=2)
    return directory


def edit_card(directory: Path, change) -> None:
    path = directory / "card.json"
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


# --- round trip ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("preset", "overrides"), [("vit-mnist-tiny", {"depth": 2}), ("cnn-mnist", {})])
def test_round_trip(tmp_path: Path, preset: str, overrides: dict) -> None:
    torch.manual_seed(0)
    model = create_model(preset, **overrides)
    if preset.startswith("cnn"):  # move the BatchNorm running statistics off their defaults
        model.train()
        with torch.no_grad():
            model(torch.randn(8, 1, 28, 28) * 2 + 1)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.05)
    model.eval()
    card = make_card(model, "m", preset)
    out = save_checkpoint(model, card, tmp_path / "m")
    assert out == tmp_path / "m"
    assert sorted(p.name for p in out.iterdir()) == ["card.json", "model.safetensors"]
    assert card.weights_sha256 == sha256_file(out / "model.safetensors")
    assert card.num_params == sum(p.numel() for p in model.parameters())

    loaded, loaded_card = load_checkpoint(out)
    assert not loaded.training
    assert type(loaded) is type(model)
    assert loaded.cfg == model.cfg
    expected, got = model.state_dict(), loaded.state_dict()
    assert expected.keys() == got.keys()
    for key in expected:
        assert torch.equal(expected[key], got[key]), key
    x = torch.randn(4, 1, 28, 28)
    with torch.no_grad():
        assert torch.equal(model(x), loaded(x))
    assert loaded_card == card
    assert loaded_card.to_dict() == json.loads((out / "card.json").read_text())


def test_saved_checkpoint_is_readable_by_the_serving_user(saved: Path) -> None:
    assert stat.S_IMODE(saved.stat().st_mode) == 0o755
    for name in ("card.json", "model.safetensors"):
        assert stat.S_IMODE((saved / name).stat().st_mode) == 0o644, name


def test_card_dict_round_trip(saved: Path) -> None:
    card = read_card(saved)
    again = ModelCard.from_dict(json.loads(json.dumps(card.to_dict())))
    assert again == card
    assert isinstance(again.preprocessing, Preprocessing)
    assert again.arch == "vit"
    assert again.model_config().depth == 2


def test_save_replaces_existing_checkpoint_and_leaves_no_temp_dirs(tmp_path: Path) -> None:
    first, _ = save_tiny(tmp_path / "m", depth=1)
    second, card = save_tiny(tmp_path / "m", depth=2)  # different architecture, same name
    assert [p.name for p in tmp_path.iterdir()] == ["m"]
    loaded, loaded_card = load_checkpoint(tmp_path / "m")
    assert len(loaded.blocks) == 2
    assert loaded_card.weights_sha256 == card.weights_sha256


# --- refusals ------------------------------------------------------------------------------------


def test_tampered_weights_are_refused(saved: Path) -> None:
    weights = saved / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0x01  # one bit of one float
    weights.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="sha256 mismatch.*refusing"):
        load_checkpoint(saved)


def test_missing_weights(saved: Path) -> None:
    (saved / "model.safetensors").unlink()
    with pytest.raises(CheckpointError, match="model.safetensors: weights file not found"):
        load_checkpoint(saved)


def test_missing_card(saved: Path) -> None:
    (saved / "card.json").unlink()
    with pytest.raises(CheckpointError, match="card.json: card not found"):
        load_checkpoint(saved)


def test_invalid_json(saved: Path) -> None:
    (saved / "card.json").write_text('{"name": "tiny",')
    with pytest.raises(CheckpointError, match="not valid JSON"):
        load_checkpoint(saved)


def test_card_that_is_not_an_object(saved: Path) -> None:
    (saved / "card.json").write_text("[1, 2]")
    with pytest.raises(CheckpointError, match="expected a JSON object, got list"):
        read_card(saved)


@pytest.mark.parametrize("version", [2, 0, None, "1"])
def test_wrong_schema_version(saved: Path, version) -> None:
    edit_card(saved, lambda d: d.update(schema_version=version))
    with pytest.raises(CheckpointError, match=r"schema_version .* is not supported \(expected 1\)"):
        load_checkpoint(saved)


def test_unknown_card_field(saved: Path) -> None:
    edit_card(saved, lambda d: d.update(colour="blue"))
    with pytest.raises(CheckpointError, match=r"unknown field\(s\) \['colour'\]"):
        load_checkpoint(saved)


@pytest.mark.parametrize("field", ["metrics", "architecture", "preprocessing"])
def test_missing_card_field(saved: Path, field: str) -> None:
    edit_card(saved, lambda d: d.pop(field))
    with pytest.raises(CheckpointError, match=rf"missing field\(s\) \['{field}'\]"):
        load_checkpoint(saved)


def test_bad_architecture_block(saved: Path) -> None:
    edit_card(saved, lambda d: d["architecture"].update(arch="resnet"))
    with pytest.raises(CheckpointError, match="unknown architecture 'resnet'"):
        read_card(saved)
    edit_card(saved, lambda d: d["architecture"].update(arch="vit", patch_size=5))
    with pytest.raises(CheckpointError, match="not divisible by patch_size"):
        read_card(saved)


def test_bad_preprocessing_block(saved: Path) -> None:
    edit_card(saved, lambda d: d["preprocessing"].update(invert=True))
    with pytest.raises(CheckpointError, match="invert"):
        read_card(saved)


def test_architecture_that_does_not_match_the_weights(saved: Path) -> None:
    edit_card(saved, lambda d: d["architecture"].update(dim=32))  # sha256 still matches the file
    with pytest.raises(CheckpointError, match="do not fit the card's architecture"):
        load_checkpoint(saved)
    edit_card(saved, lambda d: d["architecture"].update(dim=64, depth=3))  # a missing block
    with pytest.raises(
        CheckpointError, match=r"(?s)do not fit the card's architecture.*Missing key.*blocks\.2\."
    ):
        load_checkpoint(saved)


# --- no pickle, ever -----------------------------------------------------------------------------


def test_model_store_source_never_unpickles() -> None:
    pattern = re.compile(r"\bpickle\b|torch\.load|\bjoblib\b|\bdill\b")
    sources = sorted(MODEL_STORE_DIR.glob("*.py"))
    assert len(sources) >= 6
    offenders = [f"{p.name}:{i}" for p in sources for i, line in enumerate(p.read_text().splitlines(), 1)
                 if pattern.search(line)]  # fmt: skip
    assert offenders == []


class _Payload:
    """Unpickling this creates a marker file: proof that code ran."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


@pytest.mark.parametrize("writer", ["torch.save", "pickle"])
def test_pickle_named_safetensors_is_refused(saved: Path, tmp_path: Path, writer: str) -> None:
    marker = tmp_path / "code-ran"
    weights = saved / "model.safetensors"
    payload = {"payload": _Payload(marker), "state": create_model("vit-mnist-tiny", depth=2).state_dict()}
    if writer == "torch.save":
        torch.save(payload, weights)
    else:
        weights.write_bytes(pickle.dumps(payload))
    edit_card(saved, lambda d: d.update(weights_sha256=sha256_file(weights)))  # a consistent forgery
    with pytest.raises(CheckpointError, match="weights do not fit"):
        load_checkpoint(saved)
    assert not marker.exists()


# --- the store -----------------------------------------------------------------------------------


def test_store_lists_good_entries_and_skips_broken_ones(tmp_path: Path, caplog) -> None:
    root = tmp_path / "store"
    save_tiny(root / "good-a", depth=1)
    save_tiny(root / "good-b", "cnn-baseline", width=4, hidden=8)
    (root / "broken").mkdir()
    (root / "broken" / "card.json").write_text("{not json")
    (root / "old").mkdir()
    save_tiny(root / "old", depth=1)
    edit_card(root / "old", lambda d: d.update(schema_version=0))
    (root / "no-card").mkdir()  # not a model directory at all
    (root / "README.txt").write_text("not a model")

    store = ModelStore(root)
    with caplog.at_level(logging.WARNING, logger="model_store.store"):
        cards = store.list()
    assert [c.name for c in cards] == ["good-a", "good-b"]
    assert [c.arch for c in cards] == ["vit", "cnn"]
    skipped = " ".join(r.getMessage() for r in caplog.records)
    assert "broken" in skipped and "old" in skipped

    model, card = store.load("good-b")
    assert card.name == "good-b" and not model.training
    (root / "good-b").rename(root / "renamed")  # names() are what load() takes: the folders
    assert store.names() == ["good-a", "renamed"] and store.load("renamed")[1].name == "good-b"


def test_store_load_unknown_name_lists_known_models(tmp_path: Path) -> None:
    root = tmp_path / "store"
    save_tiny(root / "alpha", depth=1)
    save_tiny(root / "beta", depth=1)
    with pytest.raises(CheckpointError, match=r"no model 'gamma' in store .*\(known: alpha, beta\)"):
        ModelStore(root).load("gamma")


def test_store_names_cannot_escape_the_root(tmp_path: Path) -> None:
    save_tiny(tmp_path / "outside", depth=1)  # a valid checkpoint next to the store
    save_tiny(tmp_path / "store" / "inside", depth=1)
    store = ModelStore(tmp_path / "store")
    for name in ["../outside", "..", ".", str(tmp_path / "outside")]:
        with pytest.raises(CheckpointError, match="no model"):
            store.load(name)


def test_missing_store_is_empty(tmp_path: Path) -> None:
    store = ModelStore(tmp_path / "nowhere")
    assert store.list() == []
    with pytest.raises(CheckpointError, match=r"known: none"):
        store.load("vit-mnist")


def test_save_untrained_writes_a_loadable_checkpoint_that_says_so(tmp_path: Path) -> None:
    from model_store import save_untrained

    save_untrained("cnn-baseline", tmp_path / "a", name="a", seed=5, note="smoke")
    save_untrained("cnn-baseline", tmp_path / "b", name="b", seed=5)
    model, card = ModelStore(tmp_path).load("a")
    assert card.name == "a" and card.preset == "cnn-baseline" and card.training["epochs"] == 0
    assert card.dataset["note"] == "smoke" and card.num_params == model.get_num_params()
    same_seed = ModelStore(tmp_path).load("b")[0]
    for p, q in zip(model.state_dict().values(), same_seed.state_dict().values(), strict=True):
        assert torch.equal(p, q)
