"""``fit-confidence``: the logistic fit of how sure ``/read`` is, and the calibration error it is
judged by."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from model_store.text_confidence import FEATURES, TextConfidence
from training.calibration_metrics import fit_logistic, sureness_error
from training.cli import main


def test_the_logistic_fit_recovers_the_model_that_made_the_data() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal([2.0, -1.0, 0.0], [1.0, 3.0, 0.5], size=(20000, 3))
    bias, coefficients = 0.5, np.array([1.5, -0.4, 0.0])
    y = (rng.random(len(x)) < 1 / (1 + np.exp(-(bias + x @ coefficients)))).astype(float)
    fitted_bias, fitted = fit_logistic(x, y)
    assert abs(fitted_bias - bias) < 0.15 and np.allclose(fitted, coefficients, atol=0.08)
    # A feature constant over the data weighs nothing.
    _, with_constant = fit_logistic(np.c_[x, np.ones(len(x))], y)
    assert with_constant[-1] == 0.0


def test_the_calibration_error_of_a_sureness() -> None:
    rng = np.random.default_rng(1)
    p = rng.random(50000)
    right = rng.random(len(p)) < p  # as sure as it is right
    assert sureness_error(p, right) < 0.01
    always = np.full(len(p), 0.9)  # always 0.9 sure, right half the time
    assert abs(sureness_error(always, right) - 0.4) < 0.01


def test_fit_confidence_prints_a_model_to_paste_and_its_calibration(shipped_store: Path, data_root: Path,
                                                                    capsys) -> None:  # fmt: skip
    code = main(["fit-confidence", "--store-dir", str(shipped_store), "--data-root", str(data_root),
                 "--device", "cpu", "--families", "strokes", "touching", "--count", "8",
                 "--not-numbers", "2"])  # fmt: skip
    assert code == 0
    out = capsys.readouterr().out
    assert re.search(r"^\| touching \| [\d.]+ / [\d.]+ \| [\d.]+ / [\d.]+ \|$", out, re.MULTILINE), out
    # Fitted on pictures that are not numbers too (2 of each of 10 families and the pen's words as strokes,
    # read by both models): their table.
    assert re.search(r"and \d+ readings of pictures that are not numbers \(of 44,", out), out
    assert re.search(r"^\| pen_words \| 2 \|", out, re.MULTILINE), out
    pasted = re.search(r"^CONFIDENCE = (TextConfidence\(.*\))$", out, re.MULTILINE)
    assert pasted is not None, out
    fitted = eval(pasted[1], {"TextConfidence": TextConfidence})  # what the docstring says to paste
    assert len(fitted.coefficients) == len(FEATURES)
