"""Letters and words written with the pen, as the demo page's wide pad sends them: what a person writes
when it is not a number, to measure how ``/read`` answers it (``training.not_numbers``).

Each letter is a template in ``training.pen_numbers.digit_strokes``' box (1 tall from the top of a capital
or an ascender to the baseline; a descender goes below it), jittered per writer and written side by side
like a number's digits (``pen_numbers.written``), so a lowercase letter stands as small as it would.
Left out for the reason ``training.outliers`` leaves them out: the letters that *are* digits to a reader
(I l i O o D Q Z z S s b G g q B).
"""

from __future__ import annotations

import numpy as np

from .pen_numbers import Stroke, arc, writers_hand, written

LETTER_STROKES: dict[str, list[Stroke]] = {
    # capitals, 1 tall
    "A": [[(0.0, 1.0), (0.3, 0.0), (0.6, 1.0)], [(0.13, 0.6), (0.47, 0.6)]],
    "C": [arc(0.3, 0.5, 0.3, 0.5, 50, 310)],
    "E": [[(0.55, 0.0), (0.05, 0.0), (0.05, 1.0), (0.55, 1.0)], [(0.05, 0.5), (0.45, 0.5)]],
    "F": [[(0.55, 0.0), (0.05, 0.0), (0.05, 1.0)], [(0.05, 0.5), (0.45, 0.5)]],
    "H": [[(0.05, 0.0), (0.05, 1.0)], [(0.55, 0.0), (0.55, 1.0)], [(0.05, 0.5), (0.55, 0.5)]],
    "K": [[(0.05, 0.0), (0.05, 1.0)], [(0.55, 0.0), (0.07, 0.55), (0.58, 1.0)]],
    "L": [[(0.05, 0.0), (0.05, 1.0), (0.5, 1.0)]],
    "M": [[(0.0, 1.0), (0.05, 0.0), (0.32, 0.6), (0.6, 0.0), (0.65, 1.0)]],
    "N": [[(0.05, 1.0), (0.05, 0.0), (0.55, 1.0), (0.55, 0.0)]],
    "P": [[(0.05, 1.0), (0.05, 0.0), (0.3, 0.0), *arc(0.3, 0.25, 0.25, 0.25, 90, -90), (0.05, 0.5)]],
    "R": [
        [(0.05, 1.0), (0.05, 0.0), (0.3, 0.0), *arc(0.3, 0.25, 0.25, 0.25, 90, -90), (0.05, 0.5)],
        [(0.25, 0.5), (0.58, 1.0)],
    ],  # fmt: skip
    "T": [[(0.0, 0.0), (0.6, 0.0)], [(0.3, 0.0), (0.3, 1.0)]],
    "U": [[(0.05, 0.0), *arc(0.3, 0.72, 0.25, 0.28, 180, 360), (0.55, 0.0)]],
    "V": [[(0.0, 0.0), (0.3, 1.0), (0.6, 0.0)]],
    "W": [[(0.0, 0.0), (0.18, 1.0), (0.38, 0.35), (0.58, 1.0), (0.76, 0.0)]],
    "X": [[(0.0, 0.0), (0.6, 1.0)], [(0.6, 0.0), (0.0, 1.0)]],
    "Y": [[(0.0, 0.0), (0.3, 0.5)], [(0.6, 0.0), (0.3, 0.5), (0.3, 1.0)]],
    # small letters: x-height from 0.45 to the baseline, ascenders from 0, descenders to 1.35
    "a": [[*arc(0.25, 0.72, 0.22, 0.27, 60, 400)], [(0.47, 0.45), (0.47, 1.0)]],
    "c": [arc(0.25, 0.72, 0.24, 0.27, 50, 310)],
    "d": [arc(0.25, 0.72, 0.22, 0.27, 60, 420), [(0.47, 0.0), (0.47, 1.0)]],
    "e": [[(0.03, 0.72), (0.48, 0.72), *arc(0.26, 0.72, 0.23, 0.27, 0, 315)]],
    "f": [[(0.5, 0.05), (0.35, 0.0), (0.22, 0.1), (0.2, 1.0)], [(0.02, 0.45), (0.42, 0.45)]],
    "h": [[(0.05, 0.0), (0.05, 1.0)], [(0.05, 0.75), *arc(0.28, 0.72, 0.22, 0.25, 170, 0), (0.5, 1.0)]],
    "k": [[(0.05, 0.0), (0.05, 1.0)], [(0.45, 0.45), (0.07, 0.75), (0.48, 1.0)]],
    "m": [
        [(0.05, 0.45), (0.05, 1.0)],
        [(0.05, 0.7), *arc(0.2, 0.64, 0.15, 0.18, 170, 0), (0.35, 1.0)],
        [(0.35, 0.64), *arc(0.5, 0.64, 0.15, 0.18, 170, 0), (0.65, 1.0)],
    ],  # fmt: skip
    "n": [[(0.05, 0.45), (0.05, 1.0)], [(0.05, 0.75), *arc(0.28, 0.72, 0.22, 0.25, 170, 0), (0.5, 1.0)]],
    "p": [[(0.05, 0.45), (0.05, 1.35)], [(0.05, 0.55), *arc(0.27, 0.72, 0.22, 0.26, 160, -170)]],
    "r": [[(0.05, 0.45), (0.05, 1.0)], [(0.05, 0.7), *arc(0.25, 0.65, 0.2, 0.18, 170, 50)]],
    "t": [[(0.2, 0.1), (0.2, 0.9), (0.3, 1.0), (0.42, 0.95)], [(0.0, 0.45), (0.42, 0.45)]],
    "u": [[(0.05, 0.45), *arc(0.25, 0.78, 0.2, 0.22, 180, 360)], [(0.45, 0.45), (0.45, 1.0)]],
    "v": [[(0.0, 0.45), (0.25, 1.0), (0.5, 0.45)]],
    "w": [[(0.0, 0.45), (0.15, 1.0), (0.3, 0.6), (0.45, 1.0), (0.6, 0.45)]],
    "x": [[(0.0, 0.45), (0.5, 1.0)], [(0.5, 0.45), (0.0, 1.0)]],
    "y": [[(0.0, 0.45), (0.25, 0.95)], [(0.5, 0.45), (0.15, 1.35)]],
}
LETTERS = "".join(LETTER_STROKES)


def word_paths(word: str, rng: np.random.Generator) -> list[Stroke]:
    """``word`` written on the wide pad by one hand (``writers_hand``: slant, squeeze, wobble), its
    letters apart or (a third of the words) run together: the strokes in the pad's pixels."""
    letters = [writers_hand(LETTER_STROKES[ch], rng) for ch in word]
    # ``written`` places glyphs 1 tall: a word with a descender is written smaller, to stay on the pad.
    bottom = max(1.0, *(y for strokes in letters for s in strokes for _, y in s))
    letters = [[[(x / bottom, y / bottom) for x, y in s] for s in strokes] for strokes in letters]
    return written(letters, rng, touching=rng.random() < 1 / 3)


def random_word(rng: np.random.Generator, longest: int = 6) -> str:
    """One to ``longest`` letters, capitals and small ones alike."""
    n = int(rng.integers(1, longest + 1))
    return "".join(LETTERS[rng.integers(len(LETTERS))] for _ in range(n))
