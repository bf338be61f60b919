"""Temperature fit, ECE, thresholds and AUROC on cases with known answers."""

from __future__ import annotations

import pytest
import torch

from training.calibration_metrics import (
    auroc,
    expected_calibration_error,
    fit_temperature,
    flag_rate,
    threshold_at,
)


@pytest.mark.parametrize("true_t", [0.5, 1.0, 2.5])
def test_fit_temperature_recovers_a_known_temperature(true_t: float) -> None:
    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(5000, 10, generator=gen) * 4
    # labels drawn from softmax(logits / T): the NLL is then smallest at T
    labels = torch.multinomial(torch.softmax(logits / true_t, -1), 1, generator=gen).squeeze(1)
    assert fit_temperature(logits, labels) == pytest.approx(true_t, rel=0.1)


def test_ece_known_cases() -> None:
    labels = torch.zeros(10, dtype=torch.long)
    probs = torch.full((10, 2), 0.2)
    probs[:, 0] = 0.8  # confident 0.8 everywhere...
    probs[:2] = probs[:2].flip(-1)  # ...wrong on 2 of 10 (these say class 1 at 0.8): accuracy 0.8
    assert expected_calibration_error(probs, labels) == pytest.approx(0.0, abs=1e-6)  # float32 0.8
    probs = torch.tensor([[0.9, 0.1]] * 4 + [[0.6, 0.4]] * 6)
    labels = torch.tensor([0, 0, 1, 1] + [0] * 6)  # 0.9 bin: acc 0.5; 0.6 bin: acc 1.0
    assert expected_calibration_error(probs, labels) == pytest.approx(0.4 * 0.4 + 0.6 * 0.4)


def test_threshold_and_flag_rate() -> None:
    scores = torch.arange(1000, dtype=torch.float32)
    thr = threshold_at(scores, 0.01)
    assert flag_rate(scores, thr) == pytest.approx(0.01, abs=0.002)
    assert flag_rate(torch.tensor([]), thr) == 0.0


def test_auroc() -> None:
    assert auroc(torch.tensor([2.0, 3.0]), torch.tensor([0.0, 1.0])) == 1.0
    assert auroc(torch.tensor([0.0, 1.0]), torch.tensor([2.0, 3.0])) == 0.0
    assert auroc(torch.tensor([1.0, 1.0]), torch.tensor([1.0])) == 0.5
