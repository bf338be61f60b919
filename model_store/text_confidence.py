"""How sure ``/read`` is of a whole reading: the probability that its text is exactly right.

The model's digit probabilities alone say little about it. Their product is about 0.97 on average where
9 readings in 10 are right: a number misread because two touching digits were taken for one, or one cut
in two, is often read with confident digits. A reading carries more evidence than its digits, and a
logistic model weighs it (``TextConfidence``, fitted by ``python -m training fit-confidence`` on numbers
generated in code; docs/reading.md, How sure the reading is):

- the log of the least sure digit's top probability, and the sum over the digits;
- the margin to the runner-up: how much more the chosen reading scores (``model_store.reading.choose``'s
  score) than the best reading of another text, in the line where that is least;
- the most ink a chosen digit was cut through, in stroke widths, and whether every chosen digit was cut
  from a neighbour (a letter, a symbol or a shape is read as digits mostly by cutting all its strokes);
- the least digit score of the chosen digits (how digit-like the least digit-like is), whether a piece
  of the picture was left out;
- how many digits were read, and whether the picture is a seven-segment display;
- for a drawing sent as strokes, whether the chosen digits look like one shape's strokes
  (``model_store.reading.strokes_meet``: an a read as "01", its stem drawn along its bowl), and whether
  every one of them was cut out of the strokes (a V written in one stroke read as "11"): a pen writes a
  number's digits as strokes of their own, so a drawing's every digit is rarely cut from a neighbour,
  where a picture's touching digits often are.

It is fitted on pictures that are not numbers too (letters, words, symbols, shapes, scribbles, photos of
things), whose every reading is wrong: the right answer to them is no number.

Pure numpy: no model is called here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .reading import Candidates, crops_ending, path_scores, strokes_meet

FEATURES = (
    "least_sure", "all_sure", "margin", "cut", "least_score", "left_out", "digits", "display", "all_cut",
    "strokes_meet", "drawn_all_cut",
)  # fmt: skip
MARGIN_CAP = 10.0  # a runner-up further behind than this (or none) counts as this far
SCORE_CAP = 20.0  # a digit score further from the threshold than this (or no digit) counts as this far
RUNNERS_UP = 6  # readings kept per piece boundary while looking for one of another text
NO_DIGIT = -14.0  # the log-probability a reading of no digits counts as (its least sure digit)


@dataclass(frozen=True, slots=True)
class TextConfidence:
    """A logistic model: P(the text is exactly right) = sigmoid(bias + coefficients . features)."""

    bias: float
    coefficients: tuple[float, ...]  # one per FEATURES

    def probability(self, features: np.ndarray) -> float:
        return float(self.probabilities(features[None])[0])

    def probabilities(self, features: np.ndarray) -> np.ndarray:
        """(n,) for (n, len(FEATURES)) rows of features."""
        return 1.0 / (1.0 + np.exp(-(self.bias + features @ np.asarray(self.coefficients))))


# ``python -m training fit-confidence --data-root .devdata`` (its defaults: seed 1, 200 numbers of every
# family but ``hands`` and ``plates``, kept to check it on, the pen's also sent as strokes, and 150 pictures
# of each family that is not a number but ``lone_letters``, weighing as one picture in ten), both shipped
# models' readings together (6,400 of numbers, 2,581 of pictures that are not numbers read as some text);
# refitted after a display digit's bars were joined, with ``drawn_all_cut`` added.
CONFIDENCE = TextConfidence(
    bias=-1.1831,
    coefficients=(
        6.5494, 1.0494, 0.1079, -1.1784, 0.2352, -4.8741, 0.3784, 2.0439, -0.8408, -2.4591, -1.3971
    ),
)  # fmt: skip


Scored = tuple[np.ndarray, float]  # ``model_store.reading.path_scores``: each crop's score, a skip's


def text_confidence(
    cands: Candidates, outputs: np.ndarray, threshold: float | None, chosen: list[int],
    scored: Scored | None = None,
) -> float | None:  # fmt: skip
    """The probability that the reading of the ``chosen`` crops is exactly right; None for a checkpoint
    without a digit score (the model was fitted with one). ``scored``: the path scores the reading was
    chosen by, when the caller has them."""
    if threshold is None:
        return None
    return CONFIDENCE.probability(reading_features(cands, outputs, threshold, chosen, scored))


def reading_features(
    cands: Candidates, outputs: np.ndarray, threshold: float, chosen: list[int], scored: Scored | None = None
) -> np.ndarray:  # fmt: skip
    """(len(FEATURES),) what ``TextConfidence`` weighs, for the reading of the ``chosen`` crops
    (``scored``: as ``text_confidence``'s)."""
    probs, score = outputs[:, :-1], outputs[:, -1]
    top = np.log(np.clip(probs[chosen].max(axis=1), 1e-6, None)) if chosen else np.array([NO_DIGIT])
    least_score = score[chosen].min() - threshold if chosen else -SCORE_CAP
    cuts = cands.features[chosen, 3:5]
    read = sum(cands.spans[k][2] - cands.spans[k][1] for k in chosen)
    all_cut = bool(chosen) and bool(cuts.any(axis=1).all())
    path_score, skip = scored if scored is not None else path_scores(cands, outputs, threshold)
    return np.array([
        top.min(),
        top.sum(),
        runner_up_margin(cands, path_score, probs.argmax(axis=1), skip),
        cuts.max() if chosen else 0.0,
        np.clip(least_score, -SCORE_CAP, SCORE_CAP),
        float(read < sum(cands.pieces)),
        float(len(chosen)),
        float(cands.display),
        float(all_cut),
        float(strokes_meet(cands, chosen)),
        float(all_cut and cands.strokes is not None),
    ])  # fmt: skip


def runner_up_margin(cands: Candidates, score: np.ndarray, classes: np.ndarray, skip: float) -> float:
    """How far the best reading's score lies ahead of the best reading of another text, in the line where
    that is least (``best_path``'s dynamic programme keeping the RUNNERS_UP best readings at each piece
    boundary); MARGIN_CAP where no other text is among them."""
    ending = crops_ending(cands)
    margin = MARGIN_CAP
    for line, n in enumerate(cands.pieces):
        best: list[list[tuple[float, tuple[int, ...]]]] = [[(0.0, ())]]
        for j in range(1, n + 1):
            ways = [(value + skip, crops) for value, crops in best[j - 1]]
            for k in ending.get((line, j), []):
                ways += [(value + score[k], (*crops, k)) for value, crops in best[cands.spans[k][1]]]
            best.append(sorted(ways, key=lambda way: -way[0])[:RUNNERS_UP])
        if not best[n]:
            continue
        value, crops = best[n][0]
        text = classes[list(crops)].tolist()
        other = [v for v, c in best[n][1:] if classes[list(c)].tolist() != text]
        if other:
            margin = min(margin, value - other[0])
    return margin
