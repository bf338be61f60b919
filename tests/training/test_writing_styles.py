"""Other writers' styles (training.writing_styles): drawn like the page, read and not flagged by the
shipped models."""

from __future__ import annotations

import numpy as np

from model_store.serving import ServingHead
from training.writing_styles import STYLES, markdown, style_uploads, writing_styles_check

# A 1 whose long up-stroke turns toward the horizontal is a 7 to MNIST's writers (and to many readers):
# measured and reported, not held to the bar.
AMBIGUOUS = {"one with a long up-stroke"}


def test_style_uploads_are_seeded_model_inputs() -> None:
    for name in STYLES:
        x, refused = style_uploads(name, 3, seed=1)
        assert x.shape == (3, 28, 28) and x.dtype == np.float32 and not refused.any(), name
        assert np.array_equal(x, style_uploads(name, 3, seed=1)[0])
        assert not np.array_equal(x, style_uploads(name, 3, seed=2)[0])
        assert 0.0 <= x.min() and x.max() <= 1.0 and x.max() > 0.9  # ink, MNIST's way round


def test_shipped_models_read_other_writers_styles(shipped_heads: dict[str, ServingHead]) -> None:
    # Before the slashed zero joined the pen digits, both models read it as an 8 (70-75%) or flagged it.
    result = writing_styles_check(shipped_heads, per_style=40, seed=0)
    for name, row in result["styles"].items():
        assert row["refused"] == 0, name
        for model in shipped_heads:
            if name not in AMBIGUOUS:
                assert row["read"][model] >= 0.9, (name, model, row)
            assert row["not_a_digit"][model] <= 0.1, (name, model, row)
    table = markdown(result, list(shipped_heads))
    assert table.count("\n") == len(STYLES) + 1 and "| zero slashed through its outline |" in table
