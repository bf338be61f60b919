"""MNIST's frame: a digit's strokes measured and thickened, its box found past stray specks, fitted
into BOX x BOX and pasted into SIZE x SIZE with its centre of mass at the centre."""

from __future__ import annotations

import math

import numpy as np
from PIL import Image, ImageFilter

from .decode import NoInk
from .rulings import runs

SIZE = 28  # output side
BOX = 20  # the digit is fitted into BOX x BOX
CENTRE = 14.0  # MNIST centres of mass lie in [13.5, 14.5] (row/col index coordinates)
MID_SIZE = 4 * BOX  # intermediate size of the cropped digit, where strokes are measured and thickened
MNIST_STROKE = 0.117  # median MNIST stroke width as a fraction of the 20 px box
# Along a line with LINE_RUNS column runs or more of at least LINE_SPECK of the largest run's ink (a long
# number: each digit under min_share of the ink, a 1 from about 10 digits), a run is a speck only under
# LINE_SPECK of the largest (a 1 holds about 0.4 of a wide digit's); a shorter line keeps min_share.
LINE_SPECK = 0.15
LINE_RUNS = 8


def resize(
    x: np.ndarray, width: int, height: int, how: Image.Resampling = Image.Resampling.LANCZOS
) -> np.ndarray:
    img = Image.fromarray(np.ascontiguousarray(x, dtype=np.float32), "F")
    return np.clip(np.asarray(img.resize((width, height), how)), 0.0, 1.0)


def stroke_width(mask: np.ndarray) -> float:
    """Mean stroke width of a binary mask: twice the area over the perimeter (pixel edges / 1.27,
    which corrects a staircase outline towards the true curve length)."""
    m = mask.astype(np.int8)
    perimeter = (np.abs(np.diff(m, axis=0)).sum() + np.abs(np.diff(m, axis=1)).sum()) / 1.27
    return 2.0 * float(m.sum()) / max(float(perimeter), 1.0)


def thicken(x: np.ndarray) -> np.ndarray:
    """Dilate thin strokes (pen on paper) towards MNIST's stroke width; x is at MID_SIZE scale."""
    mask = x > 0.5
    if not mask.any():
        return x
    width = stroke_width(mask)
    target = MNIST_STROKE * max(x.shape)
    if width >= 0.5 * target:
        return x
    k = 2 * int(round((target - width) / 2)) + 1
    if k < 3:
        return x
    padded = np.pad(x, k // 2)  # room for the grown strokes
    return np.asarray(Image.fromarray(padded, "F").filter(ImageFilter.MaxFilter(k)))


def _main_span(profile: np.ndarray, min_share: float = 0.06, line: bool = False) -> tuple[int, int]:
    """First..last index of the runs of non-zero profile that hold >= min_share of the ink (along a
    ``line`` with LINE_RUNS runs or more of LINE_SPECK of the largest run's ink, that share will do).

    Runs are separated by empty rows (or columns); a small isolated run is a speck of dust, a
    slip of the pen or a page mark, and must not stretch the box the digit is scaled into.
    Detached parts of real digits (the flag of a 5, the bar of a 7) hold well over 10%. Along a line
    of writing each digit is a run of its own, under min_share of a long number's ink.
    """
    starts, ends = runs(profile > 0)
    cum = np.concatenate([[0.0], np.cumsum(profile, dtype=np.float64)])
    mass = cum[ends + 1] - cum[starts]
    least = min_share * mass.sum()
    if line and np.count_nonzero(mass >= LINE_SPECK * mass.max()) >= LINE_RUNS:
        least = min(least, LINE_SPECK * mass.max())
    keep = np.flatnonzero(mass >= least)
    if keep.size == 0:
        keep = np.array([int(mass.argmax())])
    return int(starts[keep[0]]), int(ends[keep[-1]])


def ink_box(x: np.ndarray, level: float, line: bool = False) -> tuple[int, int, int, int]:
    """Rows r0..r1 and columns c0..c1 of the ink above ``level``, isolated specks ignored
    (rows, then columns, then rows again). ``line``: the ink is a line of digits, whose columns a long
    number's many runs may each hold under min_share (``_main_span``)."""
    ink = np.where(x > level, x, 0.0)
    if not ink.any():  # nothing stands out of the grain
        raise NoInk("no ink found: the canvas is empty or too noisy")
    r0, r1 = _main_span(ink.sum(axis=1))
    c0, c1 = _main_span(ink[r0 : r1 + 1].sum(axis=0), line=line)
    s0, s1 = _main_span(ink[r0 : r1 + 1, c0 : c1 + 1].sum(axis=1))
    return r0 + s0, r0 + s1, c0, c1


def centred(patch: np.ndarray) -> np.ndarray:
    """Paste a patch (<= BOX x BOX) into 28x28 with its centre of mass at CENTRE (integer shift)."""
    h, w = patch.shape
    total = float(patch.sum())
    rows = np.arange(h, dtype=np.float32)
    cols = np.arange(w, dtype=np.float32)
    com_r = float(patch.sum(axis=1) @ rows) / total
    com_c = float(patch.sum(axis=0) @ cols) / total
    top = int(np.clip(math.floor(CENTRE - com_r + 0.5), 0, SIZE - h))
    left = int(np.clip(math.floor(CENTRE - com_c + 0.5), 0, SIZE - w))
    out = np.zeros((SIZE, SIZE), dtype=np.float32)
    out[top : top + h, left : left + w] = patch
    return out


def mnist_like(x: np.ndarray) -> np.ndarray | None:
    """A 28x28 white-on-black digit in a <= 20 px box is used as-is, only shifted if off-centre."""
    ink = x > 0.5 / 255.0
    rows, cols = np.flatnonzero(ink.any(axis=1)), np.flatnonzero(ink.any(axis=0))
    if rows.size == 0 or rows[-1] - rows[0] >= BOX or cols[-1] - cols[0] >= BOX:
        return None
    total = float(x.sum())
    idx = np.arange(SIZE, dtype=np.float32)
    com_r = float(x.sum(axis=1) @ idx) / total
    com_c = float(x.sum(axis=0) @ idx) / total
    if abs(com_r - CENTRE) <= 0.5 + 1e-4 and abs(com_c - CENTRE) <= 0.5 + 1e-4:
        return x
    patch = x[rows[0] : rows[-1] + 1, cols[0] : cols[-1] + 1]
    return centred(patch)
