"""The furniture round a drawing: an app's toolbars and palettes in a screenshot, taken out of an ink map.

A digit drawn in a drawing app and sent as a screenshot comes with the app round it: a status bar, a row
of tool icons, a palette of colour swatches, a size slider, a gesture bar; a desktop paint program's
title, menus, tool panel and colour grid. They are ink as dark as the digit and hold as much of it, so
the digit's box stretched over the screen and the digit came out a fraction of its size. A person tells
them by their layout: small marks side by side, a long line or a bar across the picture, in bands along
its edges, apart from the writing. A digit's own parts are not like that: a 7's bar or a 5's flag lies
close to the rest and is no longer than the digit is tall.

So, on the working copy (at most 256 px a side, ``model_store.decode``): the writing's main mark is the
tallest mark that is no bar across the picture (BAR_ACROSS of it, at most BAR_THICK as thick as long: a
dark theme's toolbar round a white canvas), preferring one at least half as tall in the picture's middle
(a palette's swatches may be taller than a long number's digits). A band (a run of rows holding ink, none
of it in the main mark's rows) within EDGE of the picture of its edge and at least GAP of the main mark's
height away from it is furniture when it holds such a bar, a line LINE_REACH times as long as the main
mark is tall, or MIN_MARKS marks side by side, ALIKE in size and APART, mostly under BAND_HEIGHT of the
main mark's height unless FAR from it (a second line of writing is as tall). The furniture band nearest
the writing goes, with everything beyond it towards the edge (the status bar above a toolbar, the gesture
bar below a palette). Then the same down the columns of the rows kept (a tool panel at the side), where a
bar is none (a 1 down the side of a crop flush to a number), a panel holds MIN_TOOLS marks, and a band
with writing beyond it is none (a box's edge before a number's last digit). What is left is cut to the
marks kept, with a MARGIN: the paper between them and the furniture may be no paper (a paint program's
gray workspace round its canvas).
"""

from __future__ import annotations

import numpy as np

from .components import component_boxes, label_components
from .rulings import runs

MIN_SIDE = 96  # pictures with a shorter longest side are taken as they are: a screenshot is larger
EDGE = 0.25  # furniture lies within this share of the picture of its edge (a digit's own pieces do not)
GAP = 0.1  # a band of furniture lies at least this share of the main mark's height away from it ...
BAND_HEIGHT = 0.6  # ... its marks mostly at most this share of that height tall ...
FAR = 2.0  # ... or this many times that height away (a palette as tall as a long number's digits) ...
MIN_MARKS = 2  # ... and holds this many marks side by side (a tool panel down the side: MIN_TOOLS) ...
MIN_TOOLS = 3  # (two marks stacked at a number's end are punctuation: an equals sign, a colon)
ALIKE = 0.25  # (whose boxes are at least this share of the band's largest: a digit's piece, specks are not)
APART = 0.25  # (at least this share of their own length apart: a display's bars nearly touch)
LINE_REACH = 2.0  # ... or a line this many times as long as the main mark is tall
LINE_THIN = 0.15  # a line is at most this share of its length thick
BAR_ACROSS, BAR_THICK = 0.9, 0.5  # a bar of the app's spans this share of the picture, at most half as thick
MARGIN = 0.1  # of the main mark's height: kept round the marks left, for their soft edges


Labelled = tuple[np.ndarray, np.ndarray, int]  # a mask, its components' labels and their count


def without_edge_bands(x: np.ndarray, share: float, labelled: Labelled | None = None) -> np.ndarray:
    """``x`` (ink over a paper at 0) with the bands of furniture along its edges set to 0; ``x`` itself
    when it has none. Ink is where it reaches ``share`` of its peak. ``labelled``: a mask the caller has
    labelled already (``segment.read_page``), its labels used when it is that ink."""
    if max(x.shape) < MIN_SIDE:
        return x
    on = x > share * float(x.max())
    if runs(on.any(axis=1))[0].size < 2 and runs(on.any(axis=0))[0].size < 2:
        return x  # one band of ink each way: nothing stands apart from the writing
    if labelled is not None and np.array_equal(labelled[0], on):
        labels, n = labelled[1:]
    else:
        labels, n = label_components(on)
    boxes = component_boxes(labels, n)[0]  # x0, y0, x1, y1 (exclusive)
    boxes = np.column_stack([boxes, boxes[:, 3] - boxes[:, 1]])  # and each mark's height
    width, tall = boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]
    bar = (width >= BAR_ACROSS * on.shape[1]) & (tall <= BAR_THICK * width)
    if bar.all():
        return x
    # The tallest mark, or of those at least half as tall, the tallest in the middle of the picture where
    # there is one: a palette's swatches may be taller than the digits of a long number. An app's bar is
    # no writing.
    tall = np.where(bar, -1, tall)
    middle = np.abs(boxes[:, 1] + boxes[:, 3] - on.shape[0]) <= (1 - 2 * EDGE) * on.shape[0]
    middle &= tall >= 0.5 * tall.max()
    main = int(np.argmax(tall + np.where(middle, on.shape[0], 0)))
    height = int(tall[main])
    r0, r1 = _kept(boxes[:, [1, 3, 0, 2, 4]], main, height, *on.shape)
    inside = (boxes[:, 1] >= r0) & (boxes[:, 3] <= r1)
    c0, c1 = _kept(boxes[inside][:, [0, 2, 1, 3, 4]], int(inside[:main].sum()), height, *on.shape[::-1], True)
    if (r0, r1, c0, c1) == (0, on.shape[0], 0, on.shape[1]):
        return x
    # What is left: the marks between the bands taken out, with a margin for their soft edges. The
    # paper between them and the furniture may not be (a paint program's gray workspace round its canvas,
    # fainter than the icons but not than a blue pen's digit once they are out).
    kept = boxes[inside & (boxes[:, 0] >= c0) & (boxes[:, 2] <= c1)]
    m = max(2, round(MARGIN * height))
    r0, r1 = max(r0, int(kept[:, 1].min()) - m), min(r1, int(kept[:, 3].max()) + m)
    c0, c1 = max(c0, int(kept[:, 0].min()) - m), min(c1, int(kept[:, 2].max()) + m)
    out = np.zeros_like(x)
    out[r0:r1, c0:c1] = x[r0:r1, c0:c1]
    return out


def _kept(
    spans: np.ndarray, main: int, height: int, length: int, width: int, down: bool = False
) -> tuple[int, int]:
    """The range [start, end) along one axis left once the furniture bands are out. ``spans``: per mark
    (along start, along end, across start, across end, height), ends exclusive; ``main``: the main mark's
    row; ``down``: the bands run down the picture (the axis is its columns, along the lines of writing),
    where a band between digits (a box's edge, a slash) has writing beyond it: furniture has none."""
    cover = np.zeros(length, dtype=bool)
    for a0, a1 in spans[:, :2]:
        cover[a0:a1] = True
    firsts, lasts = runs(cover)
    m0, m1 = int(spans[main, 0]), int(spans[main, 1])
    writing = (spans[:, 4] > BAND_HEIGHT * height) & down  # a mark as tall as the main mark
    start, end = 0, length
    before = [k for k in range(firsts.size) if lasts[k] < m0][::-1]  # nearest the writing first
    after = [k for k in range(firsts.size) if firsts[k] >= m1]
    for k in before:
        first, last = int(firsts[k]), int(lasts[k])
        if last < EDGE * length and not (writing & (spans[:, 1] <= first)).any():
            if _furniture(spans, first, last, m0 - 1 - last, height, width, down):
                start = last + 1
                break
    for k in after:
        first, last = int(firsts[k]), int(lasts[k])
        if first >= (1 - EDGE) * length and not (writing & (spans[:, 0] > last)).any():
            if _furniture(spans, first, last, first - m1, height, width, down):
                end = first
                break
    return start, end


def _furniture(
    spans: np.ndarray, first: int, last: int, gap: int, height: int, width: int, down: bool
) -> bool:  # fmt: skip
    """Whether the band ``first``..``last`` (``gap`` from the main mark, which is ``height`` tall; the
    picture ``width`` across) is furniture; ``down``: the band runs down the picture, where a bar is no
    furniture (an app's bars lie along its top and bottom: down the side of a crop flush to a number, a 1
    is) and a tool panel holds MIN_TOOLS marks."""
    if gap < GAP * height:
        return False
    marks = spans[(spans[:, 0] >= first) & (spans[:, 1] <= last + 1)]
    along, across = marks[:, 1] - marks[:, 0], marks[:, 3] - marks[:, 2]
    if not down and ((across >= BAR_ACROSS * width) & (along <= BAR_THICK * across)).any():
        return True  # a bar of the app across the picture (a dark theme's toolbar round a white canvas)
    if ((across >= LINE_REACH * height) & (along <= LINE_THIN * across)).any():
        return True
    size = along * across
    alike = size >= ALIKE * size.max()
    if np.median(marks[alike, 4]) > BAND_HEIGHT * height and gap < FAR * height:
        return False  # writing as tall as the main mark, near it: a second line
    side_by_side, reach = 0, -width
    for a0, a1 in sorted(marks[alike, 2:4].tolist()):
        if a0 >= reach + APART * (a1 - a0):
            side_by_side += 1
        reach = max(reach, a1)
    return side_by_side >= (MIN_TOOLS if down else MIN_MARKS)
