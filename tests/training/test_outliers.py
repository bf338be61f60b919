"""The outlier set and the drawn digits are generated in code: seeded and deterministic."""

from __future__ import annotations

import numpy as np

from model_store.preprocess import preprocess_bytes
from training.drawn import drawn_digits
from training.outliers import FAMILIES, generate_outliers


def test_outliers_are_seeded_and_deterministic() -> None:
    a, b = generate_outliers(2, seed=3), generate_outliers(2, seed=3)
    assert [o.png for o in a] == [o.png for o in b]
    assert [o.family for o in a] == [f for f in FAMILIES for _ in range(2)]
    assert [o.png for o in generate_outliers(2, seed=4)] != [o.png for o in a]


def test_drawn_digits_are_seeded_and_go_through_the_upload_preprocessing() -> None:
    pngs, labels = drawn_digits(1, seed=0)
    assert pngs == drawn_digits(1, seed=0)[0]
    assert labels.tolist() == list(range(10))
    x = preprocess_bytes(pngs[7], 1 << 22)
    assert x.shape == (28, 28) and x.dtype == np.float32 and 0.0 <= x.min() and x.max() <= 1.0
