"""Letters drawn on the pad in shapes the detector was not fitted on (training.other_letters): called "not
a digit" by the shipped models."""

from __future__ import annotations

import numpy as np

from model_store.serving import ServingHead
from training.other_letters import OTHER_LETTERS, letter_uploads, markdown, other_letters_check
from training.pen_letters import LETTER_STROKES


def test_letter_uploads_are_seeded_model_inputs_apart_from_the_fitted_templates() -> None:
    for name, strokes in OTHER_LETTERS.items():
        x, refused = letter_uploads(name, 3, seed=1)
        assert x.shape == (3, 28, 28) and x.dtype == np.float32 and not refused.any(), name
        assert np.array_equal(x, letter_uploads(name, 3, seed=1)[0])
        assert not np.array_equal(x, letter_uploads(name, 3, seed=2)[0])
        assert 0.0 <= x.min() and x.max() <= 1.0 and x.max() > 0.9  # ink, MNIST's way round
        assert strokes not in LETTER_STROKES.values(), name  # another shape than the one fitted on


def test_shipped_models_call_letters_in_other_shapes_no_digit(shipped_heads: dict[str, ServingHead]) -> None:
    """Before the detectors were fitted on letters written with the pen, 79 / 83% (cnn / vit) of these
    were, now 89 / 93%; a letter in a shape of its own still passes now and then (an A with a round top
    is a 9 to both)."""
    result = other_letters_check(shipped_heads, per_letter=10, seed=0)
    assert all(row["refused"] == 0 for row in result["letters"].values())
    for model in shipped_heads:
        assert result["not_a_digit"][model] >= 0.85, (model, result["not_a_digit"])
    table = markdown(result, list(shipped_heads))
    assert table.count("\n") == len(OTHER_LETTERS) + 2 and "| x, two arcs back to back |" in table
