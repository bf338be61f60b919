"""Lined and squared paper: the printed rulings taken out of an ink map, the writing over them kept.

A digit written with a ball-point pen on a school notebook's squared paper shows rulings about as
dark and as wide as its strokes; left in, they stretch the digit's box across the frame and the model
reads a grid. A ruling is told from a stroke by what no handwriting does: it is straight, runs across
the whole picture, and comes with others of its kind at a regular spacing. So the lines of one
direction are taken out when at least ``MIN_RULINGS`` of them, evenly spaced, cross the picture edge to
edge. A single such line down the page (a notebook's margin line, maybe doubled) goes only when it is
``NUMBER_REACH`` times as long as the writing beside it is tall: a tightly cropped 1 spans the picture
too, but no digit's stroke is that much longer than the digits. (A single line across the page is an
underline or a form's, which ``guides`` takes out with the writing touching it in view.)
"""

from __future__ import annotations

import math

import numpy as np

MAX_TILT_DEG = 3.0  # a form's lines are searched within +-this (guides: a scan, a careful photo) ...
RULING_TILT_DEG = 8.0  # ... a notebook's rulings within +-this: pages are photographed by hand
TILT_STEP_DEG = 0.5  # at worst a quarter degree off: 1 px of drift over 229 px, which a 3-row band absorbs
MIN_CUT = 0.05  # a ruling the picture's corner cuts short still crosses this share of its width
MIN_COVER = 0.85  # a ruling is ink along at least this share of the picture's width
MIN_RULINGS = 3  # and comes with at least two others, evenly spaced
SPACING_TOLERANCE = 0.2  # each within this share of the spacing from the grid
MAX_WIDTH = 0.04  # rulings are thin: at most this share of the picture's height (and >= 3 px)
MIN_SIDE = 48  # smaller pictures are taken as they are
STROKE_OVER_RULING = 1.5  # a pixel this many times a ruling's own level is a stroke on it
NUMBER_REACH = 2.5  # a line this many times as long as the writing is tall is no digit's stroke
WRITING = 0.5  # the writing: ink at least this share of the picture's darkest (lines are lighter)


def rulings_removed(ink: np.ndarray, level: float) -> np.ndarray:
    """White-on-black ink over a paper at 0 -> the same without ruled or squared paper's lines.
    ``level``: what counts as ink along a line (above the paper's grain). Returns ``ink`` itself when
    it shows no rulings."""
    out, laid = _lines_removed(ink, level)
    across = out.T
    done, _ = _lines_removed(across, level, beneath=None if laid is None else laid.T, margin=True)
    return out if done is across else done.T


def _lines_removed(
    x: np.ndarray, level: float, beneath: np.ndarray | None = None, margin: bool = False
) -> tuple[np.ndarray, np.ndarray | None]:
    """Horizontal (within RULING_TILT_DEG) rulings of x taken out, and the level of the line painted over
    at each pixel (0 off them); (x itself, None) when it has none. ``beneath``: the levels of the lines
    of the other direction, painted over before: where two cross, their ink adds up. ``margin``: x is
    the picture transposed, and a lone margin line goes too."""
    h, w = x.shape
    on = x > level
    # Cheap first: a ruling puts ink in every column; a digit with paper beside it leaves columns empty.
    if min(h, w) < MIN_SIDE or on.any(axis=0).mean() < MIN_COVER:
        return x, None
    shift, cover, reach = straightest_rows(on, RULING_TILT_DEG)
    is_line, max_width = cover >= MIN_COVER, max(3, int(MAX_WIDTH * h))
    grid, origin, gap = _evenly_spaced(is_line, max_width)
    if grid:  # at a steep tilt the picture's corners cut rulings short: follow the grid out to them
        grid = _whole_rulings(on, shift, reach, grid, origin, gap, max_width)
    if grid and margin and beneath is None and not _longer_than_writing(x, shift, reach, grid):
        grid = []  # upright lines without a ruled page's rows: the stems of 1s and 4s standing in a row
    lines = grid + (_margin_line(x, shift, reach, is_line, max_width, grid) if margin else [])
    if not lines:
        return x, None
    out, laid = x.copy(), np.zeros_like(x)
    for first, last in lines:
        _paint_over(x, out, laid, shift, first - reach, last - reach, beneath)
    return out, laid


def straightest_rows(on: np.ndarray, max_tilt: float = MAX_TILT_DEG) -> tuple[np.ndarray, np.ndarray, int]:
    """The tilt (within +-max_tilt degrees) along which the rows of a mask are straightest: a line's own.
    Returns (shift, cover, reach): sheared row r (of -reach..h+reach) meets column c at picture row
    r + shift[c], and cover[r + reach] is the share of the columns it crosses that have ink in it
    (or a row beside it: a line drifting a pixel off the tilt searched still counts)."""
    h, w = on.shape
    ys, xs = _beside(on)
    reach = int(math.ceil(math.tan(math.radians(max_tilt)) * w / 2)) + 1
    best: tuple[float, np.ndarray, np.ndarray] | None = None  # (score, shift, cover) of the best tilt
    for deg in np.arange(-max_tilt, max_tilt + 1e-9, TILT_STEP_DEG):
        shift = np.round(math.tan(math.radians(deg)) * (np.arange(w) - w / 2)).astype(np.intp)
        share, inside = _row_cover(ys, xs, shift, reach, h)
        cover = np.where(inside >= w / 2, share, 0.0)
        score = float(cover[cover >= MIN_COVER].sum())  # straightest at the lines' own tilt
        if best is None or score > best[0]:
            best = (score, shift, cover)
    assert best is not None
    return best[1], best[2], reach


def _beside(on: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The pixels of a mask with a row beside it added (a line drifting a pixel off its tilt)."""
    band = on.copy()
    band[1:] |= on[:-1]
    band[:-1] |= on[1:]
    return np.nonzero(band)


def _row_cover(
    ys: np.ndarray, xs: np.ndarray, shift: np.ndarray, reach: int, h: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per sheared row (-reach..h+reach; row r meets column c at picture row r + shift[c]): the share
    of the columns it crosses inside the picture that have a pixel on it, and how many it crosses."""
    lines = np.arange(-reach, h + reach)
    # Each column has at most one pixel on each sheared row: counting pixels counts columns.
    hits = np.bincount(ys - shift[xs] + reach, minlength=lines.size)
    ordered = np.sort(shift)  # columns whose pixel of row r lies inside the picture
    inside = np.searchsorted(ordered, h - lines, "left") - np.searchsorted(ordered, -lines, "left")
    return hits / np.maximum(inside, 1), inside


def _whole_rulings(
    on: np.ndarray,
    shift: np.ndarray,
    reach: int,
    grid: list[tuple[int, int]],
    origin: float,
    gap: float,
    max_width: int,
) -> list[tuple[int, int]]:
    """The rulings of a grid whole. ``straightest_rows`` counts only sheared rows that cross half the
    picture or more; at a steep tilt the corners cut the outer rulings, and a row or two of the others,
    shorter. Here a row counts when it is inked along MIN_COVER of the MIN_CUT or more of the columns it
    crosses: the thin runs of such rows on the grid, and the found runs where a run is too thick."""
    h, w = on.shape
    share, inside = _row_cover(*_beside(on), shift, reach, h)
    inked = (share >= MIN_COVER) & (inside >= max(8, MIN_CUT * w))
    for first, last in grid:
        inked[first : last + 1] = True
    out = []
    for first, last in zip(*runs(inked), strict=True):
        steps = ((first + last) / 2 - origin) / gap
        if last - first + 1 <= max_width and abs(steps - round(steps)) <= SPACING_TOLERANCE:
            out.append((int(first), int(last)))
        else:  # a ruling run together with a stroke along it, or off the grid: as found
            out += [(a, b) for a, b in grid if first <= a and b <= last]
    return out


def _paint_over(
    x: np.ndarray,
    out: np.ndarray,
    laid: np.ndarray,
    shift: np.ndarray,
    first: int,
    last: int,
    beneath: np.ndarray | None,
) -> None:
    """One ruling (sheared rows first..last: its ink and a row each side) painted over in ``out`` with
    what lies just beyond it, interpolated across: paper where it runs alone, the stroke where one
    crosses it. Pixels well above the ruling's own level (its median along it; plus the level of a
    line of the other direction painted over there, ``beneath``) are ink on it: kept. A ruling cut by
    the picture's edge has paper on one side only: that side's is used. Its level goes into ``laid``."""
    h, w = x.shape
    cols = np.arange(w)
    above, below = first - 1 + shift, last + 1 + shift  # picture rows, per column
    has_above, has_below = above >= 0, below < h
    if not (has_above | has_below).any():
        return
    beyond_above, beyond_below = x[np.clip(above, 0, h - 1), cols], x[np.clip(below, 0, h - 1), cols]
    top = np.where(has_above, beyond_above, beyond_below)
    bottom = np.where(has_below, beyond_below, beyond_above)
    rows = [r + shift for r in range(first, last + 1)]
    inside = [(ys >= 0) & (ys < h) & (has_above | has_below) for ys in rows]
    strip = np.stack(
        [np.where(v, x[np.clip(ys, 0, h - 1), cols], -np.inf) for ys, v in zip(rows, inside, strict=True)]
    )
    along = strip.max(axis=0)
    if not np.isfinite(along).any():
        return
    level = float(np.median(along[np.isfinite(along)]))
    for r, ys, v in zip(range(first, last + 1), rows, inside, strict=True):
        t = (r - first + 1) / (last - first + 2)
        values = x[ys[v], cols[v]]
        painted = (1 - t) * top[v] + t * bottom[v]
        under = level if beneath is None else level + beneath[ys[v], cols[v]]
        out[ys[v], cols[v]] = np.where(values > STROKE_OVER_RULING * under, values, painted)
        laid[ys[v], cols[v]] = level


def _evenly_spaced(is_line: np.ndarray, max_width: int) -> tuple[list[tuple[int, int]], float, float]:
    """(first, last) rows of the thin runs of ``is_line`` that sit on one regular grid, when at least
    MIN_RULINGS do, and the grid (origin, spacing); none otherwise. A run off the grid (a stroke along a
    ruling's direction) is left out, and so is a ruling merged with such a stroke into a run too thick
    to be printed."""
    starts, ends = runs(is_line)
    thin = (ends - starts + 1) <= max_width
    starts, ends = starts[thin], ends[thin]
    if starts.size < MIN_RULINGS:
        return [], 0.0, 0.0
    centres = (starts + ends) / 2
    gap = float(np.median(np.diff(centres)))
    if gap < 2 * float((ends - starts + 1).max()):  # lines, with paper between them
        return [], 0.0, 0.0
    best, origin = np.zeros(0, bool), 0.0
    for anchor in centres:  # the grid through each run in turn; keep the one most runs sit on
        on_grid = _on_grid(centres, anchor, gap)
        if on_grid.sum() > best.sum():
            best, origin = on_grid, float(anchor)
    # The median gap is whole pixels when the spacing is not (10.5 px on a reduced photo), and the grid
    # drifts off the far rulings: refit the spacing to the rulings on it while that finds more.
    while best.sum() >= 2:
        steps = np.round((centres[best] - centres[best][0]) / gap)
        gap, origin = np.polyfit(steps, centres[best], 1)
        refitted = _on_grid(centres, origin, gap)
        if refitted.sum() <= best.sum():
            break
        best = refitted
    if best.sum() < MIN_RULINGS:
        return [], 0.0, 0.0
    return [(int(a), int(b)) for a, b in zip(starts[best], ends[best], strict=True)], origin, gap


def _margin_line(
    x: np.ndarray,
    shift: np.ndarray,
    reach: int,
    is_line: np.ndarray,
    max_width: int,
    grid: list[tuple[int, int]],
) -> list[tuple[int, int]]:
    """In the transposed picture x: the thin edge-to-edge lines off ``grid`` (a margin line, doubled on
    some pages; the rulings of a grid too faint to be found whole) when they are NUMBER_REACH times as
    long as the writing off every such line is tall; none when there is no writing (a line may be the
    digit). A form's box is never that much taller than the writing in it."""
    starts, ends = runs(is_line)
    thin = (ends - starts + 1) <= max_width
    lines = [
        (int(a), int(b))
        for a, b in zip(starts[thin], ends[thin], strict=True)
        if not any(a <= last and first <= b for first, last in grid)  # off the grid's rulings
    ]
    return lines if lines and _longer_than_writing(x, shift, reach, lines + grid) else []


def _longer_than_writing(x: np.ndarray, shift: np.ndarray, reach: int, lines: list[tuple[int, int]]) -> bool:
    """In the transposed picture x: ``lines`` (edge to edge) are NUMBER_REACH times as long as the
    writing off them is tall; False when there is no writing (the lines may be the digits)."""
    on_lines = np.zeros_like(x, dtype=bool)
    for first, last in lines:
        mark_rows(on_lines, shift, first - reach - 1, last - reach + 1)
    ys, xs = np.nonzero((x > WRITING * float(x.max())) & ~on_lines)
    if ys.size == 0:
        return False
    tall = float(np.quantile(xs, 0.99) - np.quantile(xs, 0.01)) + 1.0  # the picture's rows; specks aside
    return x.shape[1] >= NUMBER_REACH * tall


def mark_rows(mask: np.ndarray, shift: np.ndarray, first: int, last: int) -> None:
    """Set sheared rows first..last of a mask (row r meets column c at r + shift[c]); ``mask`` may be a
    view of a larger one (a side of a crop, seen as its top rows)."""
    h, w = mask.shape
    cols = np.arange(w)
    for r in range(first, last + 1):
        rows = r + shift
        inside = (rows >= 0) & (rows < h)
        mask[rows[inside], cols[inside]] = True


def _on_grid(centres: np.ndarray, origin: float, gap: float) -> np.ndarray:
    steps = (centres - origin) / gap
    return np.abs(steps - np.round(steps)) <= SPACING_TOLERANCE


def runs(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The runs of True in a 1-D mask: (first index, last index) arrays, one entry per run."""
    idx = np.flatnonzero(mask)
    breaks = np.flatnonzero(np.diff(idx) > 1)
    return np.concatenate([idx[:1], idx[breaks + 1]]), np.concatenate([idx[breaks], idx[-1:]])
