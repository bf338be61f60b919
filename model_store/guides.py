"""A form's box, a comb field or the line a digit is written on, taken out of the writing's crop.

A digit written in a form's box, in a comb field's cell or on an answer line, or underlined, comes with
printed or drawn lines that stretch its crop: left in, a 1 in a box is read as a 0 and an underlined 7 as
a 2. A guide is told from a stroke by where it lies and how far it runs: it is straight, lies along the
very edge of the ink, spans the crop from end to end and runs past the writing at both ends. Only
arrangements no digit has are taken out: a line under the writing, lines on two opposite sides (down both
sides with none across only when they run well past the writing: not the 1s of "111"), or on three
sides. A line over the writing alone could be a 7's or a 5's bar, a line beside it a 1 or a 4's
stem, and a line whose ends the writing reaches could be a 2's base: those stay, unless the line runs
under a whole number (``NUMBER_REACH`` times as long as the writing is tall: no digit's stroke is).
With a box's top and bottom lines go the sides between a row of boxes (straight, as thin as the box's
lines, meeting both, evenly spaced) and a comb field's ticks (short, standing on its line, paper on both
sides).
Evenly spaced rulings across a whole page are ``model_store.rulings``'s; this works on the crop of the
writing: one digit's in ``preprocess``, a whole number's in ``segment``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from .rulings import (
    MAX_TILT_DEG,
    MIN_RULINGS,
    NUMBER_REACH,
    RULING_TILT_DEG,
    mark_rows,
    runs,
    straightest_rows,
)

EDGE_COVER = 0.9  # a guide has ink along at least this share of the crop's side
MAX_THICK = 0.12  # and is at most this share of the crop's longer side thick (a marker's frame)
FRAME_OVERHANG = 0.03  # a box's sides run past the writing by this share (the writing is inside)
TOUCH_OVERHANG = 0.2  # a guide the writing touches: by this share, and touched this far from its ends
# (a 2's base and a Z-like 2's top are joined at their ends); an underline is also longer than the
# writing is tall (a 1's foot is short)
UNDER_OVERHANG = 0.1  # an underline stood on well inside runs past the writing by this share at both ends
MAX_TICK = 0.5  # a comb field's ticks at a line's ends are at most this share of the crop tall
MIN_REST = 0.1  # the writing holds at least this share of the ink (an empty box is a picture)
FLAT_REST = 2.5  # ... and is not this many times as wide as tall (a box round a bar is a display's 8)
OUTSIDE = 0.02  # at most this share of the ink lies beyond a guide (it is the crop's border)
MIN_SIDE = 24  # smaller crops are taken as they are
WALL_COVER = 0.9  # a side between boxes has ink along this share of the rows between their lines
FAINT = 3  # faint ink is above the level over this (a reduced picture's printed side, a thin line)
BAND_CLEAR = 0.9  # the band between a row's lines is clear of this share of each line's inner edge
MIN_PITCH = 0.4  # the sides of a row of boxes are at least this share of their height apart ...
PITCH_PX, PITCH_SHARE = 1.5, 0.06  # ... each within this many pixels (or share of the pitch) of it
NEAR = 3  # a pitch is sought through two lines this many apart or fewer (the search stays linear)
SIDES_ALONE_OVERHANG = 0.1  # lines down both sides, none across: they run this far past the writing
# (a table's rules do; two plain 1s as tall as the 1 between them, "111", do not)
STRAIGHT_SHARE, STRAIGHT_PX = 0.7, 3.0  # a line searched at a photo's tilt: this share of its edge
# lies within this many pixels of a straight line

# Each side seen as the top rows of a view of the crop (views: writing through one writes the crop).
SIDES: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "top": lambda a: a,
    "bottom": lambda a: a[::-1],
    "left": lambda a: a.T,
    "right": lambda a: a.T[::-1],
}


def guides_removed(ink: np.ndarray, level: float) -> np.ndarray:
    """White-on-black crop of one digit -> the same without a box's sides or an underline (set to 0).
    ``level``: what counts as ink. Returns ``ink`` itself when it shows no guides, or when what they
    would leave is a flat bar: a display's 8 or 3 is a box round a bar, and no digit is that flat."""
    out = _guides_removed(ink, ink > level, level)
    return ink if out is not ink and _a_bar(out > level) else out


def _guides_removed(
    ink: np.ndarray, on: np.ndarray, level: float, tilt: float = MAX_TILT_DEG, faint_lines: bool = False
) -> np.ndarray:
    """``guides_removed`` with the ink's mask (``on``) already made, lines searched within ``tilt``
    degrees of level; ``faint_lines``: the lines ``on`` lacks are searched on the faint ink too, once it
    shows one (a picture reduced for reading spreads a thin printed line's ink over two rows, under the
    level; on one digit's crop a line found on the faint ink alone is a shape's soft edge)."""
    if min(on.shape) < MIN_SIDE:
        return ink
    turned, across = tilt > MAX_TILT_DEG, ("top", "bottom")

    def search(mask: np.ndarray, sides: list[str], alone: bool = False) -> dict[str, np.ndarray]:
        return {side: line for side in sides if (line := _edge_line(mask, side, tilt, alone)) is not None}

    lines = search(on, list(across))
    if turned and not lines:  # a turned form is told by its lines across (see below)
        return ink
    lines |= search(on, ["left", "right"])
    if not lines:
        return ink
    faint = ink > level / FAINT
    if faint_lines:  # beside a line on the ink, the form's others may be faint (a grid: all faint)
        lines |= search(faint, [side for side in SIDES if side not in lines], alone=True)
    rest = on.copy()
    for mask in lines.values():
        rest &= ~mask
    # A row of boxes: the sides between them run from the top line to the bottom one.
    walls = _walls(faint, lines, rest, tilt) if {"top", "bottom"} <= lines.keys() else None
    if walls is not None:
        rest &= ~walls
    if rest.sum() < MIN_REST * on.sum():
        return ink
    ends = {side: _ends(rest, lines[side], side) for side in lines}
    frame = {
        side
        for side, e in ends.items()
        if (e.overhang >= FRAME_OVERHANG and _apart_or_inside(e)) or e.reach >= NUMBER_REACH
    }
    if turned and not frame & set(across):
        frame = set()  # slanted lines down both sides alone are as likely a 1 and a 4's stem
    elif not lines.keys() & set(across) and any(ends[side].overhang < SIDES_ALONE_OVERHANG for side in frame):
        frame = set()  # upright ones barely past the writing are as likely digits: the 1s of "111"
    if {"top", "bottom"} <= frame or {"left", "right"} <= frame or len(frame) >= 3:
        guides = [lines[side] for side in frame]
        if walls is not None:  # a row of boxes: every side between, and its lines the writing touches
            guides += [walls] + [lines[side] for side in lines.keys() - frame]
        elif {"top", "bottom"} <= frame:  # a box: the sides the writing keeps off, however tall it is
            guides += [
                lines[side] for side in ("left", "right") if side in lines and ends[side].contact is None
            ]
    elif "bottom" in ends and _underline(ends["bottom"]):
        guides = [lines["bottom"], ends["bottom"].ticks]
    else:
        return ink
    out = ink.copy()
    for mask in guides:
        out[mask] = 0.0
    return out


def _a_bar(left: np.ndarray) -> bool:
    """What is left is a flat bar, far wider than tall (no one digit is: a display's middle bar)."""
    rows, cols = np.flatnonzero(left.any(axis=1)), np.flatnonzero(left.any(axis=0))
    return rows.size > 0 and cols[-1] - cols[0] + 1 > FLAT_REST * (rows[-1] - rows[0] + 1)


def page_guides_removed(ink: np.ndarray, level: float) -> np.ndarray:
    """``guides_removed`` on the box around a whole picture's ink (a number written in a row of boxes,
    on a comb field or over a line), the picture beyond it as it was; ``ink`` itself when unchanged."""
    on = ink > level
    rows, cols = np.flatnonzero(on.any(axis=1)), np.flatnonzero(on.any(axis=0))
    if rows.size == 0:
        return ink
    box = np.s_[rows[0] : rows[-1] + 1, cols[0] : cols[-1] + 1]
    crop = ink[box]
    clean = _guides_removed(crop, on[box], level, faint_lines=True)  # the picture is reduced for reading
    if clean is crop:  # none within a scan's tilt: a form photographed by hand is turned further
        clean = _guides_removed(crop, on[box], level, RULING_TILT_DEG, faint_lines=True)
    if clean is crop:
        return ink
    out = ink.copy()
    out[box] = clean
    return out


def _edge_line(on: np.ndarray, side: str, tilt: float, alone: bool = False) -> np.ndarray | None:
    """The pixels of a straight line along one side of the crop, spanning it end to end (within ``tilt``
    degrees of the side); None if none. ``alone``: None too where MIN_RULINGS such lines run side by
    side (a squared page's faint grid, not a form's)."""
    view = SIDES[side](on)
    h, w = view.shape
    thick = max(3, int(MAX_THICK * max(h, w))) + 2  # +2: a row of each side is counted in (cover)
    drift = int(math.ceil(math.tan(math.radians(tilt)) * w)) + 1
    band = view[: min(h, 2 * drift + thick)]
    # Cheap to rule out first: a guide puts ink in every column of the band, and the ink's outer edge
    # (nothing lies beyond the guide) is straight: within the tilt's drift but in the guide's gaps.
    inked = band.any(axis=0)
    if inked.mean() < EDGE_COVER:
        return None
    first_ink = band[:, inked].argmax(axis=0)
    edge = np.sort(first_ink)
    if edge[int(EDGE_COVER * edge.size) - 1] - edge[0] > drift + 2:
        return None
    if tilt > MAX_TILT_DEG and not _straight(np.flatnonzero(inked), first_ink):
        return None  # the wide drift lets the tops of digits through: a turned line's edge is straight
    shift, cover, reach = straightest_rows(band, tilt)
    starts, lasts = runs(cover >= EDGE_COVER)
    if starts.size == 0 or (alone and starts.size >= MIN_RULINGS):
        return None
    first, last = int(starts[0]) - reach, int(lasts[0]) - reach  # the run nearest the edge
    if last - first + 1 > thick:  # a bar as thick as a stroke run along, not a printed line
        return None
    ys, xs = np.nonzero(band)
    sheared = ys - shift[xs]
    if (sheared < first - 1).sum() > OUTSIDE * on.sum():  # ink beyond it: not the crop's border
        return None
    mask = np.zeros_like(on)
    mark_rows(SIDES[side](mask), shift, first - 1, last + 1)
    return mask & on


def _straight(cols: np.ndarray, rows: np.ndarray) -> bool:
    """Whether most of the points (a line's edge: its first row in each column) lie on one straight
    line, within a pixel or two. Fitted twice, the second time to the points nearest the first fit
    (a box's side, first ink far down its columns, pulls a least-squares line off the box's top)."""
    slope, at = np.polyfit(cols, rows, 1)
    off = np.abs(rows - (slope * cols + at))
    near = off <= np.quantile(off, STRAIGHT_SHARE)
    slope, at = np.polyfit(cols[near], rows[near], 1)
    return float(np.quantile(np.abs(rows - (slope * cols + at)), STRAIGHT_SHARE)) <= STRAIGHT_PX


def _walls(
    faint: np.ndarray, lines: dict[str, np.ndarray], rest: np.ndarray, tilt: float
) -> np.ndarray | None:
    """The sides between a row of boxes: thin straight lines across the crop from its top line to its
    bottom one, on one pitch (``_on_a_pitch``), which writing in a box never is. Traced on the faint
    ink too (``faint``: a picture reduced for reading leaves a printed side a fraction of a pixel
    wide). None if there are none, or if they are nearly all the ink (a 1 in a box, touching both
    lines)."""
    upper, depth = _band_between(lines["top"], lines["bottom"])
    if depth < MIN_SIDE // 4:
        return None
    cols = np.broadcast_to(np.arange(faint.shape[1]), (depth, faint.shape[1]))
    rows = upper[None, :] + np.arange(depth)[:, None]  # the band between the lines, made level
    between = faint[rows, cols]
    for side in ("left", "right"):
        if side in lines:
            between &= ~lines[side][rows, cols]
    view = between.T
    h, w = view.shape
    shift, cover, reach = straightest_rows(view, tilt)
    line = int(np.median(lines["top"].sum(axis=0)[lines["top"].any(axis=0)]))  # its thickness
    found = []
    for first, last in zip(*runs(cover >= WALL_COVER), strict=True):
        if last - first + 1 > line + 3:  # thicker than the box's own lines (a row each side, +1): writing
            continue
        along = np.clip(np.arange(first - 1, last + 2)[:, None] - reach + shift, 0, h - 1)  # its pixels
        ys = np.flatnonzero(view[along, np.arange(w)].any(axis=0))
        if ys.size == 0 or ys[0] > 1 or ys[-1] < w - 2:  # it meets both lines
            continue
        found.append((first - reach, last - reach))
    ends = [float(np.nonzero(lines[side])[1].mean()) for side in ("left", "right") if side in lines]
    band = np.zeros_like(between)
    for first, last in _on_a_pitch(found, ends, depth):
        mark_rows(band.T, shift, first - 1, last + 1)
    mask = np.zeros_like(faint)
    mask[rows[band], cols[band]] = True
    mask &= faint
    return mask if mask.any() and (rest & ~mask).sum() >= MIN_REST * rest.sum() else None


def _band_between(top: np.ndarray, bottom: np.ndarray) -> tuple[np.ndarray, int]:
    """Per column, the first row below the top line, and the fewest rows from there to the bottom
    line in any column. Each line is fitted straight and the band kept clear of nearly all its
    pixels: a turned form's lines cross rows, and its sides run on to them in every column."""
    h, w = top.shape
    cols = np.arange(w)

    def edge(mask: np.ndarray, inner: np.ndarray, clear: float) -> np.ndarray:
        has = np.flatnonzero(mask.any(axis=0))
        slope, at = np.polyfit(has, inner[has], 1)
        return slope * cols + at + np.quantile(inner[has] - (slope * has + at), clear)

    last_row = h - 1 - np.argmax(top[::-1], axis=0)
    upper = np.clip(np.floor(edge(top, last_row, BAND_CLEAR)).astype(np.intp) + 1, 0, h - 1)
    lower = np.ceil(edge(bottom, np.argmax(bottom, axis=0), 1 - BAND_CLEAR)).astype(np.intp)
    return upper, int((np.clip(lower, upper, h) - upper).min())


def _on_a_pitch(found: list[tuple[int, int]], ends: list[float], height: int) -> list[tuple[int, int]]:
    """The lines from top to bottom (first, last column each) that divide a row of boxes evenly: a
    digit's stem can stand from line to line as a side does, but off the pitch. With both of the row's
    ends (``ends``: the columns of its left and right sides) the pitch divides the row between them;
    with one or none it runs through two of the lines, NEAR apart or fewer. The pitch kept has the most
    places with a line less those without (half the pitch fits more stems, and misses half its places),
    and is at least MIN_PITCH of the boxes' ``height``. Two lines, or one beside one end, are kept as
    found."""
    centres = np.array([(a + b) / 2 for a, b in found])
    fewest = MIN_PITCH * height
    if len(ends) == 2:  # n boxes: n - 1 places between the ends
        left, right = ends
        grids = [(left, (right - left) / n, n - 1) for n in range(2, int((right - left) / fewest) + 1)]
    elif len(found) + len(ends) >= 3:  # places from the first line on the grid to the last
        points = np.sort(np.concatenate([centres, ends]))
        grids = [  # as many places between two lines as twice the lines between them, at most
            (points[i], (points[j] - points[i]) / k, None)
            for i in range(points.size)
            for j in range(i + 1, min(points.size, i + NEAR + 1))
            for k in range(1, min(int((points[j] - points[i]) / fewest), 2 * (j - i)) + 1)
        ]
    else:
        return found
    best, keep = 0, np.zeros(len(found), bool)
    for origin, pitch, places in grids:
        steps = (centres - origin) / pitch
        on = np.abs(steps - np.round(steps)) * pitch <= max(PITCH_PX, PITCH_SHARE * pitch)
        if places is not None:
            on &= (np.round(steps) >= 1) & (np.round(steps) <= places)
        taken = np.unique(np.round(steps[on]))
        if places is None:
            places = int(taken.max() - taken.min() + 1) if taken.size else 0
        score = 2 * taken.size - places
        if score > best:
            best, keep = score, on
    return [f for f, k in zip(found, keep, strict=True) if k]


class Ends(NamedTuple):
    """How a line lies against the writing (the crop's ink off the lines)."""

    overhang: float  # how far it runs past the writing at its nearer end, a share of its length
    ticks: np.ndarray  # a comb field's ticks standing on it: short, apart from the writing; not writing
    comb: bool  # a tick on each end, the writing between them
    contact: float | None  # where the writing touches it, the nearer end's distance (share); None: apart
    reach: float  # a line across: its length over the writing's height (0 for a side's)


def _ends(rest: np.ndarray, line: np.ndarray, side: str) -> Ends:
    """How the line on ``side`` lies against the writing, ``rest``."""
    view, along_line = SIDES[side](rest), SIDES[side](line)
    h, w = view.shape
    cols = np.flatnonzero(along_line.any(axis=0))
    start, end = int(cols[0]), int(cols[-1])
    length = end - start + 1
    thick = int(along_line.sum(axis=0).max())
    ticks, at_ends = np.zeros_like(rest), set()
    inner = np.where(
        along_line.any(axis=0), h - 1 - np.argmax(along_line[::-1], axis=0), h
    )  # line's last row
    standing = np.zeros(w, bool)  # columns with ink just inside the line
    standing[cols] = view[np.minimum(inner[cols] + 1, h - 1), cols] & (inner[cols] + 1 < h)
    for a, b in zip(*runs(standing), strict=True):
        if b - a + 1 > thick + 1:
            continue
        zone, base = slice(a, b + 1), int(inner[a : b + 1].max()) + 1
        top = base + _stem(view[base:, zone])
        beside = view[base:top, max(0, a - 2) : a].any() or view[base:top, b + 1 : b + 3].any()
        if thick <= top - base <= MAX_TICK * h and not beside:  # short, paper on both sides
            SIDES[side](ticks)[:top, zone] = view[:top, zone]
            at_ends |= {"start"} if a <= start + thick else {"end"} if b >= end - thick else set()
    writing = view & ~SIDES[side](ticks)
    if not writing.any():  # the "ticks" were the writing
        return Ends(0.0, ticks, False, 0.0, 0.0)
    along = writing.sum(axis=0).astype(np.float64)
    cum = np.cumsum(along) / along.sum()
    first, last = int(np.searchsorted(cum, 0.01)), int(np.searchsorted(cum, 0.99))  # specks aside
    touch = np.flatnonzero((writing[1:] & along_line[:-1]).any(axis=0))
    contact = min(touch[0] - start, end - touch[-1]) / length if touch.size else None
    overhang = min(first - start, end - last) / length
    if side not in ("top", "bottom"):  # a number's rule runs under or over it, never down its side
        return Ends(overhang, ticks, len(at_ends) == 2, contact, 0.0)
    rows = np.flatnonzero(writing.any(axis=1))
    return Ends(overhang, ticks, len(at_ends) == 2, contact, length / (rows[-1] - rows[0] + 1))


def _stem(zone: np.ndarray) -> int:
    """How many rows from the first on hold ink without a break."""
    inked = zone.any(axis=1)
    return int(inked.size if inked.all() else inked.argmin())


def _underline(e: Ends) -> bool:
    """A comb field's line, a line apart from the writing, or a long one stood on well inside and run
    on past the writing at both ends (a 2's base begins where its diagonal meets it)."""
    stood_on = e.contact is not None and e.contact >= TOUCH_OVERHANG and e.overhang >= UNDER_OVERHANG
    return e.comb or e.contact is None or (e.reach > 1.0 and (_apart_or_inside(e) or stood_on))


def _apart_or_inside(e: Ends) -> bool:
    """Whether the writing keeps off a line, touches it well inside and lies well within its ends, or
    the line runs under a whole number (no digit's stroke is that long)."""
    return e.contact is None or min(e.contact, e.overhang) >= TOUCH_OVERHANG or e.reach >= NUMBER_REACH
