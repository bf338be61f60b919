"""Reading a number with the model's help: every plausible split of a picture into digits goes to the
model in one batch, and the reading it finds most convincing wins.

    Page (model_store.segment) -> pieces per line: strokes, touching strokes cut along thin seams
    -> candidates: runs of up to MAX_RUN neighbouring pieces, and each whole stroke and rule-based
       digit however many pieces it was cut into, each fitted like a single digit
    -> one batch through the model (the caller's) -> ``choose``: per line, the path of candidates
       through the pieces with the highest total score

A candidate's score weighs the log of its top probability (the model recognises a digit), its shape
(about as tall as the digits of its line, not much wider than them nor than the class it is read as),
a bonus when the rules of ``model_store.segment`` cut the same digit, a penalty when the digit score
calls it no digit or rates it well below its line's most digit-like candidate (two touching digits
fitted as one still read as a digit, but a less typical one), and a per-digit term that balances
splitting against merging; the weights are fitted (``Weights``). Pure numpy: no model is called here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .decode import NoInk
from .drawing import Drawing, draw
from .marks import Mark, spell
from .mnist_box import stroke_width
from .pieces import Line, line_height, line_pieces, line_runs, line_strokes
from .segment import DigitCrop, Page, PenStroke, page_bytes, page_drawn, shared_ink

ENGINE_CALLS = 4  # the service's ``calls``: where one engine call's worth of candidates leaves only the
# rules' digits of a long number (20 digits are 60-80 candidates), up to this many
LONG_NUMBER = 9  # digits by the rules from which a number is long (fewer that overflow one call are a few
# digits among many slivers, a plate's wall or border: read better by the rules alone)

# Touching strokes are cut along seams crossing at most this many stroke widths of ink; the next, stricter
# limit when the alternatives would not fit in ``max_crops`` (``model_store.pieces``); then, for a drawing,
# none but the rules' own cuts (its strokes are pieces already).
CUT_INK = (3.0, 2.2, 1.5)
Runs = list[list[tuple[int, int, np.ndarray]]]  # per line: (first piece, end piece, features) per crop
NEVER = -1e9  # the cost of skipping a display's digit: more than any reading of it
PLAIN_CUT = 1.2  # plainly a number (``plain_number``): no digit cut through more stroke widths than this
PLAIN_OVERLAP = 0.15  # nor, drawn, reaching over a neighbour it touches by more than this of the taller


# Hinges of the shape terms, in line heights: a digit wider than these, or shorter than SHORT_FROM.
WIDE_FROM = (0.6, 0.9)
SHORT_FROM = 0.9
# How wide each class's digits are, width over height: the median over MNIST's training digits (ink
# above 30% of full scale; a test recomputes it). A crop much wider than the digit it is read as is
# more likely two digits, or a digit and a neighbour's stroke.
CLASS_WIDTH = (0.9, 0.4, 0.95, 0.8, 0.8, 0.95, 0.7, 0.8, 0.75, 0.7)
# The terms of a candidate's score; each is a reward (a penalty is a negative term).
TERMS = ("rules", "wide", "wider", "wide_for_class", "short", "cut", "hole", "not_a_digit", "unlike",
         "atypical", "split", "per_digit", "confidence")  # fmt: skip


@dataclass(frozen=True, slots=True)
class Weights:
    """A weight per term of a candidate's score, and the score of leaving a piece out of the
    reading. Fitted by ``python -m training fit-reader`` (an averaged structured perceptron on seed 1
    of ``training.numbers`` with MNIST's training digits, both shipped models; ``python -m training
    read-eval`` reports seed 0, with its test digits); ``split``, added later, alone (``--only split``)."""

    rules: float = 0.129  # the rules of model_store.segment made the same digit
    wide: float = 5.32  # per line height wider than WIDE_FROM[0] ...
    wider: float = 0.596  # ... and WIDE_FROM[1]
    wide_for_class: float = 0.781  # per line height wider than the class it is read as (CLASS_WIDTH)
    short: float = 10.1  # per line height shorter than SHORT_FROM
    cut: float = 0.167  # per stroke width of ink a cut at either side went through (half each side)
    hole: float = 3.03  # per line height of empty columns between its pieces
    not_a_digit: float = 0.249  # the digit score is under the model's threshold ...
    unlike: float = 1.24  # ... and per threshold's worth of score under it
    atypical: float = 2.1  # its digit score's shortfall from its line's best (``shortfall``)
    split: float = 5.0  # both halves of some split of it are more digit-like than it (``halves_ahead``)
    per_digit: float = -1.12  # every digit read: balances merging pieces against splitting them
    confidence: float = 1.0  # the log of the top probability
    skip: float = -4.0  # a piece left out of the reading (a speck, a slip of the pen)

    def vector(self) -> np.ndarray:
        return np.array([getattr(self, t) for t in TERMS])


def terms(cands: Candidates, outputs: np.ndarray | None, threshold: float | None = None) -> np.ndarray:
    """(n, len(TERMS)) the terms of every candidate's score. ``outputs``: (n, C + 1) rows for the
    crops (probabilities, digit score) as the ServingHead answers; None: shape and rules alone."""
    rules, width, height, left, right, hole = cands.features.T
    cols = {
        "rules": rules,
        "wide": -np.maximum(0.0, width - WIDE_FROM[0]),
        "wider": -np.maximum(0.0, width - WIDE_FROM[1]),
        "short": -np.maximum(0.0, SHORT_FROM - height),
        "cut": -(left + right) / 2,
        "hole": -hole,
        "per_digit": np.ones_like(width),
    }
    if outputs is not None:
        probs, digit_score = outputs[:, :-1], outputs[:, -1]
        cols["wide_for_class"] = -np.maximum(0.0, width - np.asarray(CLASS_WIDTH)[probs.argmax(axis=1)])
        cols["confidence"] = np.log(np.clip(probs.max(axis=1), 1e-6, None))
        if threshold is not None:
            under = np.maximum(0.0, threshold - digit_score) / max(abs(threshold), 1.0)
            cols["not_a_digit"] = -(under > 0.0).astype(np.float64)
            cols["unlike"] = -under
            lines = np.array([s[0] for s in cands.spans])
            cols["atypical"] = -shortfall(digit_score, threshold, lines)
            cols["split"] = -halves_ahead(digit_score, threshold, cands.spans, lines)
    return np.stack([cols.get(t, np.zeros_like(width)) for t in TERMS], axis=1)


WEIGHTS = Weights()


def shortfall(score: np.ndarray, threshold: float, lines: np.ndarray) -> np.ndarray:
    """(n,) 0..1 per candidate: how far its digit score falls short of its line's most digit-like
    candidate, as a share of that one's margin over the threshold (0 for the best; 1 at or under the
    threshold; 0 for a whole line where no candidate clears it, as no candidate stands out there).
    Relative, because a digit score's scale is the checkpoint's own."""
    margin = line_margin(score, threshold, lines)
    share = (score - threshold) / np.where(margin > 0, margin, 1.0)
    return np.where(margin > 0, 1.0 - np.clip(share, 0.0, 1.0), 0.0)


def line_margin(score: np.ndarray, threshold: float, lines: np.ndarray) -> np.ndarray:
    """(n,) per candidate: how far its line's most digit-like candidate scores over the threshold."""
    best = np.full(int(lines.max(initial=-1)) + 1, -np.inf)
    np.maximum.at(best, lines, score)
    return best[lines] - threshold


def halves_ahead(
    score: np.ndarray, threshold: float, spans: list[tuple[int, int, int]], lines: np.ndarray
) -> np.ndarray:
    """(n,) 0..1 per candidate of two pieces or more: how far the less digit-like half of its best split
    into two candidates scores above it, as a share of its line's best margin over the threshold (0 when
    no split has both halves over the threshold). A 9 with a 1 run into its tail still reads "9", but
    the 9 alone and the 1 alone are each more of a digit than the two together; a 4 written in two
    strokes is not, as its strokes alone are no digits."""
    index = {span: k for k, span in enumerate(spans)}
    margin = line_margin(score, threshold, lines)
    out = np.zeros(len(spans))
    for k, (line, start, end) in enumerate(spans):
        if margin[k] <= 0:  # no candidate of the line is a digit: none stands out
            continue
        for middle in range(start + 1, end):
            left, right = index.get((line, start, middle)), index.get((line, middle, end))
            if left is None or right is None:
                continue
            weaker = min(score[left], score[right])
            if weaker >= threshold:
                out[k] = max(out[k], float(np.clip((weaker - score[k]) / margin[k], 0.0, 1.0)))
    return out


@dataclass(frozen=True, slots=True)
class Candidates:
    """Every alternative digit of one picture, and where each sits among its line's pieces."""

    crops: list[DigitCrop]  # the model's inputs: all of them go in one batch
    spans: list[tuple[int, int, int]]  # (line, first piece, end piece exclusive) of each crop
    features: np.ndarray  # (n, 6): by the rules?, width, inked height, cut ink left/right, widest hole
    pieces: list[int]  # number of pieces per line
    marks: list[Mark]  # punctuation between the digits (``model_store.marks``)
    display: bool = False  # a display's digits as its bars grouped them: each read, none cut or skipped
    strokes: np.ndarray | None = None  # a drawing's (n, its pen strokes) bool: each crop's strokes
    inked: list[frozenset[int]] = field(default_factory=list)  # a drawing's: each crop's blobs of ink
    pen: list[PenStroke] = field(default_factory=list)  # a drawing's strokes (``Page.pen``) ...
    pen_width: float = 1.0  # ... and their width

    def spelled(self, chosen: list[int], labels: list[str]) -> tuple[str, list[Mark]]:
        """The text ``/read`` answers for the ``chosen`` crops read as ``labels`` (one each), with the
        marks between them written in, and those marks."""
        digits = [
            (label, self.crops[i].box, self.crops[i].line) for i, label in zip(chosen, labels, strict=True)
        ]
        return spell(digits, self.marks)

    def shared(self, i: int, j: int) -> float:
        """The ink crops ``i`` and ``j`` of a drawing share where their strokes meet, in squared stroke
        widths (0 for a picture); a stroke in both (cut between them) is left out: the cut's features
        count it."""
        if self.strokes is None:
            return 0.0
        a, b = self.strokes[i] & ~self.strokes[j], self.strokes[j] & ~self.strokes[i]
        pairs = [(s, t) for s in np.flatnonzero(a) for t in np.flatnonzero(b)]
        return float(sum(shared_ink(self.pen[s], self.pen[t], self.pen_width) for s, t in pairs))


def candidates_bytes(
    data: bytes, max_pixels: int, max_digits: int = 32, max_crops: int = 64, calls: int = 1
) -> Candidates:
    """Encoded image bytes -> its candidate digits. Raises the decoder's ImageErrors (NoInk and
    TooManyDigits among them)."""
    return candidates(page_bytes(data, max_pixels, max_digits), max_crops, calls)


def candidates_drawing(
    drawing: Drawing, max_digits: int = 32, max_crops: int = 64, calls: int = 1
) -> Candidates:
    """A number sent as its pen strokes -> its candidate digits, its strokes the pieces where they run
    together (``model_store.drawing``). Raises NoInk and TooManyDigits."""
    return candidates(page_drawn(draw(drawing), max_digits), max_crops, calls)


def candidates(page: Page, max_crops: int = 64, calls: int = 1) -> Candidates:
    """All alternatives when they fit in ``max_crops`` crops (one engine call's; fewer cuts tried when they
    do not), else, for a long number, in ``calls`` times as many, else the rule-based digits alone. A
    display's digits are its groups of bars (``model_store.displays``): cutting an 8 between its bars or
    skipping a digit the digit score doubts only loses digits, so they are read as grouped, the rules'
    digits alone."""
    found = None if page.display else _alternatives(page, max_crops)
    overflowed = found is None and not page.display and calls > 1 and max_crops > 0
    if overflowed and sum(map(len, page.lines)) >= LONG_NUMBER:  # counted only where one call overflowed
        found = _alternatives(page, calls * max_crops)
    lines, runs = found if found is not None else _rules_alone(page)
    crops, spans, features = [], [], []
    for line_no, (line, listed) in enumerate(zip(lines, runs, strict=True)):
        for start, end, feats in listed:
            pixels = page.fit(line.pieces[start:end])
            if pixels is not None:
                crops.append(DigitCrop(page.box(line.pieces[start:end]), pixels, line_no))
                spans.append((line_no, start, end))
                features.append(feats)
    if not crops:  # ink, but none of it writing: a lone dash or rule, specks
        raise NoInk("no digits found: none of the picture's ink looks like writing")
    pieces = [len(ln.pieces) for ln in lines]
    feats = np.asarray(features).reshape(-1, 6)
    if not page.pen:
        return Candidates(crops, spans, feats, pieces, page.marks, page.display)
    strokes = np.zeros((len(spans), len(page.pen)), bool)
    inked = []
    for k, (line, start, end) in enumerate(spans):
        run = lines[line].pieces[start:end]
        strokes[k, [piece.stroke for piece in run if piece.stroke is not None]] = True
        inked.append(frozenset(label for piece in run for label in piece.labels))
    width = stroke_width(page.labels > 0)
    return Candidates(crops, spans, feats, pieces, page.marks, page.display, strokes, inked, page.pen, width)


def _alternatives(page: Page, max_crops: int) -> tuple[list[Line], Runs] | None:
    """Each line's pieces and the runs of them to read, with the most cuts that fit in ``max_crops``
    crops; None when even the fewest cuts give more."""
    heights = [line_height(page, rules) for rules in page.lines]
    strokes = [line_strokes(page, r, h) for r, h in zip(page.lines, heights, strict=True)]  # cut per limit
    # A drawing's strokes are pieces before any seam is cut: when the cuts do not fit, its strokes alone.
    for limit in (*CUT_INK, 0.0) if page.pen else CUT_INK:
        lines = [line_pieces(*line, limit) for line in zip(strokes, page.lines, heights, strict=True)]
        runs = [line_runs(line, rules) for line, rules in zip(lines, page.lines, strict=True)]
        if sum(len(r) for r in runs) <= max_crops:
            return lines, runs
    return None


def _rules_alone(page: Page) -> tuple[list[Line], Runs]:
    """The rule-based digits as the pieces, each read alone (only the pieces are read from here on: no
    rows or height to measure)."""
    lines = [Line(list(rules), np.zeros((len(rules), 2)), [], 0.0) for rules in page.lines]
    runs = [
        [(i, i + 1, np.array([1.0, 0.5, 1.0, 0, 0, 0])) for i in range(len(rules))] for rules in page.lines
    ]
    return lines, runs


def choose(
    cands: Candidates, outputs: np.ndarray | None, threshold: float | None = None, weights: Weights = WEIGHTS
) -> list[int]:
    """The crops to read, in reading order: per line, the path through its pieces with the highest
    total score (see ``terms``)."""
    return best_path(cands, *path_scores(cands, outputs, threshold, weights))


def path_scores(
    cands: Candidates, outputs: np.ndarray | None, threshold: float | None = None, weights: Weights = WEIGHTS
) -> tuple[np.ndarray, float]:  # fmt: skip
    """What ``choose`` weighs a reading by: each candidate's score, and the score of leaving a piece out
    (a display's digits are never left out)."""
    return terms(cands, outputs, threshold) @ weights.vector(), NEVER if cands.display else weights.skip


def plain_number(
    cands: Candidates, outputs: np.ndarray, threshold: float | None, labels: list[str]
) -> str | None:  # fmt: skip
    """The text when the picture is plainly a number of several digits, else None: the reading
    ``choose`` makes has two digits or more, each a digit to the digit score, at least one of them whole
    strokes, none cut from a neighbour through more than PLAIN_CUT stroke widths of ink (two digits
    touching at a point), no piece of the picture left unread, and, drawn, not one shape's strokes
    (``strokes_meet``). What a one-digit route's ``hint`` rests on: a letter, a shape or a scribble is
    read as digits mostly by cutting all its strokes, or through thick ink, or its pieces are no digits
    to the score; a photo's blobs are read as digits here and there among others skipped
    (docs/reading.md, A number sent as one digit)."""
    chosen = choose(cands, outputs, threshold)
    if len(chosen) < 2 or _skips_a_piece(cands, chosen):
        return None
    cuts = cands.features[chosen, 3:5]
    if cuts.max() > PLAIN_CUT or cuts.any(axis=1).all():
        return None
    if threshold is not None and not all(outputs[i, -1] >= threshold for i in chosen):
        return None
    if strokes_meet(cands, chosen):
        return None
    return cands.spelled(chosen, [labels[int(outputs[i, :-1].argmax())] for i in chosen])[0]


def strokes_meet(cands: Candidates, chosen: list[int]) -> bool:
    """Whether the chosen digits of a drawing look like one shape's strokes rather than digits side by
    side: two of them share more than PLAIN_CUT squared stroke widths of ink (``Candidates.shared``: more
    than touching at a point or one crossing, as an a's stem drawn along its bowl), or two neighbours in
    one blob of ink reach over each other by more than PLAIN_OVERLAP of the taller one's height (an H's
    bar into its other leg; digits apart may: a 7's bar over the next digit). A drawing's strokes are its
    pieces before any cut, so the cut rule never sees where they meet. Never for a picture."""
    if cands.strokes is None:
        return False
    if any(cands.shared(i, j) > PLAIN_CUT for k, i in enumerate(chosen) for j in chosen[k + 1 :]):
        return True
    for i, j in zip(chosen, chosen[1:], strict=False):
        (_, ay0, ax1, ay1), (bx0, by0, _, by1) = cands.crops[i].box, cands.crops[j].box
        joined = cands.crops[i].line == cands.crops[j].line and cands.inked[i] & cands.inked[j]
        if joined and ax1 - bx0 > PLAIN_OVERLAP * max(ay1 - ay0, by1 - by0):
            return True
    return False


def _skips_a_piece(cands: Candidates, chosen: list[int]) -> bool:
    """Whether the reading leaves some piece of the picture unread: a line's crops do not cover its
    pieces."""
    read = np.zeros(len(cands.pieces), int)
    for k in chosen:
        line, start, end = cands.spans[k]
        read[line] += end - start
    return bool((read < np.asarray(cands.pieces)).any())


def crops_ending(cands: Candidates) -> dict[tuple[int, int], list[int]]:
    """The crops that end at each (line, piece boundary): the steps of ``best_path``'s programme."""
    ending: dict[tuple[int, int], list[int]] = {}
    for k, (line, _, end) in enumerate(cands.spans):
        ending.setdefault((line, end), []).append(k)
    return ending


def best_path(cands: Candidates, score: np.ndarray, skip: float) -> list[int]:
    """Per line, the crops whose pieces follow each other (or are skipped at ``skip`` each) with the
    highest total ``score``; the crops of every line in reading order."""
    ending = crops_ending(cands)
    chosen: list[int] = []
    for line, n in enumerate(cands.pieces):
        best = np.full(n + 1, -np.inf)
        best[0] = 0.0
        back: list[tuple[int, int | None]] = [(0, None)] * (n + 1)  # (previous end, crop or a skip)
        for j in range(1, n + 1):
            best[j], back[j] = best[j - 1] + skip, (j - 1, None)
            for k in ending.get((line, j), []):
                start = cands.spans[k][1]
                if best[start] + score[k] > best[j]:
                    best[j], back[j] = best[start] + score[k], (start, k)
        path, j = [], n
        while j > 0:
            j, k = back[j]
            if k is not None:
                path.append(k)
        chosen += path[::-1]
    return chosen
