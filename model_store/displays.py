"""A seven-segment display's digits, each lit as separate bars: found, and its bars grouped per digit.

A clock, a meter or a calculator shows each digit as up to seven bars with gaps between them, so every
digit is several marks; the reading's rules for a digit written in several strokes (``segment``) were
made for pens, and part a 7-segment 8 into a handful of "digits". A picture whose ink lies mostly in
straight bars of one thickness, lying flat or standing along one slant, is taken for a display, and
its bars are grouped by the columns they share once the display's lean is straightened.
Handwriting and typeset digits have curved or uneven marks and are left alone.
"""

from __future__ import annotations

import numpy as np

from .components import label_components, row_runs

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
EDGE = 0.4  # a standing bar at most this share of a cell's width beside it is that digit's
JOIN = 0.3  # standing bars beside no cell, apart by at most this share of their width, are one 1
MAX_MARKS = 7 * 32  # a display of the most digits a picture may hold: more marks are something else


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


def display_bars(
    labels: np.ndarray, n: int, share: float = BAR_SHARE, shapes: tuple[np.ndarray, ...] | None = None
) -> tuple[float, float] | None:
    """When the marks are a seven-segment display's bars: the median length of its standing bars and
    its lean (the shift in x per row down them); else None. ``shapes``: the marks' ``bar_shapes``, when
    already measured."""
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
    return float(np.median(length[bar & standing])), shift


def digits_of_display(mask: np.ndarray, labels: np.ndarray, n: int) -> tuple[np.ndarray, int] | None:
    """When ``mask``'s marks (``labels``, 1..n) are a display's bars: labels that give each digit's bars
    one label (the ink itself unchanged), and their count; else None.

    Straightened by the display's lean, the flat bars of one digit (top, middle, bottom) lie over one
    another and span its cell; a standing bar belongs to the nearest cell it stands at the edge of.
    Standing bars beside no cell are a 1 (one above the other). A decimal point or a colon's dots,
    much smaller than a bar, stay marks of their own."""
    if not MIN_BARS <= n <= MAX_MARKS:
        return None
    shapes = bar_shapes(labels, n)
    found = display_bars(labels, n, shapes=shapes)
    if found is None and _bars(*shapes)[2].sum() >= 2:
        # Bars joined at their corners, some bars still apart: cut apart, nearly all of the ink must be
        # bars. (Labelling the pieces costs a few ms: not for marks of which fewer than two are bars.)
        labels, n = bars_apart(mask)
        found = display_bars(labels, n, BAR_SHARE_APART)
    if found is None:
        return None
    standing_length, lean = found
    ys, xs = np.nonzero(labels)
    lab = labels[ys, xs] - 1
    upright = xs - lean * ys  # x where each pixel's standing bar would cross row 0
    x0, x1 = np.full(n, np.inf), np.full(n, -np.inf)
    y0, y1 = np.full(n, np.inf), np.full(n, -np.inf)
    np.minimum.at(x0, lab, upright)
    np.maximum.at(x1, lab, upright + 1)
    np.minimum.at(y0, lab, ys)
    np.maximum.at(y1, lab, ys + 1)
    area = np.bincount(lab, minlength=n)
    bar = area >= SPECK * np.median(area)
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
    for i in np.flatnonzero(bar & ~flat):
        apart = {
            c: max(cx0 - x1[i], x0[i] - cx1, 0.0)
            for c, (cx0, cx1, cy0, cy1) in bounds.items()
            if max(y0[i] - cy1, cy0 - y1[i], 0.0) <= near_rows
            and max(cx0 - x1[i], x0[i] - cx1) <= EDGE * (cx1 - cx0)
        }
        if apart:
            group[i] = min(apart, key=apart.get)
    join(bar & ~flat & ~np.isin(group, cells), -JOIN)  # a 1's two bars
    _, relabel = np.unique(group, return_inverse=True)
    joined = np.zeros_like(labels)
    joined[ys, xs] = relabel[lab] + 1
    return joined, int(relabel.max()) + 1
