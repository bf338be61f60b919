"""A drawing app's canvas in a screenshot: the flat rectangle the writing was drawn on, and round it the
app (a phone's bars, toolbar, slider and palette; a desktop window's menus, tools and the gray
workspace round the sheet; a browser round a web page's canvas) painted over with the canvas's level.
The first look of ``sheet.surface_removed``, so ``/predict`` and ``/read`` alike.

A screen paints its canvas in one flat colour, edge to edge, with straight sides that step to another
colour. Paper does neither: a photographed sheet is shaded and seldom square to the frame, and lines on
a page (a ruling, a form's box) are thin, with the same paper beyond them. So a canvas is the largest
region of one of the picture's few flat levels (on a finer copy, any region: ``screen_pad``), mostly
blank, filling its bounding box to the edges,
holding writing clear of them, and stepping at each side inside the picture to a band of another level
at least FURNITURE thick. Without it, a dark theme's white canvas read as ink on a dark paper, and a
window's gray workspace framed the digit as a box would.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import numpy as np

from .components import Runs, component_boxes, label_components
from .imageops import frame

TOLERANCE = 4  # of 255: a screen's flat colour varies by no more (JPEG's noise on the reduced picture)
MIN_CANVAS = 0.04  # the canvas covers at least this share of the picture (a web page's canvas: 5-10%)
MIN_SIDE = 8  # px: a canvas is at least this wide and tall (a strip a pixel wide has no second row)
# Of each side of the canvas this share lies at its level, and never two pixels side by side off it (no
# writing crosses it), its ends aside (CORNER of its length: rounded corners).
EDGE_FLAT, CORNER = 0.98, 0.05
FURNITURE = 0.02  # of the picture's longer side (3 px at least): the band beyond each side inside it ...
OFF_LEVEL = 0.7  # ... of which this share at least is not at the canvas's level (a ruling is a line)
MIN_WRITING = 0.002  # the canvas holds writing: this share of it off its level at least ...
BLANK = 0.6  # ... and is mostly blank: this share at its level (a box's outline is a ring round paper)
FILL = 0.8  # of the pixels within TOLERANCE of a screen's fill lie within one level of it (JPEG'd: 0.94-1)
MAX_LEVELS = 4  # the most common flat levels tried
Box = tuple[int, int, int, int]  # r0, r1, c0, c1
T = TypeVar("T")
APART = 0.25  # of the pixels at the rarer of two close fills, fewer than this touch the other's
ASIDE_ASPECT = 2.5  # a canvas off the picture's middle is at most this many times as long as wide


def canvas_only(gray: np.ndarray) -> np.ndarray:
    """``gray`` (0..1, the working copy) with all but a drawing app's canvas painted over with the
    canvas's level; ``gray`` itself when it shows no canvas with something round it."""
    if min(gray.shape) < 64:
        return gray
    found = canvas_box(np.round(gray * 255).astype(np.int16))  # 0..255: a screen's levels, counted once
    if found is None:
        return gray
    (r0, r1, c0, c1), level = found
    out = np.full_like(gray, level / 255)
    out[r0:r1, c0:c1] = gray[r0:r1, c0:c1]
    return out


def canvas_box(
    grey: np.ndarray, least: float = MIN_CANVAS, every: bool = False, aside: float = ASIDE_ASPECT
) -> tuple[Box, int] | None:
    """The box of a drawing app's canvas in ``grey`` (0..255) and its level, the canvas covering
    ``least`` of the picture at least; None when it shows no canvas with something round it. The canvas
    is the largest region of its level, or with ``every`` any region (a small canvas beside a larger
    field of its colour, as a browser's white address field); off the picture's middle, at most
    ``aside`` times as long as wide."""
    edge = grey[frame(grey.shape)]
    found: list[tuple[Box, int]] = []
    levels = flat_levels(grey, least)
    for level in levels:
        if at_level(edge, level, levels).mean() >= 0.9:  # the paper runs to the frame all round
            continue
        found += [(box, level) for box in _flat_rectangles(at_level(grey, level, levels), least, every)]
    # A window's workspace (a web page) is a flat rectangle too, the canvas the "writing" on it: the
    # canvas is one with none inside it, over the picture's middle or else no strip (a bar along the top
    # and a phone's palette in a flat strip of its own are neither), and of those the one most like one
    # drawing (a web page's pad beside the card of the answer).
    h, w = grey.shape
    middle = (h // 2, h // 2 + 1, w // 2, w // 2 + 1)
    inner = [(b, v) for b, v in innermost(found) if within(middle, b) or _aspect(b) <= aside]
    if not inner:
        return None
    return most_like_a_drawing(inner, lambda v: at_level(grey, v, levels))


def innermost(found: list[tuple[Box, T]]) -> list[tuple[Box, T]]:
    """The boxes found (each with what it was found at) that hold no other inside them."""
    return [(b, v) for b, v in found if not any(o != b and within(o, b) for o, _ in found)]


def most_like_a_drawing(found: list[tuple[Box, T]], mask: Callable[[T], np.ndarray]) -> tuple[Box, T]:
    """Of the boxes found, the one most like one drawing (``drawing_like``, on the pixels at its level,
    ``mask`` of what it was found at); the only one without counting its marks."""
    return found[0] if len(found) == 1 else max(found, key=lambda f: drawing_like(f[0], mask(f[1])))


def drawing_like(box: Box, at: np.ndarray) -> float:
    """How much the canvas or pad ``box`` (of ``at``, the pixels at its level) holds one drawing: its
    tallest mark's height over the number of its marks. A drawing is one to a few marks, digits taller
    than wide; a card holds many, each lower (a heading's letters, probability bars as wide as the card,
    a printed answer)."""
    r0, r1, c0, c1 = box
    labels, n = label_components(~at[r0:r1, c0:c1])
    if n == 0:
        return 0.0
    boxes = component_boxes(labels, n)[0]
    return float((boxes[:, 3] - boxes[:, 1]).max()) / n


def sides_clear(inside: np.ndarray) -> bool:
    """Whether a region (``inside``: its bounding box, True at its level) fills the box to its edges: each
    side's second row or column lies at the level over EDGE_FLAT of it, never two pixels side by side off
    it (a stroke crosses it: no canvas's edge), its ends (CORNER of it) aside. The second: the first may be
    a blend with what lies beyond it (the picture was reduced), and there a slider's knob or a swatch's
    edge is no stroke across it."""
    for side in second_rows(inside):
        off = ~side
        if side.mean() < EDGE_FLAT or (off[1:] & off[:-1]).any():
            return False
    return True


def second_rows(inside: np.ndarray) -> tuple[np.ndarray, ...]:
    """A box's second row from the top and the bottom and second column from the left and the right,
    their ends (CORNER of each) left out: rounded corners."""
    dy, dx = corners(inside.shape[0], inside.shape[1])
    return inside[1, dx:-dx], inside[-2, dx:-dx], inside[dy:-dy, 1], inside[dy:-dy, -2]


def corners(height: int, width: int) -> tuple[int, int]:
    """How many rows and columns at each end of a box's sides its rounded corners take (CORNER of them)."""
    return max(1, round(CORNER * height)), max(1, round(CORNER * width))


def _aspect(box: Box) -> float:
    """How many times as long as wide the box (r0, r1, c0, c1) is."""
    h, w = box[1] - box[0], box[3] - box[2]
    return max(h, w) / min(h, w)


def within(inner: Box, outer: Box) -> bool:
    """Whether the box ``inner`` (r0, r1, c0, c1) lies within ``outer``."""
    return outer[0] <= inner[0] and inner[1] <= outer[1] and outer[2] <= inner[2] and inner[3] <= outer[3]


def flat_levels(grey: np.ndarray, least: float = MIN_CANVAS) -> list[int]:
    """Up to MAX_LEVELS levels (0..255) that ``least`` of the picture lies within TOLERANCE of, most
    common first, each a fill: FILL of those pixels within one level of it (a photo's paper, shaded or
    grainy, spreads evenly over the band: a third in the middle three levels). Two flat colours closer
    than that (a light gray canvas beside a sidebar 4 levels lighter) each spoil the other's count: they
    are two levels when each passes it with the other's band left out (``_close_pair``)."""
    counts = np.bincount(grey.ravel(), minlength=256)
    near = np.convolve(counts, np.ones(2 * TOLERANCE + 1, np.int64), mode="same")  # within TOLERANCE of each
    peak = np.convolve(counts, np.ones(3, np.int64), mode="same")  # within one level of each
    levels: list[int] = []
    for p in np.argsort(-counts, kind="stable"):  # the modes: one level per flat colour, however close
        if near[p] < least * grey.size or len(levels) == MAX_LEVELS:
            break
        alone = peak[p] >= FILL * near[p] and all(abs(int(p) - q) > TOLERANCE for q in levels)
        if alone or _close_pair(grey, counts, near, peak, int(p), levels, least):
            levels.append(int(p))
    return levels


def _close_pair(
    grey: np.ndarray,
    counts: np.ndarray,
    near: np.ndarray,
    peak: np.ndarray,
    p: int,
    levels: list[int],
    least: float,
) -> bool:
    """Whether ``p`` is a flat colour beside a close one: a mode, holding ``least`` of the picture and
    FILL of its band once the band of its closest strong neighbour (2 to TOLERANCE + 1 levels away, a
    mode and a fill by the same count) is left out, each in regions of its own (``_apart``); and no level
    found lies next to it."""
    if any(abs(p - q) <= 1 for q in levels) or not _mode(counts, p):
        return False
    ring = [q for q in range(p - TOLERANCE - 1, p + TOLERANCE + 2) if 2 <= abs(q - p) and 0 <= q < 256]
    q = max(ring, key=lambda v: counts[v])
    if not _mode(counts, q) or peak[q] < FILL * _own(counts, near, q, p):
        return False
    own = _own(counts, near, p, q)
    return own >= least * grey.size and peak[p] >= FILL * own and _apart(grey, p, q)


def _apart(grey: np.ndarray, p: int, q: int) -> bool:
    """Whether the pixels at levels ``p`` and ``q`` (within one level of one, not of both) lie in regions
    of their own: under APART of the fewer touch one of the other's (a screen's two fills meet along a
    side at most; a dither's or a halftone's levels lie side by side, pixel by pixel)."""
    a = (np.abs(grey - p) <= 1) & (np.abs(grey - q) > 1)
    b = (np.abs(grey - q) <= 1) & (np.abs(grey - p) > 1)
    touching = (
        (a[:, :-1] & b[:, 1:]).sum()
        + (b[:, :-1] & a[:, 1:]).sum()
        + (a[:-1] & b[1:]).sum()
        + (b[:-1] & a[1:]).sum()
    )
    return bool(touching < APART * min(a.sum(), b.sum()))


def _own(counts: np.ndarray, near: np.ndarray, p: int, q: int) -> int:
    """The pixels within TOLERANCE of level ``p`` but for those within one level of ``q`` and not of
    ``p`` (two levels apart, the level between is both's)."""
    band = set(range(q - 1, q + 2)) - set(range(p - 1, p + 2))
    return int(near[p] - sum(int(counts[v]) for v in band if abs(v - p) <= TOLERANCE and 0 <= v < 256))


def _mode(counts: np.ndarray, p: int) -> bool:
    """Whether level ``p`` is as common as each level beside it."""
    return counts[p] >= counts[max(0, p - 1)] and counts[p] >= counts[min(255, p + 1)]


def at_level(grey: np.ndarray, level: int, levels: list[int]) -> np.ndarray:
    """The pixels of ``grey`` (0..255) at the flat ``level``: within TOLERANCE of it and, beside another
    of ``levels`` closer than that, nearer to it than to the other."""
    off = np.abs(grey - level)
    at = off <= TOLERANCE
    for other in levels:
        if other != level and abs(other - level) <= TOLERANCE:
            at &= off <= np.abs(grey - other)
    return at


def _flat_rectangles(at: np.ndarray, least: float, every: bool) -> list[Box]:
    """Rows r0:r1 and columns c0:c1 of the largest region of ``at`` (the pixels at one flat level), or
    with ``every`` of each region, that is a canvas as ``canvas_only`` describes, covering ``least`` of
    the picture at least. (Every region on the working copy: a loop of a digit closed by a ruling can
    pass for one.)"""
    runs = Runs.of(at)
    sizes = runs.sizes()
    h, w = at.shape
    band = max(3, round(FURNITURE * max(h, w)))
    found = []
    tried = np.flatnonzero(sizes >= least * BLANK * at.size) if every else np.argmax(sizes)[None]
    for k in tried[sizes[tried] > 0]:  # mostly blank: this many at its level
        (r0, r1, c0, c1), inside = runs.region(int(k))
        small = (r1 - r0) * (c1 - c0) < least * at.size or min(r1 - r0, c1 - c0) < MIN_SIDE
        if small or (r0, r1, c0, c1) == (0, h, 0, w):
            continue
        if not sides_clear(inside) or not MIN_WRITING <= 1.0 - inside.mean() <= 1.0 - BLANK:
            continue
        beyond = [
            at[max(0, r0 - band) : r0, c0:c1],
            at[r1 : r1 + band, c0:c1],
            at[r0:r1, max(0, c0 - band) : c0],
            at[r0:r1, c1 : c1 + band],
        ]
        if not any(b.size and b.mean() > 1.0 - OFF_LEVEL for b in beyond):
            found.append((r0, r1, c0, c1))
    return found
