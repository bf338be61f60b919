"""The surface a photographed sheet lies on (a desk round a note, a table along one side, an app's window
round its canvas): found on a coarse copy of the picture and painted over with the sheet's own level,
so that what is left is paper with writing on it. Part of ``preprocess``'s first steps, on the whole
picture (not on a digit's crop: the crops ``segment`` cuts are white ink on a black margin)."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .components import label_components
from .imageops import (
    coarse_copy,
    dilate3,
    erode3,
    frame,
    median,
    quantiles,
    reached,
    robust_fit,
    shifts,
    upsample,
)
from .screen_canvas import canvas_only

SHEET_CONTRAST = 0.2  # a photographed sheet is at least this much lighter than the surface it lies on
MIN_SHEET = 0.04  # a sheet smaller than the surface around it covers at least this share of the photo
EDGE_RUN = 0.15  # a table along a sheet runs unbroken along this share of the frame's edge at least
# A sheet on a light table (white paper on a pale desk) stands out less, down to this much, when its
# outline is a step: SHARP_STEP of the contrast within two coarse cells either side of it (light falling
# off across a page is a slope, a few hundredths over those cells).
FAINT_SHEET_CONTRAST, SHARP_STEP = 0.05, 0.6
LIGHTER_THAN_PAPER = 0.25  # a sheet with more of its cells much lighter than its level is not paper
WHOLE_SHEET = 0.9  # a surface all round the sheet (a desk, an app's window) runs along this much of the edge
# A board in view (chalk on a blackboard, a light wall round it) covers this share of the photo, is at most
# this light, and has writing this much lighter than it covering this share of it, BOARD_MARGIN pixels
# inside its outline.
BOARD_SHARE, BOARD_DARK, BOARD_CONTRAST, BOARD_INK, BOARD_MARGIN = 0.2, 0.5, 0.3, (0.002, 0.25), 4
BOARD_SOLID = 0.9  # of its convex hull, at least: a board is a quadrilateral, perhaps cut by the frame
QUADRILATERAL = 0.87  # of its smallest rectangle, at least, a quadrilateral's hull covers (round: 0.79)
BOARD_STROKE = 0.07  # its writing's strokes are narrower than twice this share of its shorter side
# A board nearly filling the frame, tilted, shows the wall only in slivers and corners: lighter than the
# board along this share of the frame's border at least, in runs along this share of its edge (EDGE_RUN's).
BOARD_BORDER, BOARD_EDGE_RUN = 0.1, 0.08
PEN_BEYOND = 0.25  # a stroke this much of which lies beyond the surface's core is writing on the sheet
# A house number's plate on a wall (a dark one seen inverted) has figures much darker than it covering
# this share of it, PLATE_MARGIN of its shorter side inside its outline (at most BOARD_MARGIN pixels:
# a small plate's figures come close to it); they are bold and large, and it holds little else. They
# are strokes: the largest is this many times as long as it is thick. The plate is a rectangle wholly in
# view: its hull covers this share of its smallest rectangle (a quadrilateral seen at a slant or cut by
# the frame, QUADRILATERAL).
PLATE_INK, PLATE_STROKE, PLATE_RECTANGLE, PLATE_MARGIN = (0.05, 0.4), 3.0, 0.93, 0.05
MIN_PLATE_SIDE = 8  # px: a plate of less than this squared, in the reduced picture, has no figures to read
# A plate's printed frame lies within this share of its shorter side of its outline (FRAME_WITHIN of
# each piece of it).
FRAME_BAND, FRAME_WITHIN = 0.15, 0.9

# What the searches find: the surface's coarse cells grown over the sheet's blurred edge, the surface
# itself (its core), the sheet's level and the surface's.
Found = tuple[np.ndarray, np.ndarray, float, float]


class SheetShape(NamedTuple):
    """What ``_small_sheet`` asks of a sheet's shape."""

    least: float  # the share of the photo it covers at least
    longest: float  # how many times as long as wide it may be
    solid: float  # how much of its convex hull it fills at least
    convex: bool  # taken as its convex hull (a plate's figures by its frame open bays at coarse cells)
    blank: float  # how much of it is as light as a sheet, at least (the rest is writing)


SHEET_SHAPE = SheetShape(MIN_SHEET, 2.5, 0.97, convex=False, blank=0.75)
# A plate is smaller and longer than a note (a house number far off, four figures side by side) and its
# bold figures cover more of it; its other checks are ``_plate_written_on``'s.
PLATE_SHAPE = SheetShape(0.01, 4.0, 0.9, convex=True, blank=0.6)


def surface_removed(gray: np.ndarray) -> np.ndarray:
    """A photo of a sheet of paper with the surface it lies on in view (a table along one side, around
    it, in the corners of a tilted sheet; or a note or card that fills less of the frame than the table
    around it): that surface painted over with the sheet's level. A dark board with a light wall round
    it (chalk on a blackboard) is that picture inverted: it comes back inverted, the wall painted over
    with the board's level, dark writing on a light board. A plate on a wall (a house number), dark with
    light figures on a lighter wall or light with dark figures on a darker one, comes back the same way:
    dark figures on the plate's level, its printed frame painted over too. Anything else (a scan, a
    canvas, a page filling the frame, light ink on a dark board filling it) is returned as it is. First, a
    screenshot of a drawing app: all but its flat canvas painted with its level (``screen_canvas``)."""
    if min(gray.shape) < 64:
        return gray
    canvas = canvas_only(gray)  # a screenshot of a drawing app: its flat canvas's straight edges
    if canvas is not gray:
        return canvas
    coarse, f = coarse_copy(gray)
    painted = _on_plate(gray, coarse, f)  # a light plate, before it is taken for a note and kept framed
    if painted is not gray:
        return painted
    painted = _on_surface(gray, coarse, f)
    if painted is not gray:
        return painted
    inverted, coarse = 1.0 - gray, 1.0 - coarse  # the coarse copy is a linear blur: inverted too
    if _dark_middle(gray):
        painted = _on_surface(inverted, coarse, f, board=True)
        if painted is not inverted and _board_written_on(inverted, painted):
            return painted
    painted = _on_plate(inverted, coarse, f)  # a dark plate
    return painted if painted is not inverted else gray


def _on_plate(picture: np.ndarray, coarse: np.ndarray, f: int) -> np.ndarray:
    """``picture`` with the wall round a plate lighter than it (a light plate, or a dark one inverted)
    and the plate's printed frame painted over with the plate's level; ``picture`` itself when it shows
    none (``_plate_written_on``)."""
    painted = _on_surface(picture, coarse, f, small_only=True)
    return painted if painted is not picture and _plate_written_on(picture, painted) else picture


def _dark_middle(gray: np.ndarray) -> bool:
    """Whether the middle of the picture is dark and BOARD_BORDER of its border or more lighter, as a
    board's photo with the wall in view is: a cheap look (every 4th pixel) before the inverted picture is
    searched for a sheet, which a page with writing on it would cost a millisecond."""
    sample = gray[::4, ::4]
    h, w = sample.shape
    middle = float(np.median(sample[h // 4 : h - h // 4, w // 4 : w - w // 4]))
    if middle > BOARD_DARK:  # paper: most pictures end here
        return False
    return float(np.quantile(sample[frame(sample.shape, 2)], 1.0 - BOARD_BORDER)) >= middle + SHEET_CONTRAST


def _board_written_on(inverted: np.ndarray, painted: np.ndarray) -> bool:
    """Whether what ``_on_surface`` kept of an inverted picture is a dark board with writing on it: most
    of the picture, dark, with strokes much lighter than the board well inside it and nothing much darker
    (a board is the darkest thing on it). A dark stroke or shape on white paper, inverted, is a light
    region too, but with nothing lighter inside it than its blurred edges; the shadowed part of a page
    has ink much darker than itself."""
    board = painted == inverted
    if board.mean() < BOARD_SHARE:
        return False
    if not _quadrilateral(board, BOARD_SOLID):
        return False  # a bold digit and its holes (round, or with bays)
    level = float(np.median(inverted[board]))  # the board's, inverted: light for a dark board
    if level < 1.0 - BOARD_DARK:
        return False
    # well inside its outline; the frame's edge erodes nothing (cut by it, a board's writing may reach it)
    chalk = _written_on(inverted, _eroded(board, BOARD_MARGIN), level, BOARD_INK)
    if chalk is None:
        return False
    # Writing is strokes, far narrower than the board: eroded by BOARD_STROKE of the board's shorter side
    # (on a copy a quarter the size), none is left. The paper in a bold digit's loop is a wide patch.
    rows, cols = np.flatnonzero(board.any(axis=1)), np.flatnonzero(board.any(axis=0))
    h, w = chalk.shape[0] // 4 * 4, chalk.shape[1] // 4 * 4
    patch = chalk[:h, :w].reshape(h // 4, 4, w // 4, 4).mean(axis=(1, 3)) >= 0.5
    return not _eroded(patch, math.ceil(BOARD_STROKE * min(rows.size, cols.size) / 4)).any()


def _eroded(mask: np.ndarray, times: int, pad: bool = True) -> np.ndarray:
    """``mask`` eroded ``times`` times by 3x3 (``erode3``)."""
    for _ in range(times):
        mask = erode3(mask, pad=pad)
    return mask


def _written_on(
    picture: np.ndarray, inside: np.ndarray, level: float, share: tuple[float, float]
) -> np.ndarray | None:
    """The writing on a region of ``picture`` at ``level`` (a dark board or plate inverted; ``inside``:
    well inside its outline): what is much darker than it (BOARD_CONTRAST), when that covers ``share``
    of it and nothing much lighter lies on it (a board or a plate is the darkest thing on it; the
    shadowed part of a page, inverted, has ink lighter than itself); None otherwise."""
    size = max(1, int(inside.sum()))
    writing = inside & (picture < level - BOARD_CONTRAST)
    lighter = inside & (picture > level + BOARD_CONTRAST)
    if not share[0] <= writing.sum() / size <= share[1] or lighter.sum() / size >= BOARD_INK[0]:
        return None
    return writing


def _plate_written_on(picture: np.ndarray, painted: np.ndarray) -> bool:
    """Whether what ``_on_surface`` kept of ``picture`` (``painted``: the small-only search's) is a plate
    lighter than its wall with darker figures on it (a dark plate's picture inverted): a rectangle (its
    hull PLATE_RECTANGLE of its smallest rectangle), figures much darker than the plate covering
    PLATE_INK of it well inside its edge, nothing much lighter (a shadowed part of a page, inverted, has
    ink lighter than itself), and the figures strokes: the largest clear of the plate's edge at least
    PLATE_STROKE times as long as it is thick. A bold digit on paper, inverted, is a light blob too, its
    loops the "figures"; but its outline bulges and bends, and a loop is a patch as long as it is wide."""
    kept = painted == picture  # the plate and its figures; the wall and the plate's frame are painted
    if kept.sum() < MIN_PLATE_SIDE**2:
        return False
    hull = _hull(kept)
    if _polygon_area(hull) < PLATE_RECTANGLE * _min_rectangle_area(hull):
        return False
    plate = _hull_mask(kept, hull)  # its frame painted over, the plate is whole again
    level = float(np.median(picture[kept]))
    rows, cols = np.flatnonzero(plate.any(axis=1)), np.flatnonzero(plate.any(axis=0))
    # away from its blurred outline; a small plate's figures come close to it
    inside = _eroded(plate, max(1, min(BOARD_MARGIN, round(PLATE_MARGIN * min(rows.size, cols.size)))))
    figures = _written_on(picture, inside, level, PLATE_INK)
    if figures is None:
        return False
    labels, n = label_components(figures)
    count = np.bincount(labels.ravel(), minlength=n + 1)
    count[np.unique(labels[inside & ~erode3(inside, pad=True)])] = 0  # the outline's blur, not a figure
    count[0] = 0
    if not count.any():
        return False
    largest = _cropped(labels == int(np.argmax(count)))
    half = 0  # erosions until nothing is left of it: half its thickness
    while largest.any():
        largest = erode3(largest, pad=True)
        half += 1
    return int(count.max()) >= PLATE_STROKE * (2 * half) ** 2


def _cropped(mask: np.ndarray) -> np.ndarray:
    """``mask`` within its bounding box and one cell round it (where the picture has it): eroded with the
    frame's edge eroding nothing, it erodes as it does whole."""
    rows, cols = np.flatnonzero(mask.any(axis=1)), np.flatnonzero(mask.any(axis=0))
    if not rows.size:
        return mask
    return mask[max(rows[0] - 1, 0) : rows[-1] + 2, max(cols[0] - 1, 0) : cols[-1] + 2]


def _on_surface(
    gray: np.ndarray, coarse: np.ndarray, f: int, small_only: bool = False, board: bool = False
) -> np.ndarray:
    """``surface_removed`` for a sheet lighter than its surface (``coarse``, ``f``: the picture's coarse
    copy and its factor); ``gray`` itself when there is none. ``small_only``: a plate on a wall alone, a
    sheet smaller than the wall round it (PLATE_SHAPE), its printed frame painted over too. ``board``: the
    picture is a board's photo inverted, its surface the wall (``_surface_along_edge``)."""
    level = median(coarse.ravel())
    # Which pixels along the sheet's edge join the surface: darker than the sheet by this share of the
    # contrast between them. A small sheet's whole outline is in view, and what is left of it reads as
    # ink. How the sheet's level is continued over the surface: a small sheet's shading, spread ring
    # by ring over a surface many times its size, leaves ridges that read as ink; a smooth fit, none.
    found = _small_sheet(coarse, level, PLATE_SHAPE if small_only else SHEET_SHAPE)
    edge, fill = 0.1, _shading_fitted
    if found is None and small_only:
        return gray
    if found is None:
        found, edge, fill = _surface_along_edge(coarse, level, SHEET_CONTRAST, board), 0.5, _inpaint
    if found is None:  # a faint one's edge is followed further into its blur: its ramp would read as a stroke
        found, edge, fill = _surface_along_edge(coarse, level, FAINT_SHEET_CONTRAST), 0.2, _inpaint
    if found is None:
        return gray
    surface, core, level, table = found
    # The fill continues the paper, not the writing: ink beside the surface, spread ring by ring over
    # it, leaves a streak that reads as a stroke.
    writing = coarse < level - SHEET_CONTRAST / 4
    # The frame's edge too, where the last specks of the surface hide: no digit sits there.
    border = frame(surface.shape, 3)
    surface, core = surface | border, core | border
    full = upsample(surface, f, gray.shape)
    # The coarse mask misses slivers thinner than a coarse pixel (along a tilted sheet's edge): grow it
    # at full resolution over what is still darker than the sheet, within one more coarse pixel.
    reach = upsample(dilate3(surface), f, gray.shape)
    blank = ~surface & ~writing
    if not blank.any():  # no blank cell of the sheet to continue its level from: a blot, not a sheet
        return gray
    darker = reach & (gray < upsample(fill(coarse, blank), f, gray.shape) - edge * (level - table))
    for _ in range(f):
        grown = dilate3(full) & (darker | full)
        if np.array_equal(grown, full):
            break
        full = grown
    # The sheet's level painted over all of it, continued from the coarse cells untouched by the surface,
    # except the writing that reaches it (``_pen``).
    h, w = surface.shape
    touched = full[: h * f, : w * f].reshape(h, f, w, f).any(axis=(1, 3))
    paint = full & ~_pen(gray, full, upsample(core, f, gray.shape), table - SHEET_CONTRAST / 2)
    known = ~touched & ~writing
    if not known.any():
        return gray
    filled = upsample(fill(coarse, known), f, gray.shape)
    if small_only:  # a plate: its printed frame too, or what the painting left of it
        paint |= _printed_frame(gray, ~paint, level)
    return np.where(paint, filled, gray)


def _printed_frame(gray: np.ndarray, plate: np.ndarray, level: float) -> np.ndarray:
    """The line printed round a plate's edge (a house number's border), or what the painting of the wall
    left of it: the marks on the ``plate`` that lie wholly (FRAME_WITHIN of them) within FRAME_BAND of its
    shorter side of its outline. Left in, its sides read as 1s either side of the number; a plate's
    figures stand in its middle, well clear of its edge."""
    rows, cols = np.flatnonzero(plate.any(axis=1)), np.flatnonzero(plate.any(axis=0))
    if not rows.size:
        return np.zeros_like(plate)
    # measured from its outline, not from the bits of frame already painted
    inner = _eroded(_filled(plate), max(2, round(FRAME_BAND * min(rows.size, cols.size))), pad=False)
    labels, n = label_components(plate & (gray < level - SHEET_CONTRAST / 4))
    size = np.bincount(labels.ravel(), minlength=n + 1)
    within = np.bincount(labels[plate & ~inner], minlength=n + 1)
    return (within >= FRAME_WITHIN * size)[labels] & (labels > 0)


def _pen(gray: np.ndarray, full: np.ndarray, core: np.ndarray, darker_than: float) -> np.ndarray:
    """The writing that reaches into the surface's mask ``full``: strokes darker than the surface (under
    ``darker_than``) with PEN_BEYOND of their pixels beyond its ``core``, in the band it was grown by
    over the sheet's blurred edge or on the sheet: a stroke written up to the sheet's edge, or into a
    shadow taken for a table. What lies on the table (a pen, an app's buttons) lies within the core, but
    for an end that may reach the sheet's edge."""
    dark = gray < darker_than
    rows, cols = np.nonzero(full & dark)
    if not rows.size:
        return np.zeros_like(full)
    box = (slice(max(rows.min() - 1, 0), rows.max() + 2), slice(max(cols.min() - 1, 0), cols.max() + 2))
    labels, n = label_components(dark[box])
    size = np.bincount(labels.ravel(), minlength=n + 1)
    beyond = np.bincount(labels[~core[box]], minlength=n + 1)
    pen = np.zeros_like(full)
    pen[box] = (beyond >= PEN_BEYOND * size)[labels] & (labels > 0)
    return pen


def _filled(mask: np.ndarray) -> np.ndarray:
    """``mask`` with the holes it encloses filled: what cannot be reached from beyond the frame's edge
    without crossing it (searched within its bounding box, beyond which nothing is enclosed)."""
    rows, cols = np.flatnonzero(mask.any(axis=1)), np.flatnonzero(mask.any(axis=0))
    box = (slice(rows[0], rows[-1] + 1), slice(cols[0], cols[-1] + 1))
    open_ = np.pad(~mask[box], 1, constant_values=True)
    beyond = np.pad(np.zeros_like(mask[box]), 1, constant_values=True)
    filled = mask.copy()
    filled[box] = ~reached(beyond, open_)[1:-1, 1:-1]
    return filled


def _surface_along_edge(
    coarse: np.ndarray, level: float, contrast: float, board: bool = False
) -> Found | None:
    """The sheet is the picture's dominant level (``level``). The surface is what is darker than the
    sheet by ``contrast`` (under SHEET_CONTRAST only across a sharp outline), runs along the picture's
    edge unbroken for at least EDGE_RUN of it, is thicker than a pen stroke, and has nothing written on it
    darker than itself (that is a shadow across the page, lifted by ``shadows``) unless it lies all round
    the sheet; strokes (also dark, but thin, and touching the edge rarely and briefly) are left alone.
    ``board``: the surface is the wall round a board (the picture inverted), in view perhaps only in its
    corners (BOARD_EDGE_RUN), and whether it is written on is not asked (below). -> ``Found`` or None."""
    dark = coarse < level - contrast
    edge = frame(dark.shape)
    if dark[edge].mean() < 0.15:
        return None
    thick = erode3(dark, pad=True)  # strokes vanish
    surface = reached(thick & edge, thick)  # the thick dark connected to the edge
    if _longest_edge_run(surface) < (BOARD_EDGE_RUN if board else EDGE_RUN) * edge.sum():
        return None
    table = median(coarse[surface])
    # Writing on it, darker than it, says a shadow across the page (``shadows``), and a faint one may be
    # light falling off: either leaves part of the frame's edge on the page. Round the whole sheet,
    # across a sharp outline (a desk round a sheet wholly in view, an app's window round its canvas),
    # the surface is a table whatever lies on it (a pen, the app's buttons). A light wall's light falls
    # off across the frame by up to a third of its level, so inverted, its far side reads as written on:
    # for a board, ``_board_written_on``'s checks decide instead (nothing on a board is darker than it).
    written = not board and (coarse[surface] < table - SHEET_CONTRAST / 2).sum() >= 2
    if (written or contrast < SHEET_CONTRAST) and not (
        surface[edge].mean() >= WHOLE_SHEET and _sharp_outline(coarse, ~surface, table, level)
    ):
        return None
    core = surface = dilate3(surface)  # its full extent again (the erosion undone) ...
    for _ in range(2):  # ... and the sheet's blurred, shaded edge
        surface = dilate3(surface)
    # Nothing darker than the sheet left beside it: that dark region is the writing itself (a digit
    # cropped flush to its ink, a 7's bar along the top edge), not a table with a written sheet on it.
    if not (coarse[~surface] < level - SHEET_CONTRAST / 4).any():
        return None
    # Paper is the lightest thing on it: much of the "sheet" far lighter than its level is light
    # writing on a dark ground cropped close (chalk, a white-on-black digit), the dark being the ground.
    if float(np.mean(coarse[~surface] > level + SHEET_CONTRAST)) > LIGHTER_THAN_PAPER:
        return None
    return surface, core, level, table


def _small_sheet(coarse: np.ndarray, level: float, shape: SheetShape = SHEET_SHAPE) -> Found | None:
    """A sheet smaller than the surface around it, so that the surface is the dominant level
    (``level``): -> ``Found`` or None.

    The sheet is the region much lighter than the dominant level (SHEET_CONTRAST; a pale desk's sheet
    less, across a sharp outline) around its brightest cell well inside such a region, with the marks it
    encloses, of the ``shape`` asked (a note's: at least MIN_SHEET of the picture, convex, about
    rectangular (a quadrilateral, perhaps cut by the frame), at most 2.5 times as long as wide), mostly
    blank, and with something darker written on it. Light strokes on a dark board (chalk, an inverted
    digit) fail: filled in, their loops leave a shape with bays or an oval, and a bare stroke is a bar
    (a bold 8 whose loops are two small holes can pass: 1 of the robustness suite's 500 inverted digits)."""
    hi = quantiles(coarse, (0.98,))[0]
    if hi - level < FAINT_SHEET_CONTRAST:  # nothing much lighter than the dominant level: the usual case
        return None
    light = coarse > (level + hi) / 2
    if light.sum() < 0.75 * shape.least * coarse.size:  # too little of it for a sheet (tested below, slower)
        return None
    if hi - level < SHEET_CONTRAST and not _sharp_outline(coarse, light, level, hi):
        return None  # a faint light region with a soft edge: light falling off, not a sheet
    solid = erode3(light, pad=False)  # the sheet's inside, not a stroke's
    if not solid.any():
        return None
    # The light region around the brightest solid cell, then every cell it encloses added (what cannot
    # be reached from beyond the frame's edge without crossing it).
    labels, _ = label_components(light)  # the seed's component: as a flood fill finds it, faster
    seed = np.unravel_index(int(np.argmax(np.where(solid, coarse, -1.0))), coarse.shape)
    sheet = _filled(labels == labels[seed])
    hull = None  # a plate is taken as its hull: the cells added lie within it, so the hull is the same
    if shape.convex:
        if not _a_block(sheet):
            return None  # a stroke's ink (a drawn digit, inverted), not a plate
        hull = _hull(sheet)
        sheet |= _hull_mask(sheet, hull)
    area = int(sheet.sum())
    if area < shape.least * coarse.size or (light & sheet).sum() < shape.blank * area:
        return None
    if _aspect(sheet) > shape.longest or not _quadrilateral(sheet, shape.solid, hull):
        return None  # a long bar (a 1), bays (a chalk 6, 8 or 9 filled in) or round (a chalk 0 filled in)
    sheet_level = median(coarse[sheet & light])
    inside = erode3(sheet, pad=True)  # away from its own blurred edge
    if not (coarse[inside] < sheet_level - SHEET_CONTRAST / 4).any():  # nothing written on it
        return None
    # grown by a cell over the sheet's blurred edge: the rest of it is left to the full resolution
    return dilate3(~sheet), ~sheet, sheet_level, median(coarse[~sheet])


def _a_block(mask: np.ndarray) -> bool:
    """Whether something of the mask outlasts erosion by a fifth of its bounding box's shorter side: a
    plate is a block, its figures filled in; a stroke, however long, is gone."""
    rows, cols = np.flatnonzero(mask.any(axis=1)), np.flatnonzero(mask.any(axis=0))
    return bool(_eroded(mask, round(0.2 * min(rows.size, cols.size))).any())


def _sharp_outline(coarse: np.ndarray, sheet: np.ndarray, low: float, high: float) -> bool:
    """Whether the level steps from the sheet's (``high``) to the surface's (``low``), by SHARP_STEP of
    the difference, across the sheet's outline: the cells two inside it against those two outside it
    (where the frame cuts the sheet, there are none). Outside cells much darker than the surface are
    writing (the light region's holes round the strokes), not the surface, and are left out."""
    inner = erode3(sheet, pad=True)
    outer = dilate3(sheet)
    inside = coarse[inner & ~erode3(erode3(inner, pad=True), pad=True)]
    outside = coarse[dilate3(dilate3(outer)) & ~outer]
    outside = outside[outside > low - (high - low)]
    if not inside.size or not outside.size:
        return False
    return median(inside) - median(outside) >= SHARP_STEP * (high - low)


def _aspect(mask: np.ndarray) -> float:
    """Length over width of a mask's cells, from their principal axes (a tilted bar's too): paper,
    notes and cards run up to about 2:1, a pen stroke much further."""
    rows, cols = np.nonzero(mask)
    small, large = np.linalg.eigvalsh(np.cov(np.stack([rows, cols]).astype(np.float64)))
    return math.sqrt(large / max(small, 1e-9))


def _quadrilateral(mask: np.ndarray, solid: float, hull: np.ndarray | None = None) -> bool:
    """Whether a mask is a solid quadrilateral, even one seen at a slant or cut by the frame: at least
    ``solid`` of its convex hull (``hull``: ``_hull``'s, when already found), the hull at least
    QUADRILATERAL of its smallest rectangle."""
    hull = _hull(mask) if hull is None else hull
    hull_area = _polygon_area(hull)
    return mask.sum() >= solid * hull_area and hull_area >= QUADRILATERAL * _min_rectangle_area(hull)


def _hull(mask: np.ndarray) -> np.ndarray:
    """The convex hull of a mask's cell centres, (n, 2) x, y (Andrew's monotone chain). It runs half a
    cell inside the cells' outline, which makes up for the steps a tilted edge loses to a straight line."""
    rows = np.flatnonzero(mask.any(axis=1))
    first = mask[rows].argmax(axis=1)
    last = mask.shape[1] - 1 - mask[rows, ::-1].argmax(axis=1)
    ends = zip(rows.tolist(), first.tolist(), last.tolist(), strict=True)
    points = sorted({(x, r) for r, a, b in ends for x in (a, b)})

    def cross(o: tuple[int, int], a: tuple[int, int], b: tuple[int, int]) -> int:
        return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])

    def half(pts: list[tuple[int, int]]) -> list[tuple[int, int]]:
        chain: list[tuple[int, int]] = []
        for p in pts:
            while len(chain) >= 2 and cross(chain[-2], chain[-1], p) <= 0:
                chain.pop()
            chain.append(p)
        return chain

    return np.array(half(points)[:-1] + half(points[::-1])[:-1], dtype=np.float64).reshape(-1, 2)


def _hull_mask(mask: np.ndarray, hull: np.ndarray) -> np.ndarray:
    """The cells within a mask's convex hull (``_hull``'s): those on the inner side of every edge of it.
    The corners are cell centres, so each edge bounds a row's columns at a whole number: per row, the
    columns from the largest lower bound to the smallest upper one."""
    if len(hull) < 3:
        return mask
    corners = hull.astype(np.int64)
    start, end = corners, np.roll(corners, -1, axis=0)
    if (start[:, 0] * end[:, 1] - start[:, 1] * end[:, 0]).sum() < 0:  # clockwise in x, y: turned round
        start, end = end, start
    rows = np.arange(corners[:, 1].min(), corners[:, 1].max() + 1)[:, None]
    # inside: (ex - sx)(y - sy) - (ey - sy)(x - sx) >= 0, i.e. b * x <= a with b = ey - sy
    a = (end[:, 0] - start[:, 0]) * (rows - start[:, 1]) + (end[:, 1] - start[:, 1]) * start[:, 0]
    b = np.broadcast_to(end[:, 1] - start[:, 1], a.shape)
    big = mask.shape[1]
    upper = np.where(b > 0, np.floor_divide(a, np.where(b > 0, b, 1)), big)
    lower = np.where(b < 0, -np.floor_divide(a, np.where(b < 0, -b, 1)), -1)  # x >= ceil(a / b) for b < 0
    row_out = np.where(b == 0, a < 0, False).any(axis=1)  # a level edge the row lies beyond
    first = np.maximum(lower.max(axis=1), 0)
    last = np.minimum(upper.min(axis=1), big - 1)
    cols = np.arange(big)
    out = np.zeros_like(mask)
    out[rows[:, 0]] = (cols >= first[:, None]) & (cols <= last[:, None]) & ~row_out[:, None]
    return out


def _polygon_area(pts: np.ndarray) -> float:
    x, y = pts[:, 0], pts[:, 1]
    return 0.5 * abs(float(x @ np.roll(y, -1) - y @ np.roll(x, -1)))


def _min_rectangle_area(pts: np.ndarray) -> float:
    """The smallest rectangle around a convex polygon: one of its sides lies along one of the
    polygon's (rotating calipers, every side tried)."""
    sides = np.roll(pts, -1, axis=0) - pts
    sides = sides[np.hypot(*sides.T) > 0]
    u = sides / np.hypot(*sides.T)[:, None]
    along, across = pts @ u.T, pts @ np.stack([-u[:, 1], u[:, 0]], axis=1).T  # (points, sides)
    return float((np.ptp(along, axis=0) * np.ptp(across, axis=0)).min())


def _longest_edge_run(mask: np.ndarray) -> int:
    """The longest unbroken stretch of ``mask`` along the picture's edge, going round the corners. A
    table shows along a whole side or all round a sheet; a digit filling its picture only crosses
    the edge in short stretches, a stroke's width each."""
    ring = np.concatenate([mask[0, :], mask[1:, -1], mask[-1, -2::-1], mask[-2:0:-1, 0]])
    if ring.all():
        return len(ring)
    ring = np.roll(ring, -int(np.argmin(ring)))  # start at a gap, so no run wraps around
    steps = np.diff(np.concatenate([[0], ring.astype(np.int8), [0]]))
    return int((np.flatnonzero(steps == -1) - np.flatnonzero(steps == 1)).max(initial=0))


def _inpaint(x: np.ndarray, known: np.ndarray) -> np.ndarray:
    """x with its unknown pixels filled in from the known ones, ring by ring (3x3 neighbour means):
    the sheet's own shading continued over the surface, so no edge is left where they met."""
    known = known.copy()
    values = np.where(known, x, 0.0).astype(np.float32)
    while not known.all():
        total = np.add.reduce(shifts(values))
        count = np.add.reduce(shifts(known.astype(np.float32)))
        ring = ~known & (count > 0)
        if not ring.any():
            break
        values[ring] = total[ring] / count[ring]
        known |= ring
    return values


def _shading_fitted(x: np.ndarray, known: np.ndarray) -> np.ndarray:
    """x with its unknown pixels replaced by a plane fitted to the known ones, what is darker than the
    plane (the writing) dropped and the fit repeated, and held within the levels it takes on them: the
    light over a small sheet, continued smoothly across the surface around it (a curved fit, or one
    left unbounded, runs away over a surface many times the sheet's size)."""
    yy, xx = np.mgrid[0 : x.shape[0], 0 : x.shape[1]].astype(np.float32)
    basis = np.stack([np.ones_like(xx), xx / x.shape[1], yy / x.shape[0]], axis=-1)
    a = basis[known]
    coef = robust_fit(a, x[known], ink_above=False)
    on_sheet = a @ coef
    plane = np.clip(basis @ coef, on_sheet.min(), on_sheet.max())
    return np.where(known, x, plane).astype(np.float32)
