"""Pictures sent to ``/read`` that are not numbers, generated in code (seeded): the right answer to each is
no number, so any text read in one is wrong. What ``fit-confidence`` fits the reading's confidence on
beside the numbers, and what ``read-eval`` reports it on.

Families: the outliers of ``training.outliers`` that are no number (all but ``multi_digit``), typeset
words (``words``: random letters of ``outliers.LETTERS``, the letters no reader takes for a digit, in the
machine's fonts), words written with the pen on the wide pad (``pen_words``, ``training.pen_letters``) and
one letter written alone on it (``lone_letters``: a word of one letter, not ``outliers``' ``pen_letters``,
a letter drawn as large as a digit on the square pad), each as its picture; ``pen_drawings`` gives the
same words and letters as the strokes the page sends.
"""

from __future__ import annotations

import numpy as np
from PIL import Image

from model_store.drawing import Drawing

from . import outliers
from .drawn import png_bytes
from .pen_letters import LETTERS, random_word, word_paths
from .pen_numbers import Stroke, as_sent, pad_drawing

FAMILIES = (
    "letters", "symbols", "shapes", "scribbles", "noise", "smudges", "objects", "scenes", "words",
    "pen_words", "lone_letters",
)  # fmt: skip
DRAWN = ("pen_words", "lone_letters")  # the families also sent as their strokes (``pen_drawings``)


def make_not_numbers(family: str, count: int, seed: int = 0) -> list[bytes]:
    """``count`` PNG uploads of ``family``; the same seed gives the same bytes (an outlier family gives
    the first ``count`` of ``outliers.generate_outliers(count, seed)``'s)."""
    if family in DRAWN:
        return [png_bytes(Image.fromarray(as_sent(paths))) for paths in _pen_written(family, count, seed)]
    if family == "words":
        rng = _stream(family, seed)
        return [png_bytes(outliers.render_text(_typed_word(rng), rng)[0]) for _ in range(count)]
    if family not in FAMILIES:
        raise ValueError(f"{family!r} is no family of pictures that are not numbers; choose from {FAMILIES}")
    rng = np.random.default_rng([seed, outliers.FAMILIES.index(family)])  # generate_outliers' stream
    return [png_bytes(outliers.GENERATORS[family](rng)[0]) for _ in range(count)]


def pen_drawings(family: str, count: int, seed: int = 0) -> list[Drawing]:
    """The words or letters of ``make_not_numbers`` (a family of ``DRAWN``) as the page sends them to
    ``/read``: their strokes."""
    return [pad_drawing(paths) for paths in _pen_written(family, count, seed)]


def _stream(family: str, seed: int) -> np.random.Generator:
    """The random stream of a family this module generates itself (not an outlier family's)."""
    return np.random.default_rng([seed, 100 + FAMILIES.index(family)])


def _typed_word(rng: np.random.Generator) -> str:
    """Two to five of the letters no reader takes for a digit."""
    return "".join(outliers.LETTERS[rng.integers(len(outliers.LETTERS))] for _ in range(rng.integers(2, 6)))


def _pen_written(family: str, count: int, seed: int) -> list[list[Stroke]]:
    """The strokes of ``count`` words (``pen_words``) or single letters (``lone_letters``)."""
    if family not in DRAWN:
        raise ValueError(f"{family!r} is not written with the pen; choose from {DRAWN}")
    rng = _stream(family, seed)
    if family == "lone_letters":
        return [word_paths(LETTERS[rng.integers(len(LETTERS))], rng) for _ in range(count)]
    return [word_paths(random_word(rng), rng) for _ in range(count)]
