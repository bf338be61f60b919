"""A line of writing cut into pieces, and the runs of pieces that could be one digit: what
``model_store.reading`` lays out as the alternatives the model chooses between.

    the line's connected strokes -> the wide ones cut along seams (the path from top to bottom that
    crosses the least ink, bending round strokes) where two digits may touch -> pieces left to right
    -> runs of neighbouring pieces (and each whole stroke and rule-based digit), measured against the
    line's digit height
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .components import row_runs
from .mnist_box import stroke_width
from .parts import Part, Seam, piece_between
from .segment import FLAT, Page

MAX_RUN = 4  # pieces a run of neighbours may join (a 4 in two strokes, cut again where it touches)
CUT_FROM = 0.5  # strokes wider than this (times the line's height) may be touching digits, cut ...
CUT_EDGE = 0.12  # ... at least this far from the stroke's ends ...
CUT_SPACING = 0.15  # ... and from each other (times the line's height)
SEAM_REACH = 0.15  # a seam strays at most this far from its column (times the line's height) ...
SEAM_BEND = 2.0  # ... paying as much for each column sideways as for this many pixels of ink
DOUBLE = (1.3, 2.5)  # a row of ink this many stroke widths wide may be two strokes side by side:
MEETING = 0.1  # a seam down its middle pays this per pixel instead of 1 ...
ALONG = 1.0  # ... and it counts as crossed ink unless such rows stack this many stroke widths high
MAX_WIDTH = 1.3  # no digit is wider than this times its line's height
MAX_HOLE = 0.3  # nor has an empty gap wider than this between its pieces


@dataclass(slots=True)
class Line:
    """One line of writing's pieces, as ``line_runs`` joins them."""

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


def line_height(page: Page, rules: list[Part]) -> float:
    """The line's digit height: the median of its rule-based digits, each as tall as the strokes it
    was cut from (a cut's piece of one broad digit, trimmed to its rows, is shorter than the digit),
    leaving out those under FLAT of the tallest (the bars of an equals sign are no digits' height)."""
    extent = {c.labels[0]: (c.y0, c.y1) for c in page.components}

    def full(part: Part) -> int:
        rows = [extent[label] for label in part.labels if label in extent]
        return max(y1 for _, y1 in rows) - min(y0 for y0, _ in rows) if rows else part.height

    heights = np.array([full(p) for p in rules])
    return float(np.median(heights[heights >= FLAT * heights.max()]))


def line_strokes(page: Page, rules: list[Part], height: float) -> list[_Stroke]:
    """The connected strokes of the line that ``rules`` (its rule-based digits) make up; where a drawing's
    pen strokes run together into one, each of those strokes (``Page.pen``)."""
    in_line = {label for p in rules for label in p.labels}
    pen: dict[int, list[int]] = {}
    for i, s in enumerate(page.pen):
        pen.setdefault(s.label, []).append(i)
    out = []
    for comp in page.components:
        if comp.labels[0] not in in_line:
            continue
        if len(pen.get(comp.labels[0], ())) > 1:  # drawn with several strokes: each is a piece
            out += [_stroke(page, i, height) for i in pen[comp.labels[0]]]
            continue
        mask = page.labels[comp.y0 : comp.y1, comp.x0 : comp.x1] == comp.labels[0]
        out.append(_measured(comp, mask, height))
    return out


def _stroke(page: Page, i: int, height: float) -> _Stroke:
    """Pen stroke ``i`` of a drawing (``Page.pen``), as a stroke of its line."""
    s = page.pen[i]
    h, w = s.mask.shape
    part = Part([s.label], s.x0, s.y0, s.x0 + w, s.y0 + h, int(s.mask.sum()), stroke=i)
    return _measured(part, s.mask, height)


def _measured(comp: Part, mask: np.ndarray, height: float) -> _Stroke:
    """A stroke with its rows of ink, and its seams when it is wide enough to be two digits."""
    rows = comp.y0 + np.flatnonzero(mask.any(axis=1))
    seams = _seams(mask, height) if comp.width > CUT_FROM * height else None
    return _Stroke(comp, mask, rows, seams)


def line_pieces(strokes: list[_Stroke], rules: list[Part], height: float, cut_ink: float) -> Line:
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
    return Line([t[0] for t in pieces], cut_ink, [t[3] for t in pieces], height)


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


def line_runs(line: Line, rules: list[Part]) -> list[tuple[int, int, np.ndarray]]:
    """(start, end, features) of every run of neighbouring pieces that could be one digit: runs of up
    to MAX_RUN pieces, and the run from the first to the last piece of every stroke and rule-based
    digit however many pieces it was cut into (a broad 0 cut at every thin column is still one
    digit; a piece of another stroke whose centre lies between them is in that run too)."""
    pieces, height = line.pieces, line.height
    rule_digits = [_members(pieces, p) for p in rules]
    spans = {(i, j) for i in range(len(pieces)) for j in range(i + 1, min(len(pieces), i + MAX_RUN) + 1)}
    whole: dict[tuple[int, int | None], list[int]] = {}
    for k, p in enumerate(pieces):
        whole.setdefault((p.labels[0], None), []).append(k)
        if p.stroke is not None:  # a pen stroke cut into pieces is one digit too
            whole.setdefault((p.labels[0], p.stroke), []).append(k)
    for members in [*whole.values(), *rule_digits]:
        if members:
            spans.add((min(members), max(members) + 1))
    out = []
    # The rows a run's ink covers, grown piece by piece: the spans come sorted by start, then end.
    covered = np.zeros(max((int(r.max()) + 1 for r in line.rows if r.size), default=0), dtype=bool)
    start, upto = -1, 0
    for i, j in sorted(spans):
        run = pieces[i:j]
        x0, x1 = min(p.x0 for p in run), max(p.x1 for p in run)
        hole = _widest_hole(run) / height
        if x1 - x0 > MAX_WIDTH * height or hole > MAX_HOLE:
            continue
        if i != start:
            start, upto = i, i
            covered[:] = False
        for rows in line.rows[upto:j]:
            covered[rows] = True
        upto = max(upto, j)
        h = int(np.count_nonzero(covered))
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
