"""Calibration data beside a checkpoint: round trip, sha256 verification, old checkpoints, ServingHead,
and the digit detector's serving side (layer summaries, traced = eager, width check)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
import torch
from torch import nn

from model_store import (
    CheckpointError,
    ModelCard,
    ModelStore,
    Preprocessing,
    create_model,
    load_checkpoint,
    save_checkpoint,
)
from model_store.calibration import (
    CALIBRATION_FILE,
    OOD_FILE,
    Calibration,
    fit_mahalanobis,
    load_calibration,
    mahalanobis_score,
    save_calibration,
)
from model_store.digit_detector import DETECTOR_KEYS, detector_score, fold_standardisation
from model_store.serving import ServingHead

PRESETS = [("vit-mnist-tiny", {"depth": 1}), ("cnn-baseline", {"width": 4, "hidden": 8})]


def save_model(directory: Path, preset: str, **overrides) -> tuple[nn.Module, ModelCard]:
    torch.manual_seed(0)
    model = create_model(preset, **overrides)
    with torch.no_grad():
        for p in model.parameters():  # the ViT head starts at zero: make the logits informative
            p.add_(torch.randn_like(p) * 0.05)
    card = ModelCard(
        name=directory.name, preset=preset, architecture=model.cfg.to_dict(), num_params=0,
        labels=[str(d) for d in range(10)], dataset={"name": "mnist"}, preprocessing=Preprocessing(),
        metrics={}, training={"command": "test"},
    )  # fmt: skip
    save_checkpoint(model.eval(), card, directory)
    return model, card


def features(model: nn.Module, head: ServingHead, n: int = 64) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.rand(n, 1, 28, 28, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        f, _, _, _ = head.layers(head.normalize(x))
    return x, f


def calibrate(directory: Path, preset: str, **overrides) -> Calibration:
    model, card = load_checkpoint(directory)
    _, f = features(model, ServingHead(model, card))
    labels = torch.arange(len(f)) % 10
    means, w = fit_mahalanobis(f, labels, 10)
    calib = Calibration(temperature=1.7, method="mahalanobis", threshold=-3.5, whitened_means=means,
                        whitening=w, metrics={"test_ece": 0.01})  # fmt: skip
    save_calibration(directory, calib, "python -m training calibrate x")
    return calib


@pytest.mark.parametrize(("preset", "overrides"), PRESETS)
def test_round_trip_and_serving_contract(tmp_path: Path, preset: str, overrides: dict) -> None:
    directory = tmp_path / "m"
    save_model(directory, preset, **overrides)
    calib = calibrate(directory, preset, **overrides)
    model, card = load_checkpoint(directory)  # the card with a calibration block still loads
    assert set(card.calibration["files"]) == {CALIBRATION_FILE, OOD_FILE}
    assert card.calibration["command"] == "python -m training calibrate x"
    loaded = load_calibration(directory, card)
    assert loaded is not None and loaded.temperature == 1.7 and loaded.threshold == -3.5
    assert torch.equal(loaded.whitening, calib.whitening)

    head = ServingHead(model, card, directory).eval()
    assert head.digit_threshold == -3.5 and float(head.temperature) == pytest.approx(1.7)
    x, f = features(model, head)
    with torch.no_grad():
        out = head(x)
        logits = model(head.normalize(x))
    assert out.shape == (len(x), 11) and out.dtype == torch.float32
    torch.testing.assert_close(out[:, :10], torch.softmax(logits / 1.7, -1))
    torch.testing.assert_close(out[:, 10], mahalanobis_score(f, calib.whitened_means, calib.whitening))
    traced = torch.jit.trace(head, x[:2])  # the server traces forward: a pure tensor function
    torch.testing.assert_close(traced(x), out)
    if preset.startswith("vit"):
        with torch.no_grad():
            out2, attn = head.forward_with_attention(x)
        torch.testing.assert_close(out2, out, rtol=1e-3, atol=1e-3)  # SDPA vs explicit softmax
        assert attn.shape[:2] == (len(x), 1)


def test_mahalanobis_is_zero_at_a_class_mean_and_grows_away() -> None:
    gen = torch.Generator().manual_seed(0)
    f = torch.randn(2000, 8, generator=gen) * torch.linspace(0.5, 3, 8)
    labels = torch.arange(2000) % 4
    f = f + 10 * torch.nn.functional.one_hot(labels, 8).float()
    means, w = fit_mahalanobis(f, labels, 4)
    centre = f[labels == 2].mean(0, keepdim=True)
    assert mahalanobis_score(centre, means, w).abs().item() < 1e-3
    assert mahalanobis_score(centre + 50, means, w).item() < -10


@pytest.mark.parametrize("name", [CALIBRATION_FILE, OOD_FILE])
def test_tampered_calibration_is_refused(tmp_path: Path, name: str) -> None:
    directory = tmp_path / "m"
    save_model(directory, *PRESETS[0][:1], **PRESETS[0][1])
    calibrate(directory, PRESETS[0][0])
    path = directory / name
    data = bytearray(path.read_bytes())
    data[-2] ^= 1
    path.write_bytes(bytes(data))
    model, card = load_checkpoint(directory)  # the weights are fine
    with pytest.raises(CheckpointError, match="sha256 mismatch"):
        ServingHead(model, card, directory)


def test_missing_calibration_file_is_refused(tmp_path: Path) -> None:
    directory = tmp_path / "m"
    save_model(directory, PRESETS[0][0], **PRESETS[0][1])
    calibrate(directory, PRESETS[0][0])
    (directory / OOD_FILE).unlink()
    model, card = load_checkpoint(directory)
    with pytest.raises(CheckpointError, match="calibration file not found"):
        load_calibration(directory, card)


def test_old_checkpoint_is_served_uncalibrated_with_a_warning(tmp_path: Path, caplog) -> None:
    directory = tmp_path / "old"
    save_model(directory, PRESETS[0][0], **PRESETS[0][1])
    card_json = json.loads((directory / "card.json").read_text())
    card_json.pop("calibration")  # a card written before the field existed
    (directory / "card.json").write_text(json.dumps(card_json))
    model, card = load_checkpoint(directory)
    assert card.calibration is None
    with caplog.at_level(logging.WARNING, logger="model_store.serving"):
        head = ServingHead(model, card, directory)
    assert "uncalibrated" in caplog.text
    assert float(head.temperature) == 1.0 and head.digit_threshold is None and head.method == "max_softmax"
    x = torch.rand(3, 1, 28, 28)
    with torch.no_grad():
        out = head(x)
    torch.testing.assert_close(out[:, 10], out[:, :10].max(-1).values)


def random_detector(width: int, hidden: int = 5) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(2)
    shapes = {"detector.w1": (hidden, width), "detector.b1": (hidden,), "detector.w2": (1, hidden),
              "detector.b2": (1,)}  # fmt: skip
    return {k: torch.randn(*shape, generator=gen) for k, shape in shapes.items()}


def summaries_of(head: ServingHead, x: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return head.layers(head.normalize(x))[2]


@pytest.mark.parametrize(("preset", "overrides"), PRESETS)
def test_detector_round_trip_traced_equals_eager(tmp_path: Path, preset: str, overrides: dict) -> None:
    directory = tmp_path / "m"
    model, card = save_model(directory, preset, **overrides)
    x = torch.rand(16, 1, 28, 28, generator=torch.Generator().manual_seed(3))
    summary = summaries_of(ServingHead(model.eval(), card), x)
    detector = random_detector(summary.shape[1])
    save_calibration(directory, Calibration(temperature=0.5, method="detector", threshold=0.25,
                                            detector=detector), "cmd")  # fmt: skip
    model, card = load_checkpoint(directory)
    loaded = load_calibration(directory, card)
    assert loaded is not None and loaded.method == "detector" and loaded.whitening is None
    assert all(torch.equal(loaded.detector[k], detector[k]) for k in DETECTOR_KEYS)

    head = ServingHead(model, card, directory).eval()
    assert head.digit_threshold == 0.25 and "generated non-digits" in head.method_description
    with torch.no_grad():
        out = head(x)
        logits = model(head.normalize(x))
    torch.testing.assert_close(out[:, :10], torch.softmax(logits / 0.5, -1))  # the classifier is untouched
    torch.testing.assert_close(out[:, 10], detector_score(summary, *(detector[k] for k in DETECTOR_KEYS)))
    assert out[:, 10].std() > 0  # the score depends on the picture
    torch.testing.assert_close(torch.jit.trace(head, x[:2])(x), out)


def test_vit_layer_summaries_end_with_the_models_own_features() -> None:
    torch.manual_seed(0)
    model = create_model("vit-mnist-tiny", depth=2).eval()
    x = torch.randn(4, 1, 28, 28)
    with torch.no_grad():
        features, logits, summary, _ = ServingHead(model, _card(model)).layers(x)
        tokens, _ = model.forward_features(x)
    torch.testing.assert_close(features, tokens[:, 0])
    torch.testing.assert_close(logits, model(x))
    dim = model.cfg.dim  # final CLS, (CLS, mean patch) per block, final mean patch
    assert summary.shape == (4, dim * (2 + 2 * model.cfg.depth))
    torch.testing.assert_close(summary[:, -dim:], tokens[:, 1:].mean(1))


def _card(model: nn.Module) -> ModelCard:
    return ModelCard(name="m", preset="p", architecture=model.cfg.to_dict(), num_params=0,
                     labels=[str(d) for d in range(10)], dataset={}, preprocessing=Preprocessing(),
                     metrics={}, training={})  # fmt: skip


def test_detector_of_the_wrong_width_is_refused(tmp_path: Path) -> None:
    directory = tmp_path / "m"
    model, card = save_model(directory, *PRESETS[1][:1], **PRESETS[1][1])
    width = summaries_of(ServingHead(model.eval(), card), torch.rand(1, 1, 28, 28)).shape[1]
    save_calibration(directory, Calibration(method="detector", threshold=0.0,
                                            detector=random_detector(width + 1)), "cmd")  # fmt: skip
    model, card = load_checkpoint(directory)
    with pytest.raises(CheckpointError, match="layer summaries"):
        ServingHead(model, card, directory)


def test_a_detector_without_its_tensors_is_invalid() -> None:
    with pytest.raises(ValueError, match="detector"):
        Calibration(method="detector", threshold=0.0, detector=None)


def test_folded_standardisation_gives_the_same_layer() -> None:
    gen = torch.Generator().manual_seed(0)
    w, b = torch.randn(3, 6, generator=gen), torch.randn(3, generator=gen)
    mean, std = torch.randn(6, generator=gen), torch.rand(6, generator=gen) + 0.5
    x = torch.randn(10, 6, generator=gen)
    wf, bf = fold_standardisation(w, b, mean, std)
    torch.testing.assert_close(x @ wf.T + bf, ((x - mean) / std) @ w.T + b)


@pytest.mark.parametrize("preset", ["vit-mnist-tiny", "cnn-baseline"])
def test_scores_that_do_not_read_the_hidden_layers_skip_them_and_answer_the_same(preset: str) -> None:
    torch.manual_seed(0)
    model = create_model(preset).eval()
    head = ServingHead(model, _card(model))  # no calibration data: max_softmax, no detector
    x = torch.rand(3, 1, 28, 28)
    with torch.no_grad():
        features, logits, empty, _ = head.layers(head.normalize(x), summarise=False)
        full = head.head(*head.layers(head.normalize(x))[:3])
        assert empty.shape == (3, 0) and head.layers(head.normalize(x))[2].shape[1] > 0
        torch.testing.assert_close(head(x), full)
        traced = torch.jit.trace(head, x)  # the serving path stays traceable without the taps
        torch.testing.assert_close(traced(x), full)


@pytest.mark.parametrize("name", ["cnn-mnist", "vit-mnist"])
def test_a_blank_input_is_no_digit(shipped_store: Path, name: str) -> None:
    """A tensor of zeros, sent as it is (the v2 routes and gRPC do not preprocess tensors), is no digit,
    whatever the detector makes of a picture it was never fitted on (the CNN's called one a digit)."""
    model, card = ModelStore(shipped_store).load(name, "cpu")
    head = ServingHead(model.eval(), card, shipped_store / name).eval()
    x = torch.zeros(3, 1, 28, 28)
    x[2, 0, 10:18, 13:15] = 1.0  # a stroke: scored by the detector as usual
    with torch.no_grad():
        score = head(x)[:, -1]
        traced = torch.jit.trace(head, x)(x)[:, -1]
    assert head.digit_threshold is not None
    assert (score[:2] < head.digit_threshold).all() and (traced[:2] < head.digit_threshold).all()
    assert score[2] > -1000.0
