"""A form's box, a comb field or the line a digit is written on, taken out of the writing's crop.

A digit written in a form's box, in a comb field's cell or on an answer line, or underlined, comes with
printed or drawn lines that stretch its crop: left in, a 1 in a box is read as a 0 and an underlined 7 as
a 2. A guide is told from a stroke by where it lies and how far it runs: it is straight, lies along the
very edge of the ink, spans the crop from end to end and runs past the writing at both ends. Only
arrangements no digit has are taken out: a line under the writing, lines on two opposite sides, or on
three sides. A line over the writing alone could be a 7's or a 5's bar, a line beside it a 1 or a 4's
stem, and a line whose ends the writing reaches could be a 2's base: those stay, unless the line runs
under a whole number (``NUMBER_REACH`` times as long as the writing is tall: no digit's stroke is).
With a box's top and bottom lines go the sides between a row of boxes (straight, as thin as the box's
lines, meeting both) and a comb field's ticks (short, standing on its line, paper on both sides).
Evenly spaced rulings across a whole page are ``model_store.rulings``'s; this works on the crop of the
writing: one digit's in ``preprocess``, a whole number's in ``segment``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from .rulings import MAX_TILT_DEG, NUMBER_REACH, RULING_TILT_DEG, mark_rows, runs, straightest_rows

EDGE_COVER = 0.9  # a guide has ink along at least this share of the crop's side
MAX_THICK = 0.12  # and is at most this share of the crop's longer side thick (a marker's frame)
FRAME_OVERHANG = 0.03  # a box's sides run past the writing by this share (the writing is inside)
TOUCH_OVERHANG = 0.2  # a guide the writing touches: by this share, and touched this far from its ends
# (a 2's base and a Z-like 2's top are joined at their ends); an underline is also longer than the
# writing is tall (a 1's foot is short)
MAX_TICK = 0.5  # a comb field's ticks at a line's ends are at most this share of the crop tall
MIN_REST = 0.1  # the writing holds at least this share of the ink (an empty box is a picture)
OUTSIDE = 0.02  # at most this share of the ink lies beyond a guide (it is the crop's border)
MIN_SIDE = 24  # smaller crops are taken as they are
WALL_COVER = 0.9  # a side between boxes has ink along this share of the rows between their lines
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
    ``level``: what counts as ink. Returns ``ink`` itself when it shows no guides."""
    return _guides_removed(ink, ink > level, level)


def _guides_removed(ink: np.ndarray, on: np.ndarray, level: float, tilt: float = MAX_TILT_DEG) -> np.ndarray:
    """``guides_removed`` with the ink's mask (``on``) already made, lines searched within ``tilt``
    degrees of level."""
    if min(on.shape) < MIN_SIDE:
        return ink
    turned, across = tilt > MAX_TILT_DEG, ("top", "bottom")
    lines = {side: mask for side in across if (mask := _edge_line(on, side, tilt)) is not None}
    if turned and not lines:  # a turned form is told by its lines across (see below)
        return ink
    lines |= {side: mask for side in ("left", "right") if (mask := _edge_line(on, side, tilt)) is not None}
    if not lines:
        return ink
    rest = on.copy()
    for mask in lines.values():
        rest &= ~mask
    # A row of boxes: the sides between them run from the top line to the bottom one.
    walls = _walls(ink > level / 3, lines, rest, tilt) if {"top", "bottom"} <= lines.keys() else None
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
    if {"top", "bottom"} <= frame or {"left", "right"} <= frame or len(frame) >= 3:
        guides = [lines[side] for side in frame]
        if walls is not None and {"top", "bottom"} <= frame:  # a row of boxes: every side between
            guides += [walls] + [lines[side] for side in ("left", "right") if side in lines]
    elif "bottom" in ends and _underline(ends["bottom"]):
        guides = [lines["bottom"], ends["bottom"].ticks]
    else:
        return ink
    out = ink.copy()
    for mask in guides:
        out[mask] = 0.0
    return out


def page_guides_removed(ink: np.ndarray, level: float) -> np.ndarray:
    """``guides_removed`` on the box around a whole picture's ink (a number written in a row of boxes,
    on a comb field or over a line), the picture beyond it as it was; ``ink`` itself when unchanged."""
    on = ink > level
    rows, cols = np.flatnonzero(on.any(axis=1)), np.flatnonzero(on.any(axis=0))
    if rows.size == 0:
        return ink
    box = np.s_[rows[0] : rows[-1] + 1, cols[0] : cols[-1] + 1]
    crop = ink[box]
    clean = _guides_removed(crop, on[box], level)
    if clean is crop:  # none within a scan's tilt: a form photographed by hand is turned further
        clean = _guides_removed(crop, on[box], level, RULING_TILT_DEG)
    if clean is crop:
        return ink
    out = ink.copy()
    out[box] = clean
    return out


def _edge_line(on: np.ndarray, side: str, tilt: float) -> np.ndarray | None:
    """The pixels of a straight line along one side of the crop, spanning it end to end (within ``tilt``
    degrees of the side); None if none."""
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
    if starts.size == 0:
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
    line, within a pixel or two."""
    slope, at = np.polyfit(cols, rows, 1)
    return float(np.quantile(np.abs(rows - (slope * cols + at)), STRAIGHT_SHARE)) <= STRAIGHT_PX


def _walls(
    faint: np.ndarray, lines: dict[str, np.ndarray], rest: np.ndarray, tilt: float
) -> np.ndarray | None:
    """The sides between a row of boxes: thin straight lines across the crop from its top line to its
    bottom one, which writing in a box never is. Traced on the faint ink too (``faint``: a picture
    reduced for reading leaves a printed side a fraction of a pixel wide). None if there are none, or
    if they are nearly all the ink (a 1 in a box, touching both lines)."""
    r0 = int(np.flatnonzero(lines["top"].any(axis=1))[-1]) + 1  # the rows between the two lines
    r1 = int(np.flatnonzero(lines["bottom"].any(axis=1))[0])
    if r1 - r0 < MIN_SIDE // 4:
        return None
    between = faint[r0:r1].copy()
    for side in ("left", "right"):
        if side in lines:
            between &= ~lines[side][r0:r1]
    view = between.T
    h, w = view.shape
    shift, cover, reach = straightest_rows(view, tilt)
    line = int(np.median(lines["top"].sum(axis=0)[lines["top"].any(axis=0)]))  # its thickness
    mask = np.zeros_like(faint)
    cols = np.arange(w)
    for first, last in zip(*runs(cover >= WALL_COVER), strict=True):
        if last - first + 1 > line + 2:  # thicker than the box's own lines: writing
            continue
        along = np.clip(np.arange(first, last + 1)[:, None] - reach + shift, 0, h - 1)  # its pixels
        ys = np.flatnonzero(view[along, cols].any(axis=0))
        if ys.size == 0 or ys[0] > 1 or ys[-1] < w - 2:  # it meets both lines
            continue
        mark_rows(mask[r0:r1].T, shift, first - reach - 1, last - reach + 1)
    mask &= faint
    return mask if mask.any() and (rest & ~mask).sum() >= MIN_REST * rest.sum() else None


class Ends(NamedTuple):
    """How a line lies against the writing (the crop's ink off the lines)."""

    overhang: float  # how far it runs past the writing at its nearer end, a share of its length
    ticks: np.ndarray  # a comb field's ticks standing on it: short, apart from the writing; not writing
    comb: bool  # a tick on each end, the writing between them
    contact: float | None  # where the writing touches it, the nearer end's distance (share); None: apart
    reach: float  # its length over the writing's height


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
    rows = np.flatnonzero(writing.any(axis=1))
    overhang = min(first - start, end - last) / length
    return Ends(overhang, ticks, len(at_ends) == 2, contact, length / (rows[-1] - rows[0] + 1))


def _stem(zone: np.ndarray) -> int:
    """How many rows from the first on hold ink without a break."""
    inked = zone.any(axis=1)
    return int(inked.size if inked.all() else inked.argmin())


def _underline(e: Ends) -> bool:
    """A comb field's line, a line apart from the writing, or a long one stood on well inside."""
    return e.comb or e.contact is None or (e.reach > 1.0 and _apart_or_inside(e))


def _apart_or_inside(e: Ends) -> bool:
    """Whether the writing keeps off a line, touches it well inside and lies well within its ends, or
    the line runs under a whole number (no digit's stroke is that long)."""
    return e.contact is None or min(e.contact, e.overhang) >= TOUCH_OVERHANG or e.reach >= NUMBER_REACH
