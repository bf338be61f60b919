"""A web page's drawing pad in a screenshot: a flat rectangle outlined by a thin line on a card (or a page)
of its own colour, and round it the page (a heading, buttons, the classifier's answer with its printed
digit and probability bars) painted over with the pad's level. Before ``sheet.surface_removed``, in
``/predict`` and ``/read`` alike.

``screen_canvas`` finds a canvas by the step to another colour at its sides, and leaves a thin line with
the same paper beyond it alone (a form's box, a ruling). A web pad is that line round that paper: a
classifier's demo draws its pad white on a white card, outlined in light gray, and the whole card, with
the buttons and the answer's digit, was read as the drawing. The outline is a pixel or two wide: in the
working copy (``decode.WORK_SIZE``), reduced five to ten times, it fades into the paper, so it is sought
on a finer copy of the picture, and only where the picture was reduced and the working copy shows a
screen's flat fill (a digit on a display, the loop of its 6 a thin outline round paper, is let go).

A pad is a region of one flat level that fills its bounding box to the edges but for a chip or a tab on
a corner, mostly blank, holding writing, covering MIN_PAD of the picture, and bounded at each side by a
line at most LINE thick with its own level beyond the line, where no writing crosses it, and turning at
its corners (a row of a form's boxes shares lines that run on). Of the pads found, one with none inside
it (a card outlined as its pad is), most like one drawing.

A web demo screenshotted whole on a large screen shows its pad or canvas at 1-5% of the picture: the
working copy holds too few of its pixels for ``screen_canvas`` to seek it there. On a screen (two flat
fills at least, one neither black nor white) the finer copy is searched down to SMALL of the picture, for
a pad and, where none is found, for a canvas (``screen_canvas.canvas_box``). A JPEG, decoded at a reduced
scale for the working copy, is decoded again for the finer copy (``decode.luminance``).
"""

from __future__ import annotations

import math

import numpy as np
from PIL import Image

from .components import Runs
from .decode import luminance
from .screen_canvas import (
    BLANK,
    MIN_WRITING,
    TOLERANCE,
    Box,
    at_level,
    canvas_box,
    corners,
    flat_levels,
    innermost,
    most_like_a_drawing,
    second_rows,
    within,
)

FINE_SIZE = 1024  # the outline is sought on a copy at most this many px a side (4K: a 1 px line at 1/4)
LINE = 3  # a pad's outline is at most this many px thick on that copy
MIN_PAD = 0.03  # the pad covers at least this share of the picture
LINE_REACH = 0.15  # each side of a pad is at least this share of the picture's shorter side long
# ... but on a screen (``_screen``: a page and a browser's bar or a taskbar; a scanned page has one flat
# fill, its paper, or black on white, and a form's box on it is no pad) a pad or a canvas is sought down
# to SMALL of the picture, each side SMALL_REACH of its shorter side: a web demo screenshotted whole.
SMALL, SMALL_REACH = 0.01, 0.1
# ... and such a canvas, off the picture's middle, may be this many times as long as wide: a number's is
# wide (our own page's number pad is 3:1); a bar or a strip of the page is longer still.
SMALL_ASPECT = 3.5
BEYOND = 0.9  # past its outline, this share of each side lies at the pad's level again (a card's paper)
RUN = 2 * LINE + 2  # px past a corner along which a form's line runs on
SIDE_FILL = 0.5  # the pad lies at its level along this share of each side, inside its outline


def pad_only(data: bytes, max_pixels: int, img: Image.Image, gray: np.ndarray) -> np.ndarray:
    """``gray`` (0..1, the working copy of ``img``, decoded from ``data``) with all but a web page's
    outlined pad painted over with the pad's level; ``gray`` itself when the picture shows no such pad."""
    grey = np.round(gray * 255).astype(np.int16)
    if max(img.size) <= max(gray.shape) or not flat_levels(grey):
        return gray  # not reduced (a screenshot is larger), or no screen's flat fill (a photo, a scan)
    fine = luminance(data, max_pixels, img, FINE_SIZE)
    if fine is None:
        return gray
    levels = flat_levels(fine, SMALL)
    screen = _screen(levels)
    least, reach = (SMALL, SMALL_REACH) if screen else (MIN_PAD, LINE_REACH)
    pads: list[tuple[Box, np.ndarray]] = []
    for level in levels if screen else flat_levels(fine):
        at = at_level(fine, level, levels)
        if _outline_like(at, reach):
            pads += [(box, at) for box in _pads(at, least, reach)]
    inner = innermost(pads)
    if inner:
        box = most_like_a_drawing(inner, lambda at: at)[0]
    elif screen and (canvas := _small_canvas(grey, fine)) is not None:
        box = canvas
    else:
        return gray
    r0, r1, c0, c1 = _in_working(box, fine.shape, gray.shape)
    if r1 - r0 < 8 or c1 - c0 < 8:
        return gray
    inside = gray[r0:r1, c0:c1]
    level = np.bincount(np.round(inside * 255).astype(np.int64).ravel(), minlength=256).argmax() / 255
    out = np.full_like(gray, level)
    out[r0:r1, c0:c1] = inside
    return out


def _screen(levels: list[int]) -> bool:
    """Whether a picture's flat fills (``levels``, each SMALL of it at least) are a screen's: two or more,
    one of them neither black nor white. A drawing's ink on its paper, a 1-bit scan's or a dither's, is
    as flat as a fill and black on white; a screen's bars, panels and cards come in other levels."""
    return len(levels) >= 2 and any(TOLERANCE < v < 255 - TOLERANCE for v in levels)


def _small_canvas(grey: np.ndarray, fine: np.ndarray) -> Box | None:
    """The box (on the finer copy ``fine``, 0..255) of a drawing app's canvas too small to be found on the
    working copy ``grey`` (under MIN_CANVAS of the picture, or its fill lost among the blends round it):
    where the canvas step finds none there, or finds the page or the workspace round it."""
    found = canvas_box(fine, SMALL, every=True, aside=SMALL_ASPECT)
    if found is None:
        return None
    box = found[0]
    work = canvas_box(grey)
    if work is None:
        return box
    inner = _in_working(box, fine.shape, grey.shape)
    return box if within(inner, work[0]) and 2 * _area(inner) <= _area(work[0]) else None


def _in_working(box: Box, fine: tuple[int, ...], work: tuple[int, ...]) -> Box:
    """``box`` of the finer copy (of shape ``fine``) in the working copy (``work``): the pixels wholly
    inside it (those across its edge are a blend)."""
    sy, sx = work[0] / fine[0], work[1] / fine[1]
    return math.ceil(box[0] * sy), math.floor(box[1] * sy), math.ceil(box[2] * sx), math.floor(box[3] * sx)


def _area(box: Box) -> int:
    return max(0, box[1] - box[0]) * max(0, box[3] - box[2])


def _outline_like(at: np.ndarray, reach: float) -> bool:
    """Whether the picture has the makings of an outline round a pad (checked before its regions are
    labelled): two rows and two columns each holding ``reach`` of the picture's shorter side of pixels
    off the level with the level again within LINE of them on both sides."""
    reach *= min(at.shape)
    for a in (at, at.T):
        before, after = np.zeros_like(a), np.zeros_like(a)
        for k in range(1, LINE + 1):
            before[k:] |= a[:-k]
            after[:-k] |= a[k:]
        if ((~a & before & after).sum(axis=1) >= reach).sum() < 2:
            return False
    return True


def _pads(at: np.ndarray, least: float, reach: float) -> list[Box]:
    """Rows r0:r1 and columns c0:c1 of each region of ``at`` (the pixels at one flat level) that is a pad
    as this module describes, covering ``least`` of the picture, each side ``reach`` of its shorter side."""
    # A region is taken as its pixels whose neighbours above and to the left lie at the level too: a
    # rounded corner's outline, one pixel stepping diagonally, then parts the pad from the card (the
    # regions are 8-connected).
    sealed = at.copy()
    sealed[1:] &= at[:-1]
    sealed[:, 1:] &= at[:, :-1]
    runs = Runs.of(sealed)
    h, w = at.shape
    sizes = runs.sizes()
    found = []
    for k in np.flatnonzero(sizes >= least * BLANK * at.size):
        (r0, r1, c0, c1), inside = runs.region(int(k))
        if (r1 - r0) * (c1 - c0) < least * at.size or min(r1 - r0, c1 - c0) < reach * min(h, w):
            continue
        if r0 < 2 * LINE + 3 or c0 < 2 * LINE + 3 or r1 > h - 2 * LINE - 3 or c1 > w - 2 * LINE - 3:
            continue  # an outline and the paper beyond it lie round a pad inside the page
        if inside.mean() < BLANK or not _holds_writing(inside):
            continue
        if _filled(inside) and _outlined(sealed, r0, r1, c0, c1) and not _runs_on(at, r0, r1, c0, c1):
            found.append((r0, r1, c0, c1))
    return found


def _holds_writing(inside: np.ndarray) -> bool:
    """Whether a region (``inside``: its bounding box, True at its level) holds writing clear of its
    corners (CORNER of each side): MIN_WRITING of that part off the level. An empty thumbnail's rounded
    corners are no writing."""
    dy, dx = corners(inside.shape[0], inside.shape[1])
    return bool(1.0 - inside[dy:-dy, dx:-dx].mean() >= MIN_WRITING)


def _filled(inside: np.ndarray) -> bool:
    """Whether a region (``inside``: its bounding box, True at its level) fills the box: each side's
    second row or column lies at the level over SIDE_FILL of it, its ends aside (CORNER). Less than a
    canvas's EDGE_FLAT: an app's label chip or a tab may sit on the pad's corner, inside its outline."""
    return all(side.mean() >= SIDE_FILL for side in second_rows(inside))


def _outlined(sealed: np.ndarray, r0: int, r1: int, c0: int, c1: int) -> bool:
    """Whether each side of the box is bounded by a line at most LINE thick, off the level along nearly
    all of the side, with the level again beyond it (rounded corners aside), where never two pixels side
    by side are off it (writing crossing the outline: a form's box written over, no pad). ``sealed``: the
    pixels at the level whose neighbours above and to the left are too, where a line is a pixel thicker."""
    dy, dx = corners(r1 - r0, c1 - c0)
    reach = range(1, 2 * LINE + 3)
    sides = (
        [sealed[r0 - k, c0 + dx : c1 - dx] for k in reach],
        [sealed[r1 - 1 + k, c0 + dx : c1 - dx] for k in reach],
        [sealed[r0 + dy : r1 - dy, c0 - k] for k in reach],
        [sealed[r0 + dy : r1 - dy, c1 - 1 + k] for k in reach],
    )
    for lines in sides:
        share = [float(s.mean()) for s in lines]  # at the level, going out from the pad
        if share[0] > 1 - BEYOND:
            return False  # no line along the side: the pad steps to nothing at its edge
        beyond = next((k for k, v in enumerate(share) if v >= BEYOND), None)
        if beyond is None or beyond > LINE + 1:
            return False  # no paper of the pad's level within LINE past it: a step to another colour
        off = ~lines[beyond]
        if (off[1:] & off[:-1]).any():
            return False
    return True


def _runs_on(at: np.ndarray, r0: int, r1: int, c0: int, c1: int) -> bool:
    """Whether a line of the outline runs on past a corner: beyond the side across it, for RUN px, a row
    (a column) of the line's band lies off the level. A row of a form's boxes shares its lines, which
    run on to the next box; a pad's outline turns at its corners, the card's paper beyond."""
    off = LINE + 2  # from the pad's edge to past its outline
    bands = (
        (slice(max(0, r0 - off), r0), slice(c1 + off, c1 + off + RUN), 1),  # the top line, to the right
        (slice(max(0, r0 - off), r0), slice(max(0, c0 - off - RUN), max(0, c0 - off)), 1),  # ... to the left
        (slice(r1, r1 + off), slice(c1 + off, c1 + off + RUN), 1),  # the bottom line
        (slice(r1, r1 + off), slice(max(0, c0 - off - RUN), max(0, c0 - off)), 1),
        (slice(r1 + off, r1 + off + RUN), slice(max(0, c0 - off), c0), 0),  # the left line, downwards
        (slice(max(0, r0 - off - RUN), max(0, r0 - off)), slice(max(0, c0 - off), c0), 0),  # ... upwards
        (slice(r1 + off, r1 + off + RUN), slice(c1, c1 + off), 0),  # the right line
        (slice(max(0, r0 - off - RUN), max(0, r0 - off)), slice(c1, c1 + off), 0),
    )
    for rows, cols, along in bands:
        band = ~at[rows, cols]
        if band.shape[along] < RUN or band.size == 0:
            continue  # the picture ends first
        if (band.mean(axis=along) >= BEYOND).any():
            return True
    return False
