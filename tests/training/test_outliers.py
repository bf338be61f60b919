"""The outlier set and the drawn digits are generated in code: seeded and deterministic; a detector
fitted on one seed of them flags another."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image, ImageDraw

from model_store import ModelCard, Preprocessing, create_model
from model_store.calibration import METHODS
from model_store.digit_detector import DETECTOR_KEYS, detector_score
from model_store.preprocess import ImageError, preprocess_bytes
from model_store.serving import ServingHead
from training import outliers
from training.calibrate import leave_one_family_out, markdown
from training.calibration_inputs import Outputs, uploads_to_tensor
from training.calibration_metrics import flag_rate, threshold_at
from training.detector_fit import fit_detector
from training.drawn import PAD_SIZE, drawn_digits, png_bytes
from training.outliers import (
    FAMILIES,
    _silhouette,
    generate_outliers,
    pen_letter,
    photographed_object,
    photographed_scene,
)


def test_outliers_are_seeded_and_deterministic() -> None:
    a, b = generate_outliers(2, seed=3), generate_outliers(2, seed=3)
    assert [o.png for o in a] == [o.png for o in b]
    assert [o.family for o in a] == [f for f in FAMILIES for _ in range(2)]
    assert [o.png for o in generate_outliers(2, seed=4)] != [o.png for o in a]


def test_photographed_objects_are_solid_and_never_a_bar() -> None:
    # A bar would be a marker-drawn 1 and a ring a 0: both must stay out of the outlier set.
    rng = np.random.default_rng(0)
    for _ in range(30):
        mask = np.asarray(_silhouette(rng)) > 0
        ys, xs = np.nonzero(mask)
        assert 0.5 <= (np.ptp(xs) + 1) / (np.ptp(ys) + 1) <= 2.0
        padded = Image.new("L", (PAD_SIZE + 2, PAD_SIZE + 2), 0)
        padded.paste(Image.fromarray(mask.astype(np.uint8) * 255), (1, 1))
        ImageDraw.floodfill(padded, (0, 0), 128)  # the paper, reached from outside
        assert 0 not in np.asarray(padded)  # no paper enclosed: no hole
    img, what = photographed_object(rng)
    assert img.mode == "L" and img.size == (PAD_SIZE, PAD_SIZE) and what.startswith("object")


def test_photographed_scenes_are_photos_not_drawings() -> None:
    """Colour, soft and grainy, many tones (a drawing has a few), sent at one of the upload sizes; the
    preprocessing finds something in most (a refused picture never reaches the detector)."""
    rng = np.random.default_rng(0)
    refused = 0
    for _ in range(20):
        img, what = photographed_scene(rng)
        assert img.mode == "RGB" and img.width == img.height in (28, 64, 128, 256, 400), what
        assert len(np.unique(np.asarray(img.convert("L")))) > 40, what
        try:
            preprocess_bytes(png_bytes(img), 1 << 22)
        except ImageError:
            refused += 1
    assert refused <= 3


def test_pen_letters_are_drawn_as_large_as_a_digit_and_whole_on_the_pad() -> None:
    """A letter alone on the square pad, small ones too, stands about as tall or wide as a drawn digit,
    with paper all round it; and none is a letter a reader takes for a digit."""
    rng = np.random.default_rng(0)
    letters = set()
    for _ in range(40):
        img, what = pen_letter(rng)
        ink = np.asarray(img) < 128
        ys, xs = np.nonzero(ink)
        assert img.size == (PAD_SIZE, PAD_SIZE) and not ink[[0, -1]].any() and not ink[:, [0, -1]].any()
        assert 0.3 * PAD_SIZE <= max(np.ptp(ys), np.ptp(xs)) <= 0.85 * PAD_SIZE, what
        letters.add(what.removeprefix("pen letter "))
    assert len(letters) >= 15 and not letters & set("IliOoDQZzSsbGgqB")


def test_drawn_digits_are_seeded_and_go_through_the_upload_preprocessing() -> None:
    pngs, labels = drawn_digits(1, seed=0)
    assert pngs == drawn_digits(1, seed=0)[0]
    assert labels.tolist() == list(range(10))
    x = preprocess_bytes(pngs[7], 1 << 22)
    assert x.shape == (28, 28) and x.dtype == np.float32 and 0.0 <= x.min() and x.max() <= 1.0


@pytest.mark.parametrize("members", [1, 3])
def test_a_detector_fitted_on_one_seed_flags_outliers_of_another(mnist_test, members: int) -> None:
    """On a small untrained CNN's layer summaries, fitted on outlier seed 1, measured on seed 2; one MLP
    or the mean of several, stored as one MLP as wide as all of them."""
    torch.manual_seed(0)
    model = create_model("cnn-baseline", width=4, hidden=8).eval()
    card = ModelCard(name="m", preset="cnn-baseline", architecture=model.cfg.to_dict(), num_params=0,
                     labels=[str(d) for d in range(10)], dataset={}, preprocessing=Preprocessing(),
                     metrics={}, training={})  # fmt: skip
    head = ServingHead(model, card)
    images = mnist_test[0].float() / 255

    def summaries(x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return head.layers(head.normalize(x))[2]

    def outliers(seed: int) -> torch.Tensor:
        return uploads_to_tensor([o.png for o in generate_outliers(12, seed)])[0]

    detector = fit_detector(
        summaries(images[:1500]), summaries(outliers(1)), hidden=16, epochs=40, members=members
    )
    assert detector["detector.w1"].shape[0] == detector["detector.w2"].shape[1] == 16 * members
    score = lambda x: detector_score(summaries(x), *(detector[k] for k in DETECTOR_KEYS))  # noqa: E731
    threshold = threshold_at(score(images[1500:2500]), 0.02)  # held-out digits set the threshold
    assert flag_rate(score(images[2500:3500]), threshold) < 0.05
    assert flag_rate(score(outliers(2)), threshold) > 0.6


def test_leave_one_family_out_refits_without_each_family() -> None:
    """The `calibrate --leave-one-family-out` measurement runs on summaries alone (no Mahalanobis
    statistics): digits and outliers far apart in summary space, so every held-out family is found."""
    g = torch.Generator().manual_seed(0)
    n, width = 40, 8
    digits = torch.randn(4 * n, width, generator=g)
    fams = torch.arange(len(FAMILIES)).repeat_interleave(n)
    outliers = torch.randn(len(fams), width, generator=g) + 6.0

    def outputs(summaries: torch.Tensor) -> Outputs:
        return Outputs(torch.zeros(len(summaries), 2), torch.zeros(len(summaries), 10), summaries)

    sets = {"val": outputs(digits[2 * n :]), "outliers": outputs(outliers), "families": fams}
    args = argparse.Namespace(detector_epochs=20, detector_members=2)
    recall = leave_one_family_out(digits[: 2 * n], outputs(outliers), fams, sets, args, 0.05)
    assert set(recall) == set(FAMILIES)
    assert min(recall.values()) > 0.9, recall


def test_calibrate_prints_the_readme_table_from_its_measurements(shipped_store: Path) -> None:
    results = {m: json.loads((shipped_store / m / "calibration.json").read_text())["metrics"]
               for m in ("vit-mnist", "cnn-mnist")}  # fmt: skip
    table = markdown(results).splitlines()
    assert table[0] == "| | vit-mnist | cnn-mnist |"
    assert len(table) == 2 + 6 + len(METHODS) + len(FAMILIES) + 1
    chosen = results["vit-mnist"]["method"]
    recall = results["vit-mnist"]["methods"][chosen]["outlier_recall"]
    assert f" / {100 * recall:.1f}% (" in next(r for r in table if r.startswith(f"| {chosen}:"))
    assert sum(r.startswith(f"| {chosen} flags: ") for r in table) == len(FAMILIES)
    # the writing styles training teaches are among the digits the shipped detectors were fitted on
    assert all(m["pen_digits_fitted_on"] == 2000 for m in results.values())


def test_the_display_fonts_are_no_outliers_fonts(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Letters in a seven-segment face are a display's bars, its digits digits: a machine with fonts-dseg
    (CI installs it for the display check) must fit the digit score on the same outliers as one without."""
    for name in ("DejaVuSans.ttf", "DSEG7Classic-Regular.ttf", "DSEG14Modern-Bold.ttf"):
        (tmp_path / name).write_bytes(b"")
    monkeypatch.setattr(outliers, "FONT_DIRS", (str(tmp_path),))
    outliers.font_files.cache_clear()
    try:
        assert [Path(f).name for f in outliers.font_files()] == ["DejaVuSans.ttf"]
    finally:
        outliers.font_files.cache_clear()
