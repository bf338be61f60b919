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

import functools
from dataclasses import dataclass

import numpy as np

from .components import row_runs
from .decode import NoInk
from .marks import Mark, spell
from .preprocess import stroke_width
from .segment import FLAT, DigitCrop, Page, Part, Seam, page_bytes, piece_between

MAX_RUN = 4  # pieces a run of neighbours may join (a 4 in two strokes, cut again where it touches)
CUT_FROM = 0.5  # strokes wider than this (times the line's height) may be touching digits ...
CUT_INK = (3.0, 2.2, 1.5)  # ... cut along seams crossing at most this many stroke widths of ink
# (the next, stricter limit when the alternatives would not fit in one batch) ...
CUT_EDGE = 0.12  # ... at least this far from the stroke's ends ...
CUT_SPACING = 0.15  # ... and from each other (times the line's height)
SEAM_REACH = 0.15  # a seam strays at most this far from its column (times the line's height) ...
SEAM_BEND = 2.0  # ... paying as much for each column sideways as for this many pixels of ink
DOUBLE = (1.3, 2.5)  # a row of ink this many stroke widths wide may be two strokes side by side:
MEETING = 0.1  # a seam down its middle pays this per pixel instead of 1 ...
ALONG = 1.0  # ... and it counts as crossed ink unless such rows stack this many stroke widths high
MAX_WIDTH = 1.3  # no digit is wider than this times its line's height
MAX_HOLE = 0.3  # nor has an empty gap wider than this between its pieces
PLAIN_CUT = 1.2  # plainly a number (``plain_number``): no digit cut through more stroke widths than this


# Hinges of the shape terms, in line heights: a digit wider than these, or shorter than SHORT_FROM.
WIDE_FROM = (0.6, 0.9)
SHORT_FROM = 0.9
# How wide each class's digits are, width over height: the median over MNIST's training digits (ink
# above 30% of full scale; a test recomputes it). A crop much wider than the digit it is read as is
# more likely two digits, or a digit and a neighbour's stroke.
CLASS_WIDTH = (0.9, 0.4, 0.95, 0.8, 0.8, 0.95, 0.7, 0.8, 0.75, 0.7)
# The terms of a candidate's score; each is a reward (a penalty is a negative term).
TERMS = ("rules", "wide", "wider", "wide_for_class", "short", "cut", "hole", "not_a_digit", "unlike",
         "atypical", "per_digit", "confidence")  # fmt: skip


@dataclass(frozen=True, slots=True)
class Weights:
    """A weight per term of a candidate's score, and the score of leaving a piece out of the
    reading. Fitted by ``python -m training fit-reader`` (an averaged structured perceptron on seed 1
    of ``training.numbers`` with MNIST's training digits, both shipped models; ``python -m training
    read-eval`` reports seed 0, with its test digits)."""

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
            cols["atypical"] = -shortfall(digit_score, threshold, np.array([s[0] for s in cands.spans]))
    return np.stack([cols.get(t, np.zeros_like(width)) for t in TERMS], axis=1)


WEIGHTS = Weights()


def shortfall(score: np.ndarray, threshold: float, lines: np.ndarray) -> np.ndarray:
    """(n,) 0..1 per candidate: how far its digit score falls short of its line's most digit-like
    candidate, as a share of that one's margin over the threshold (0 for the best; 1 at or under the
    threshold; 0 for a whole line where no candidate clears it, as no candidate stands out there).
    Relative, because a digit score's scale is the checkpoint's own."""
    best = np.full(int(lines.max(initial=-1)) + 1, -np.inf)
    np.maximum.at(best, lines, score)
    margin = best[lines] - threshold
    share = (score - threshold) / np.where(margin > 0, margin, 1.0)
    return np.where(margin > 0, 1.0 - np.clip(share, 0.0, 1.0), 0.0)


@dataclass(frozen=True, slots=True)
class Candidates:
    """Every alternative digit of one picture, and where each sits among its line's pieces."""

    crops: list[DigitCrop]  # the model's inputs: all of them go in one batch
    spans: list[tuple[int, int, int]]  # (line, first piece, end piece exclusive) of each crop
    features: np.ndarray  # (n, 6): by the rules?, width, inked height, cut ink left/right, widest hole
    pieces: list[int]  # number of pieces per line
    marks: list[Mark]  # punctuation between the digits (``model_store.marks``)

    def spelled(self, chosen: list[int], labels: list[str]) -> tuple[str, list[Mark]]:
        """The text ``/read`` answers for the ``chosen`` crops read as ``labels`` (one each), with the
        marks between them written in, and those marks."""
        digits = [
            (label, self.crops[i].box, self.crops[i].line) for i, label in zip(chosen, labels, strict=True)
        ]
        return spell(digits, self.marks)


def candidates_bytes(data: bytes, max_pixels: int, max_digits: int = 32, max_crops: int = 64) -> Candidates:
    """Encoded image bytes -> its candidate digits. Raises the decoder's ImageErrors (NoInk and
    TooManyDigits among them)."""
    return candidates(page_bytes(data, max_pixels, max_digits), max_crops)


def candidates(page: Page, max_crops: int = 64) -> Candidates:
    """All alternatives when they fit in ``max_crops`` crops (fewer cuts tried when they do not),
    else the rule-based digits alone."""
    heights = [_height(page, rules) for rules in page.lines]
    strokes = [_strokes(page, r, h) for r, h in zip(page.lines, heights, strict=True)]  # cut per limit
    for limit in CUT_INK:
        lines = [_pieces(*line, limit) for line in zip(strokes, page.lines, heights, strict=True)]
        runs = [_runs(line, rules) for line, rules in zip(lines, page.lines, strict=True)]
        if sum(len(r) for r in runs) <= max_crops:
            break
    else:  # more alternatives than one batch holds however few the cuts: the rules alone
        # only the pieces are read from here on: no rows or height to measure
        lines = [_Line(list(rules), np.zeros((len(rules), 2)), [], 0.0) for rules in page.lines]
        runs = [
            [(i, i + 1, np.array([1.0, 0.5, 1.0, 0, 0, 0])) for i in range(len(rules))]
            for rules in page.lines
        ]
    crops, spans, features = [], [], []
    for line_no, (line, line_runs) in enumerate(zip(lines, runs, strict=True)):
        for start, end, feats in line_runs:
            pixels = page.fit(line.pieces[start:end])
            if pixels is not None:
                crops.append(DigitCrop(page.box(line.pieces[start:end]), pixels, line_no))
                spans.append((line_no, start, end))
                features.append(feats)
    if not crops:
        raise NoInk("no ink found: the picture is empty")
    return Candidates(
        crops, spans, np.asarray(features).reshape(-1, 6), [len(ln.pieces) for ln in lines], page.marks
    )


def choose(
    cands: Candidates, outputs: np.ndarray | None, threshold: float | None = None, weights: Weights = WEIGHTS
) -> list[int]:
    """The crops to read, in reading order: per line, the path through its pieces with the highest
    total score (see ``terms``)."""
    return best_path(cands, terms(cands, outputs, threshold) @ weights.vector(), weights.skip)


def plain_number(
    cands: Candidates, outputs: np.ndarray, threshold: float | None, labels: list[str]
) -> str | None:  # fmt: skip
    """The text when the picture is plainly a number of several digits, else None: the reading
    ``choose`` makes has two digits or more, each a digit to the digit score, at least one of them whole
    strokes, and none cut from a neighbour through more than PLAIN_CUT stroke widths of ink (two digits
    touching at a point). What a one-digit route's ``hint`` rests on: a letter, a shape or a scribble is
    read as digits mostly by cutting all its strokes, or through thick ink, or its pieces are no digits to
    the score (docs/reading.md, A number sent as one digit)."""
    chosen = choose(cands, outputs, threshold)
    if len(chosen) < 2:
        return None
    cuts = cands.features[chosen, 3:5]
    if cuts.max() > PLAIN_CUT or cuts.any(axis=1).all():
        return None
    if threshold is not None and not all(outputs[i, -1] >= threshold for i in chosen):
        return None
    return cands.spelled(chosen, [labels[int(outputs[i, :-1].argmax())] for i in chosen])[0]


def best_path(cands: Candidates, score: np.ndarray, skip: float) -> list[int]:
    """Per line, the crops whose pieces follow each other (or are skipped at ``skip`` each) with the
    highest total ``score``; the crops of every line in reading order."""
    ending: dict[tuple[int, int], list[int]] = {}
    for k, (line, _, end) in enumerate(cands.spans):
        ending.setdefault((line, end), []).append(k)
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


# ----------------------------------------------------------------------------------------- pieces


@dataclass(slots=True)
class _Line:
    pieces: list[Part]  # left to right (by centre)
    cut_ink: np.ndarray  # (n, 2): stroke widths of ink cut through at each piece's left and right
    rows: list[np.ndarray]  # each piece's rows with ink (a cut's sliver of a 3 spans two short bits)
    height: float  # the line's digit height


@dataclass(slots=True)
class _Stroke:
    """One connected stroke of a line, measured once for every cut limit tried."""

    comp: Part
    mask: np.ndarray  # its pixels within its box
    rows: np.ndarray  # page rows with its ink
    seams: _Seams | None  # None: narrow enough to be one digit, never cut


@dataclass(frozen=True, slots=True)
class _Seams:
    """Per column of a stroke, the cheapest seam from its top row to its bottom row that keeps
    within SEAM_REACH of that column."""

    ink: np.ndarray  # (w,) stroke widths of ink the seam crosses
    paths: np.ndarray  # (w, h) its column (in the stroke's box) in each row
    position: np.ndarray  # (w,) its mean column


def _ink_cost(mask: np.ndarray, width: float) -> tuple[np.ndarray, np.ndarray]:
    """What each pixel of a stroke costs a seam: (the price its path is found by, the ink it is
    counted as having crossed). 1 for ink, 0 for paper, and MEETING down the middle of a row of ink
    DOUBLE stroke widths wide, where two strokes may run together side by side: the seam follows
    the line where they meet. Such a middle counts as crossed ink unless the rows are stacked
    ALONG stroke widths high, as two strokes side by side are; a few rows are the round top of one
    broad stroke (cut in halves, a bold 0 is two 1s), or two strokes that only touch."""
    rows, starts, ends = row_runs(mask)
    double = (ends - starts >= DOUBLE[0] * width) & (ends - starts <= DOUBLE[1] * width)
    rows, starts, ends = rows[double], starts[double], ends[double]
    middle = np.zeros(mask.shape, dtype=bool)
    middle[rows, (starts + ends - 1) // 2] = True  # the middle one or two pixels
    middle[rows, (starts + ends) // 2] = True
    find, count = mask.astype(np.float32), mask.astype(np.float64)  # float32: the search's arrays are large
    find[middle] = MEETING
    count[middle & (_stacked(middle) >= ALONG * width)] = MEETING
    return find, count


def _stacked(middle: np.ndarray) -> np.ndarray:
    """Per pixel, how many rows the band of middles through it spans (a slanted band's middle
    moves a column per row)."""
    near = middle.copy()
    near[:, 1:] |= middle[:, :-1]
    near[:, :-1] |= middle[:, 1:]
    down, up = near.astype(np.int64), near.astype(np.int64)  # rows of the band so far, each way
    for y in range(1, near.shape[0]):
        down[y] *= down[y - 1] + 1
        up[-1 - y] *= up[-y] + 1
    return down + up - 1


def _seams(mask: np.ndarray, height: float) -> _Seams:
    """Every column's seam (``_Seams``), found for all columns at once by dynamic programming down
    the rows: a seam moves at most one column sideways per row, at SEAM_BEND pixels of ink a step,
    so it runs straight unless bending round a stroke crosses less ink."""
    h, w = mask.shape
    reach = max(1, int(SEAM_REACH * height))
    offsets = np.arange(-reach, reach + 1)
    cols = np.arange(w)[:, None] + offsets[None, :]  # (w, k): the seam of column c at offset k
    outside = (cols < 0) | (cols >= w)
    cols = np.clip(cols, 0, w - 1)
    width = stroke_width(mask)
    priced, counted = _ink_cost(mask, width)  # each row gathered into (w, k) as the rows go down
    steps = np.zeros((h, w, offsets.size), dtype=np.int8)  # per row: -1, 0, +1 offset it came from
    total = np.where(outside, np.float32(np.inf), priced[0][cols])
    from_left, from_right = np.full_like(total, np.inf), np.full_like(total, np.inf)
    for y in range(1, h):
        from_left[:, 1:] = total[:, :-1] + SEAM_BEND
        from_right[:, :-1] = total[:, 1:] + SEAM_BEND
        best = np.minimum(total, np.minimum(from_left, from_right))
        steps[y] = np.where(best == total, 0, np.where(best == from_left, -1, 1))
        total = best + priced[y][cols]
        total[outside] = np.inf
    k = total.argmin(axis=1)
    anchors = np.arange(w)
    paths = np.empty((w, h), dtype=np.int64)
    for y in range(h - 1, -1, -1):
        paths[:, y] = cols[anchors, k]
        k = k + steps[y, anchors, k]
    crossed = counted[np.arange(h)[None, :], paths].sum(axis=1)
    return _Seams(crossed / width, paths, paths.mean(axis=1))


def _height(page: Page, rules: list[Part]) -> float:
    """The line's digit height: the median of its rule-based digits, each as tall as the strokes it
    was cut from (a cut's piece of one broad digit, trimmed to its rows, is shorter than the digit),
    leaving out those under FLAT of the tallest (the bars of an equals sign are no digits' height)."""
    extent = {c.labels[0]: (c.y0, c.y1) for c in page.components}

    def full(part: Part) -> int:
        rows = [extent[label] for label in part.labels if label in extent]
        return max(y1 for _, y1 in rows) - min(y0 for y0, _ in rows) if rows else part.height

    heights = np.array([full(p) for p in rules])
    return float(np.median(heights[heights >= FLAT * heights.max()]))


def _strokes(page: Page, rules: list[Part], height: float) -> list[_Stroke]:
    """The connected strokes of the line that ``rules`` (its rule-based digits) make up."""
    in_line = {label for p in rules for label in p.labels}
    out = []
    for comp in page.components:
        if comp.labels[0] not in in_line:
            continue
        mask = page.labels[comp.y0 : comp.y1, comp.x0 : comp.x1] == comp.labels[0]
        rows = comp.y0 + np.flatnonzero(mask.any(axis=1))
        seams = _seams(mask, height) if comp.width > CUT_FROM * height else None
        out.append(_Stroke(comp, mask, rows, seams))
    return out


def _pieces(strokes: list[_Stroke], rules: list[Part], height: float, cut_ink: float) -> _Line:
    """The line's strokes left to right, the wide ones cut along every seam where two digits may
    touch (the rules' cuts among them), crossing at most ``cut_ink`` stroke widths."""
    rule_cuts = {round(seam.x) for p in rules if p.cut is not None for seam in p.cut}
    pieces: list[tuple[Part, float, float, np.ndarray]] = []
    for s in strokes:
        comp, mask, seams = s.comp, s.mask, s.seams
        if seams is None:
            pieces.append((comp, 0.0, 0.0, s.rows))
            continue
        cuts = _cuts(seams, height, cut_ink, {c - comp.x0 for c in rule_cuts})
        bounds = [Seam.straight(comp.x0)]
        for c in cuts:  # each seam kept right of the one before, so that no pixel is in two pieces
            bounds.append(Seam(comp.y0, np.maximum(comp.x0 + seams.paths[c], bounds[-1].xs)))
        bounds.append(Seam.straight(comp.x1))
        crossed = [0.0, *(float(seams.ink[c]) for c in cuts), 0.0]
        for k in range(len(bounds) - 1):
            part = piece_between(comp, mask, bounds[k], bounds[k + 1])
            if part is not None:
                own = mask & part.within_cut(comp.y0, comp.y1, comp.x0, comp.x1)
                pieces.append((part, crossed[k], crossed[k + 1], comp.y0 + np.flatnonzero(own.any(axis=1))))
    pieces.sort(key=lambda t: (t[0].x0 + t[0].x1) / 2)
    cut_ink = np.array([[a, b] for _, a, b, _ in pieces]).reshape(-1, 2)
    return _Line([t[0] for t in pieces], cut_ink, [t[3] for t in pieces], height)


def _cuts(seams: _Seams, height: float, limit: float, forced: set[int]) -> list[int]:
    """Columns of one stroke whose seams may part touching digits: the rules' cuts, then the
    thinnest local minima, apart from each other and the stroke's ends (by the seams' positions)."""
    ink, position = seams.ink, seams.position
    width = ink.size
    edge, spacing = int(CUT_EDGE * height), max(1, int(CUT_SPACING * height))
    r = max(1, int(0.05 * height))
    padded = np.pad(ink, r, constant_values=np.inf)
    local_min = np.lib.stride_tricks.sliding_window_view(padded, 2 * r + 1).min(axis=1) == ink
    chosen = sorted(c for c in forced if 0 < c < width)
    for c in np.argsort(ink, kind="stable"):
        if ink[c] > limit:
            break
        apart = all(abs(position[c] - position[d]) >= spacing for d in chosen)
        if edge <= position[c] <= width - edge and local_min[c] and apart:
            chosen.append(int(c))
    return sorted(chosen, key=lambda c: position[c])


def _runs(line: _Line, rules: list[Part]) -> list[tuple[int, int, np.ndarray]]:
    """(start, end, features) of every run of neighbouring pieces that could be one digit: runs of up
    to MAX_RUN pieces, and the run from the first to the last piece of every stroke and rule-based
    digit however many pieces it was cut into (a broad 0 cut at every thin column is still one
    digit; a piece of another stroke whose centre lies between them is in that run too)."""
    pieces, height = line.pieces, line.height
    rule_digits = [_members(pieces, p) for p in rules]
    spans = {(i, j) for i in range(len(pieces)) for j in range(i + 1, min(len(pieces), i + MAX_RUN) + 1)}
    whole: dict[int, list[int]] = {}
    for k, p in enumerate(pieces):
        whole.setdefault(p.labels[0], []).append(k)
    for members in [*whole.values(), *rule_digits]:
        if members:
            spans.add((min(members), max(members) + 1))
    out = []
    for i, j in sorted(spans):
        run = pieces[i:j]
        x0, x1 = min(p.x0 for p in run), max(p.x1 for p in run)
        hole = _widest_hole(run) / height
        if x1 - x0 > MAX_WIDTH * height or hole > MAX_HOLE:
            continue
        h = len(functools.reduce(np.union1d, line.rows[i:j]))
        feats = np.array([
            float(set(range(i, j)) in rule_digits),
            (x1 - x0) / height,
            h / height,
            line.cut_ink[i, 0],
            line.cut_ink[j - 1, 1],
            hole,
        ])  # fmt: skip
        out.append((i, j, feats))
    return out


def _members(pieces: list[Part], digit: Part) -> set[int]:
    """Indices of the pieces that make up one rule-based digit."""
    lo, hi = (digit.cut[0].x, digit.cut[1].x) if digit.cut is not None else (digit.x0, digit.x1)
    return {k for k, p in enumerate(pieces) if p.labels[0] in digit.labels and lo <= (p.x0 + p.x1) / 2 < hi}


def _widest_hole(run: list[Part]) -> int:
    """The widest stretch of columns between the pieces with no ink of any of them."""
    hole, reach = 0, None
    for p in sorted(run, key=lambda p: p.x0):
        if reach is not None:
            hole = max(hole, p.x0 - reach)
        reach = p.x1 if reach is None else max(reach, p.x1)
    return hole
