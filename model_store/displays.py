"""A seven-segment display's digits, each lit as separate bars: found, and its bars grouped per digit.

A clock, a meter or a calculator shows each digit as up to seven bars with gaps between them, so every
digit is several marks; the reading's rules for a digit written in several strokes (``segment``) were
made for pens, and part a 7-segment 8 into a handful of "digits". A picture whose ink lies mostly in
straight bars of one thickness, lying flat or standing along one slant, is taken for a display, and
its bars are grouped by the columns they share once the display's lean is straightened. Its decimal
point, colon and minus are found among them where a display puts them (``display_marks``), and the
reading takes each group for one digit (no cuts, none skipped: ``reading.candidates``).
Handwriting and typeset digits have curved or uneven marks and are left alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from .components import label_components, row_runs
from .imageops import closed

BAR_LENGTH = 1.6  # a bar is at least this many times as long as it is thick ...
BAR_FILL = (0.72, 1.12)  # ... and fills this share of that rectangle (pointed or bevelled ends included)
FLAT = 20.0  # degrees from the horizontal of a flat bar
STANDING = 35.0  # degrees from the vertical of a standing one (slanted displays lean up to ~15)
MAX_LEAN = 0.3  # the standing bars shift at most this much sideways per row (a display leans <= 17 degrees)
SAME_THICKNESS = (0.6, 1.7)  # times the bars' median thickness
MIN_BARS = 3  # a display shows at least this many bars, flat and standing ones among them
BAR_SHARE = 0.6  # of the marks' ink lies in bars (blur or a glow joins some of them at their corners)
BAR_SHARE_APART = 0.85  # ... or of the pieces' ink, once cut apart where they meet (``bars_apart``)
FLAT_RUN = 1.8  # a row's run of ink this many times the median run is a flat bar's
SPECK = 0.2  # a mark under this share of the bars' median area is left out of the count (a dot, grain)
CELL_OVERLAP = 0.5  # flat bars sharing this share of the shorter one's columns are one digit's ...
STACKED = 3.5  # ... when their rows are at most this many standing bars' lengths apart (a digit's height)
EDGE = 0.2  # a standing bar at most this share of a cell's width beside it is that digit's
JOIN = 0.3  # standing bars beside no cell, apart by at most this share of their width, are one 1
MAX_MARKS = 7 * 32  # a display of the most digits a picture may hold: more marks are something else
DOT = 0.6  # a mark at most this share of a standing bar's length across is a dot or a speck, no bar
DIGIT_HEIGHT = 1.2  # a digit is at least this many standing bars' lengths tall (two bars and a gap)
DOT_SIDE = (0.5, 2.5)  # a dot's sides, times the bars' thickness (smaller: grain; larger: no dot)
DOT_ASPECT = 2.0  # ... and at most this much longer one way than the other
POINT = (0.7, 1.15)  # a decimal point's centre this far down the digits (0 their top, 1 their base)
COLON_UPPER = (0.05, 0.6)  # a colon's upper dot's centre ...
COLON_LOWER = (0.4, 1.05)  # ... its lower one's ...
COLON_APART = 0.2  # ... at least this much lower
MINUS = (0.3, 0.7)  # a minus's centre
POINT_BESIDE = (1.5, 4.0)  # a standing bar with a point touching it is this many bars' thickness wide ...
POINT_TALL = 1.4  # ... and at least this many times as tall as wide, ...
POINT_LOW = 0.6  # ... the point jutting out beside its lowest part (this share of its height down)
MINUS_REACH = 1.5  # a sign is at most this far (times a digit's height) before its number's first digit
# A display digit's bars lie apart by up to twice this share of its height; left apart, an 8's middle
# bar is a stray mark inside a 0 and a 6's lower left bar a speck beside a 5 to classifiers that learnt
# strokes (``bars_joined``).
BAR_GAP = 0.05


def bar_shapes(labels: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per mark 1..n: its length and thickness as the solid rectangle with its second moments would
    have them, its angle from the horizontal (degrees, -90..90), and its area."""
    ys, xs = np.nonzero(labels)
    lab = labels[ys, xs] - 1
    area = np.bincount(lab, minlength=n).astype(np.float64)
    safe = np.maximum(area, 1.0)
    mx, my = np.bincount(lab, xs, n) / safe, np.bincount(lab, ys, n) / safe
    dx, dy = xs - mx[lab], ys - my[lab]
    sxx = np.bincount(lab, dx * dx, n) / safe + 1 / 12  # a pixel is a unit square, not a point
    syy = np.bincount(lab, dy * dy, n) / safe + 1 / 12
    sxy = np.bincount(lab, dx * dy, n) / safe
    half = np.sqrt(((sxx - syy) / 2) ** 2 + sxy**2)
    major, minor = (sxx + syy) / 2 + half, np.maximum((sxx + syy) / 2 - half, 1e-6)
    angle = np.degrees(0.5 * np.arctan2(2 * sxy, sxx - syy))
    return np.sqrt(12 * major), np.sqrt(12 * minor), angle, area


def bars_apart(mask: np.ndarray) -> tuple[np.ndarray, int]:
    """The marks of ``mask`` cut into flat and standing pieces: bars joined at their corners (square
    ends, a blur) apart again. A row's run of ink FLAT_RUN times as long as the median run (a bar's
    thickness, as most rows cross standing bars) is a flat bar's; the rest is standing bars'."""
    rows, starts, ends = row_runs(mask)
    if rows.size == 0:
        return np.zeros(mask.shape, np.int32), 0
    length = ends - starts
    long = length >= FLAT_RUN * np.median(length)
    flat = np.zeros_like(mask)
    run = length[long]  # every pixel of the long runs: each run's start, plus its place in the run
    first = np.repeat(starts[long] - np.cumsum(run) + run, run)
    flat[np.repeat(rows[long], run), first + np.arange(run.sum())] = True
    flat_labels, n_flat = label_components(flat)
    standing_labels, n_standing = label_components(mask & ~flat)
    return np.where(
        flat, flat_labels, np.where(standing_labels > 0, standing_labels + n_flat, 0)
    ), n_flat + n_standing


def _bars(
    length: np.ndarray, thick: np.ndarray, angle: np.ndarray, area: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Which marks lie flat, which stand, and which of them are straight bars."""
    fill = area / (length * thick)
    flat = np.abs(angle) <= FLAT
    standing = np.abs(angle) >= 90 - STANDING
    bar = (length >= BAR_LENGTH * thick) & (fill >= BAR_FILL[0]) & (fill <= BAR_FILL[1]) & (flat | standing)
    return flat, standing, bar


class Bars(NamedTuple):
    """A display's bars, measured: the median length of the standing ones, the display's lean (the
    shift in x per row down them), and the bars' median thickness."""

    length: float
    lean: float
    thick: float


def display_bars(
    labels: np.ndarray, n: int, share: float = BAR_SHARE, shapes: tuple[np.ndarray, ...] | None = None
) -> Bars | None:
    """When the marks are a seven-segment display's bars: their ``Bars``; else None. ``shapes``: the
    marks' ``bar_shapes``, when already measured."""
    if not MIN_BARS <= n <= MAX_MARKS:
        return None
    length, thick, angle, area = shapes if shapes is not None else bar_shapes(labels, n)
    flat, standing, bar = _bars(length, thick, angle, area)
    if bar.sum() < MIN_BARS or not (flat & bar).any() or not (standing & bar).any():
        return None
    counted = area >= SPECK * np.median(area[bar])
    if area[bar].sum() < share * area[counted].sum():
        return None
    median = float(np.median(thick[bar]))
    lo, hi = SAME_THICKNESS
    if np.any((thick[bar] < lo * median) | (thick[bar] > hi * median)):
        return None
    # Standing bars lean one way on a display (its slant): within 12 degrees of each other.
    lean = np.radians(np.where(angle < 0, angle + 180, angle)[bar & standing])
    shift = float(np.median(1 / np.tan(lean)))
    if np.ptp(lean) > np.radians(24) or abs(shift) > MAX_LEAN:
        return None
    return Bars(float(np.median(length[bar & standing])), shift, median)


@dataclass(frozen=True, slots=True)
class Grouped:
    """A display's marks regrouped: each digit's bars under one label, each other mark under its own."""

    labels: np.ndarray  # (H, W) int32, 0 = paper; the ink itself unchanged
    count: int
    # A decimal point, a colon, a minus: (its character, its labels, the label of a digit on its line).
    marks: list[tuple[str, list[int], int]]


def digits_of_display(mask: np.ndarray, labels: np.ndarray, n: int) -> Grouped | None:
    """When ``mask``'s marks (``labels``, 1..n) are a display's bars: its digits' bars grouped, and the
    display's punctuation (``display_marks``); else None.

    Straightened by the display's lean, the flat bars of one digit (top, middle, bottom) lie over one
    another and span its cell; a standing bar belongs to the nearest cell it stands at the edge of, one
    on each side at each height (``_standing_bars_of_cells``). Standing bars beside no cell are a 1 (one
    above the other). A decimal point or a colon's dots, much smaller than a bar, stay marks of their
    own, a point touching its digit's bar cut off from it first (``_points_apart``)."""
    if not MIN_BARS <= n <= MAX_MARKS:
        return None
    shapes = bar_shapes(labels, n)
    found = display_bars(labels, n, shapes=shapes)
    if found is None:
        # Bars joined at their corners: cut apart, nearly all of the ink must be bars. Every digit may be
        # one mark (a thin face at the working size joins all of its bars), so this is tried whenever
        # the marks are not bars as they are: labelling the pieces costs about a millisecond.
        labels, n = bars_apart(mask)
        found = display_bars(labels, n, BAR_SHARE_APART)
    if found is None:
        return None
    standing_length, lean, thick = found
    ys, xs = np.nonzero(labels)
    lab = labels[ys, xs] - 1
    upright = xs - lean * ys  # x where each pixel's standing bar would cross row 0
    lab, n = _points_apart(lab, upright, ys, n, thick)
    box = _extents(upright, ys, upright + 1, ys + 1, lab, n)
    x0, y0, x1, y1 = box
    area = np.bincount(lab, minlength=n)
    # A dot or a speck, never a bar: short, for the display's bars and for their thickness.
    small = np.maximum(x1 - x0, y1 - y0) <= min(DOT * standing_length, DOT_SIDE[1] * thick)
    bar = (area >= SPECK * np.median(area)) & ~small
    flat = bar & (x1 - x0 > y1 - y0)
    near_rows = STACKED * standing_length
    group = np.arange(n)

    def join(which: np.ndarray, close: float) -> None:
        """Marks among ``which`` sharing columns (their overlap over the narrower's width at least
        ``close``; negative: apart by at most that share) with rows near enough: one group."""
        idx = np.flatnonzero(which)
        for a, i in enumerate(idx):
            for j in idx[a + 1 :]:
                overlap = min(x1[i], x1[j]) - max(x0[i], x0[j])
                rows = max(y0[i] - y1[j], y0[j] - y1[i], 0.0)
                if overlap >= close * min(x1[i] - x0[i], x1[j] - x0[j]) and rows <= near_rows:
                    group[group == group[j]] = group[i]

    join(flat, CELL_OVERLAP)  # the cells
    cells = np.unique(group[flat])
    bounds = {c: (x0[group == c].min(), x1[group == c].max(), y0[group == c].min(), y1[group == c].max())
              for c in cells}  # fmt: skip
    narrow = x1 - x0 <= DOT_SIDE[1] * thick  # a standing bar alone, not joined to another at a corner
    for i, c in _standing_bars_of_cells(bounds, x0, x1, y0, y1, bar & ~flat, narrow, near_rows).items():
        group[i] = c
    join(bar & ~flat & ~np.isin(group, cells), -JOIN)  # a 1's two bars
    _, relabel = np.unique(group, return_inverse=True)
    joined = np.zeros_like(labels)
    joined[ys, xs] = relabel[lab] + 1
    count = int(relabel.max()) + 1
    groups = _extents(*box, relabel, count)
    marks = display_marks(groups, relabel, small, bar, flat, standing_length, thick)
    return Grouped(joined, count, marks)


def bars_joined(ink: np.ndarray, height: int) -> np.ndarray:
    """A display digit's ink (white on black; ``height``: the digit's, in its pixels) with the gaps
    between its bars closed (a grey closing by a square of 2 x BAR_GAP of its height plus one, at least
    3 px), so that its bars meet as a pen's strokes do before it is fitted and read."""
    return closed(ink, max(3, 2 * round(BAR_GAP * height) + 1))


def _points_apart(
    lab: np.ndarray, upright: np.ndarray, ys: np.ndarray, n: int, thick: float
) -> tuple[np.ndarray, int]:
    """Each pixel's mark (``lab``, 0..n-1), with a decimal point that touches a standing bar at its
    lower end a mark of its own (n, n + 1, ...). A display puts its point close by its digit's lower
    corner, and at the working size the two often touch: the bar's rows are then wider at the bottom,
    where the point juts out beside the bar's columns (``upright``: the pixels' straightened columns)."""
    box = _extents(upright, ys, upright + 1, ys + 1, lab, n)
    wide, tall = box[2] - box[0], box[3] - box[1]
    suspects = np.flatnonzero((wide > POINT_BESIDE[0] * thick) & (wide <= POINT_BESIDE[1] * thick)
                              & (tall >= POINT_TALL * wide))  # fmt: skip
    if suspects.size == 0:
        return lab, n
    lab = lab.copy()
    for i in suspects:
        own = np.flatnonzero(lab == i)
        u, row = upright[own], ys[own] - int(box[1, i])
        rows = int(tall[i])
        left, right = np.full(rows, np.inf), np.full(rows, -np.inf)
        np.minimum.at(left, row, u)
        np.maximum.at(right, row, u + 1)
        b0, b1 = np.median(left), np.median(right)  # the bar's columns: most rows are the bar alone
        for jut in (u >= b1 + 1, u < b0 - 1):  # beside the bar's right edge, or its left
            if not jut.any():
                continue
            pu, py = u[jut], ys[own][jut]
            side, long = sorted((float(np.ptp(pu) + 1), float(np.ptp(py) + 1)))
            low = (py.mean() - box[1, i]) / tall[i] >= POINT_LOW
            if low and _dot_sized(side, long, thick):
                lab[own[jut]] = n
                n += 1
                break
    return lab, n


def _dot_sized(side: float, long: float, thick: float) -> bool:
    """Whether a mark ``side`` by ``long`` across is a display's dot: its sides within DOT_SIDE of the
    bars' thickness, at most DOT_ASPECT longer one way than the other."""
    return DOT_SIDE[0] * thick <= side and long <= DOT_SIDE[1] * thick and long <= DOT_ASPECT * side


def _standing_bars_of_cells(
    bounds: dict[int, tuple[float, float, float, float]], x0: np.ndarray, x1: np.ndarray, y0: np.ndarray,
    y1: np.ndarray, standing: np.ndarray, narrow: np.ndarray, near_rows: float,
) -> dict[int, int]:  # fmt: skip
    """Which cell each standing bar belongs to: the nearest it stands at the edge of (at most EDGE of
    its width beside it), each side of a cell holding one bar at any height, the nearest bar taking it
    (``narrow`` bars: bars joined at a corner go to the nearest cell, taking no side).
    A 1 just before a digit stands at that digit's edge too: a bar stacked with one no cell took is the
    1's other bar, not the digit's."""
    claims = []
    for i in np.flatnonzero(standing):
        for c, (cx0, cx1, cy0, cy1) in bounds.items():
            beside = max(cx0 - x1[i], x0[i] - cx1)
            if max(y0[i] - cy1, cy0 - y1[i], 0.0) <= near_rows and beside <= EDGE * (cx1 - cx0):
                claims.append((max(beside, 0.0), int(i), (c, x0[i] + x1[i] < cx0 + cx1)))  # cell, left?
    taken: dict[int, int] = {}
    sides: dict[tuple[int, bool], list[int]] = {}

    def level(i: int, j: int) -> bool:  # side by side: their rows overlap by half the shorter
        return min(y1[i], y1[j]) - max(y0[i], y0[j]) >= 0.5 * min(y1[i] - y0[i], y1[j] - y0[j])

    for _, i, side in sorted(claims):
        if i in taken or (narrow[i] and any(level(i, j) for j in sides.get(side, []))):
            continue
        taken[i] = side[0]
        if narrow[i]:  # a bar, not bars joined at a corner: it fills its side at its height
            sides.setdefault(side, []).append(i)
    free = [j for j in np.flatnonzero(standing & narrow) if j not in taken]

    def stacked(i: int, j: int) -> bool:  # one over the other, a bar's gap apart
        overlap = min(x1[i], x1[j]) - max(x0[i], x0[j])
        gap = max(y0[i] - y1[j], y0[j] - y1[i])
        return overlap >= 0.5 * min(x1[i] - x0[i], x1[j] - x0[j]) and 0 <= gap <= 0.5 * (y1[j] - y0[j])

    return {i: c for i, c in taken.items() if not (narrow[i] and any(stacked(i, j) for j in free))}


def _extents(
    x0: np.ndarray, y0: np.ndarray, x1: np.ndarray, y1: np.ndarray, of: np.ndarray, n: int
) -> np.ndarray:
    """(4, n) float: x0, y0, x1, y1 of each of n boxes holding the given boxes (or pixels), box k of
    those whose ``of`` is k."""
    box = np.stack([np.full(n, np.inf), np.full(n, np.inf), np.full(n, -np.inf), np.full(n, -np.inf)])
    np.minimum.at(box[0], of, x0)
    np.minimum.at(box[1], of, y0)
    np.maximum.at(box[2], of, x1)
    np.maximum.at(box[3], of, y1)
    return box


def display_marks(
    groups: np.ndarray, relabel: np.ndarray, small: np.ndarray, bar: np.ndarray, flat: np.ndarray,
    standing_length: float, thick: float,
) -> list[tuple[str, list[int], int]]:  # fmt: skip
    """The display's punctuation, told by where it sits against the digits beside it (upright boxes
    ``groups`` (4, count); per mark its group ``relabel``, and whether it is ``small``, a ``bar``, a
    ``flat`` one; the bars' ``thick``ness); as ``Grouped.marks``, labels counted from 1:

        .  a dot, its centre in the lowest part of the digits, between two of them
        :  two dots one over the other, the upper one in the digits' upper half, between two digits
        -  a flat bar alone in its cell, halfway up the digits, between two or before the first

    Thresholds in units of the digits' height, as a display draws them (DSEG's and a clock's colon
    sits higher than a pen's: its lower dot is not on the baseline)."""
    gx0, gy0, gx1, gy1 = groups
    count = groups.shape[1]
    members = [np.flatnonzero(relabel == g) for g in range(count)]
    digit = np.array([bar[m].any() and gy1[g] - gy0[g] >= DIGIT_HEIGHT * standing_length
                      for g, m in enumerate(members)])  # fmt: skip
    if not digit.any():
        return []
    cx, cy = (gx0 + gx1) / 2, (gy0 + gy1) / 2

    def line(g: int) -> tuple[np.ndarray, float] | None:
        """The digits on the row of group ``g`` and how far down them its centre lies (0 top, 1 base)."""
        reach = 0.25 * (gy1 - gy0)
        on = np.flatnonzero(digit & (gy0 - reach <= cy[g]) & (cy[g] <= gy1 + reach))
        if on.size == 0:
            return None
        top, base = float(np.median(gy0[on])), float(np.median(gy1[on]))
        return on, (cy[g] - top) / max(base - top, 1.0)

    def between(g: int, on: np.ndarray) -> bool:
        return bool((cx[on] < cx[g]).any() and (cx[on] > cx[g]).any())

    def anchor(on: np.ndarray, g: int) -> int:
        """The label of the digit nearest group ``g`` on its row."""
        return int(on[np.argmin(np.abs(cx[on] - cx[g]))]) + 1

    w, h = gx1 - gx0, gy1 - gy0
    side, long = np.minimum(w, h), np.maximum(w, h)
    dots = [g for g, m in enumerate(members) if small[m].all() and _dot_sized(side[g], long[g], thick)]
    placed = {g: at for g in dots if (at := line(g)) is not None}  # each dot's row and depth, once
    out: list[tuple[str, list[int], int]] = []
    used: set[int] = set()
    for g, (on, down) in placed.items():  # a colon: an upper dot over a lower one
        if g in used or not COLON_UPPER[0] <= down <= COLON_UPPER[1] or not between(g, on):
            continue
        for k, (_, lower) in placed.items():
            over = min(gx1[g], gx1[k]) - max(gx0[g], gx0[k])
            if (k not in used and k != g and over > 0 and COLON_LOWER[0] <= lower <= COLON_LOWER[1]
                    and lower - down >= COLON_APART):  # fmt: skip
                out.append((":", [g + 1, k + 1], anchor(on, g)))
                used |= {g, k}
                break
    for g, (on, down) in placed.items():  # a decimal point
        if g not in used and POINT[0] <= down <= POINT[1] and between(g, on):
            out.append((".", [g + 1], anchor(on, g)))
            used.add(g)
    for g, m in enumerate(members):  # a minus: one flat bar, alone
        if m.size != 1 or not flat[m[0]] or digit[g]:
            continue
        at = line(g)
        if at is None or not MINUS[0] <= at[1] <= MINUS[1]:
            continue
        on = at[0]
        first = on[np.argmin(gx0[on])]
        before = cx[g] < cx[first] and gx0[first] - gx1[g] <= MINUS_REACH * (gy1[first] - gy0[first])
        if between(g, on) or before:
            out.append(("-", [g + 1], anchor(on, g)))
    return out
