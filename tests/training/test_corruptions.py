"""Robustness suite: corruption generators are seeded and give real uploads; the command runs."""

from __future__ import annotations

import argparse
import io
import json
import logging
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from testkit.digits import drawn_mnist_digits
from training.corruptions import CORRUPTIONS, FAMILIES, FAMILY_OF, corrupt
from training.data import FASHION_LABELS
from training.real_outliers import fashion_check
from training.robustness import add_robustness_args, markdown, run_robustness, summarise


@pytest.fixture(scope="module")
def digit() -> np.ndarray:
    """A drawn MNIST-style digit: the generators need a digit, not MNIST itself."""
    return drawn_mnist_digits(1)[0][0]


def test_every_corruption_is_a_seeded_upload(digit: np.ndarray) -> None:
    assert set(CORRUPTIONS) == set(FAMILY_OF) and "low_res" in FAMILIES
    for name in CORRUPTIONS:
        data = corrupt(name, digit, 5)
        assert isinstance(data, bytes) and data == corrupt(name, digit, 5), name  # deterministic
        assert data != corrupt(name, digit, 6), name  # the seed matters
        img = Image.open(io.BytesIO(data))
        assert img.format in ("PNG", "JPEG", "TIFF"), name
        if name == "tight_crop":  # a thumbnail to a photo, cropped to the digit (a 1 is narrow)
            assert 10 <= max(img.size) <= 240 and min(img.size) >= 1, (name, img.size)
            continue
        # an A4 scan at 300 dpi; a phone's screenshot (up to 1080 x 2376); else up to a 2 MP photo
        most = {"page_scan": 3508, "app_screenshot": 2376}.get(name, 1600)
        assert 56 <= max(img.size) <= most and min(img.size) >= 28, (name, img.size)


def test_robustness_command_smoke(shipped_store: Path, data_root: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    parser = argparse.ArgumentParser()
    add_robustness_args(parser, argparse.Namespace(model_store_dir=shipped_store, data_root=data_root))
    args = parser.parse_args(["cnn-mnist", "--limit", "20", "--corruptions", "gaussian_blur",
                              "--per-style", "4", "--out-dir", str(tmp_path)])  # fmt: skip
    result = run_robustness(args)
    assert set(result["accuracy"]) == {"gaussian_blur"} and result["limit"] == 20
    assert 0.5 <= result["accuracy"]["gaussian_blur"]["cnn-mnist"] <= 1.0
    # blurred digits are still digits: the shipped detector calls few of them "not a digit"
    assert 0.0 <= result["not_a_digit"]["gaussian_blur"]["cnn-mnist"] <= 0.2
    assert json.loads((tmp_path / "robustness.json").read_text())["models"] == ["cnn-mnist"]
    assert (tmp_path / "robustness.png").stat().st_size > 1000
    out = capsys.readouterr().out
    assert "| gaussian_blur | blur |" in out and "cnn-mnist: not a digit" in out
    # the served confidence against the accuracy on the same uploads: calibrated, it is close to it
    cal = result["calibration"]["gaussian_blur"]["cnn-mnist"]
    pooled = result["calibration_pooled"]["cnn-mnist"]
    assert 0.0 <= cal["ece"] <= 0.2 and abs(cal["confidence"] - cal["accuracy"]) <= 0.2
    assert pooled == cal  # one corruption ran: the pool is that one
    assert "| ECE (15 bins), pooled |" in out and "| largest ECE, cnn-mnist | `gaussian_blur`" in out
    styles = result["writing_styles"]["styles"]
    assert styles and all(row["read"].keys() == {"cnn-mnist"} for row in styles.values())
    assert "| writing style | cnn-mnist: read / not a digit |" in out
    # scikit-learn (the dev extras) holds the 8x8 digits by other writers
    assert result["optdigits"]["digits"] == 1797 and "| 8px, dark on white |" in out
    if not (data_root / "FashionMNIST" / "raw").is_dir():
        assert result["fashion_mnist"] is None
        return
    # real pictures that are not digits, never fitted on: the shipped detector calls most of them so
    for size in ("28px", "112px"):
        rates = result["fashion_mnist"][size]
        assert rates["images"] == 20 and rates["flagged"]["cnn-mnist"] >= 0.6, (size, rates)
        assert set(rates["per_class"]["cnn-mnist"]) <= set(FASHION_LABELS)
    assert "| Fashion-MNIST class | cnn-mnist, 28px |" in out


def test_fashion_check_is_skipped_without_the_data(tmp_path: Path, caplog) -> None:  # type: ignore[no-untyped-def]
    with caplog.at_level(logging.INFO, logger="training"):
        assert fashion_check({}, tmp_path, limit=10, seed=0) is None
    assert str(tmp_path / "FashionMNIST" / "raw") in caplog.text


def test_targets_are_checked_only_over_what_ran() -> None:
    only_clean = summarise({"clean": {"m": 0.99}}, ["m"])
    assert only_clean["targets"]["m"] == {}  # nothing measured: no target passes by default
    blur = summarise({"clean": {"m": 0.99}, "gaussian_blur": {"m": 0.98}}, ["m"])
    assert blur["targets"]["m"] == {"mean>=97": True, "each>=90": True}  # low_res did not run
    low = summarise({"gaussian_blur": {"m": 0.99}, "low_res_8": {"m": 0.89}}, ["m"])
    assert low["targets"]["m"] == {"mean>=97": False, "each>=90": False, "low_res>=95": False}
    # The table of a clean-only run has no "mean over corruptions" row (it would read nan)
    acc, flags = {"clean": {"m": 0.99}}, {"clean": {"m": 0.0}}
    assert "mean over corruptions" not in markdown(acc, flags, summarise(acc, ["m"], flags), ["m"])
    acc, flags = {**acc, "gaussian_blur": {"m": 0.98}}, {**flags, "gaussian_blur": {"m": 0.01}}
    table = markdown(acc, flags, summarise(acc, ["m"], flags), ["m"])
    assert "| **mean over corruptions** | | **98.0** | 1.0 |" in table
