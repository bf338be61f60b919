"""Connected marks of a boolean ink image: labelling, their boxes, and loops drawn round writing.

Shared by the single-digit preprocessing (``preprocess``) and the reading of whole numbers
(``segment``), so it sits below both.
"""

from __future__ import annotations

import numpy as np

ENCLOSED = (0.35, 0.83)  # a loop round writing holds marks this tall (times the loop's height) ...
ENCLOSE_FILL = 0.2  # ... and has ink on at most this share of its box (a circled answer)


def row_runs(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The runs of True along each row of a boolean image: (row, first column, end column exclusive)
    per run, in row-major order."""
    edges = np.diff(np.pad(mask.astype(np.int8), ((0, 0), (1, 1))), axis=1)
    rows, starts = np.nonzero(edges == 1)
    _, ends = np.nonzero(edges == -1)
    return rows, starts, ends


def euler_number(mask: np.ndarray) -> int:
    """Components (8-connected) minus holes of a boolean image, counted from its 2x2 windows (Gray's
    bit quads), without labelling: a few array operations, where labelling loops over the runs."""
    m = np.pad(mask, 1).astype(np.int8)
    a, b, c, d = m[:-1, :-1], m[:-1, 1:], m[1:, :-1], m[1:, 1:]
    n = a + b + c + d
    diagonal = (n == 2) & (a == d)
    return int(((n == 1).sum() - (n == 3).sum() - 2 * diagonal.sum()) // 4)


def label_components(mask: np.ndarray) -> tuple[np.ndarray, int]:
    """8-connected components of a boolean image -> (int32 labels 1..n, 0 = background), n.

    Runs of ink per row are the nodes; a run touches the runs of the previous row whose columns
    overlap it by one pixel diagonally. Union-find over runs: a 280x1000 canvas has a few hundred.
    """
    h, w = mask.shape
    rows, starts, ends = row_runs(mask)
    parent = list(range(len(rows)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    row_start = np.searchsorted(rows, np.arange(h + 1))
    for r in range(1, h):
        a0, a1 = row_start[r - 1], row_start[r]  # runs of the previous row
        b0, b1 = row_start[r], row_start[r + 1]
        j = a0
        for i in range(b0, b1):
            while j < a1 and ends[j] < starts[i]:  # previous run ends left of this one's diagonal
                j += 1
            k = j
            while k < a1 and starts[k] <= ends[i]:
                ri, rk = find(i), find(k)
                if ri != rk:
                    parent[max(ri, rk)] = min(ri, rk)
                k += 1
    roots = np.array([find(i) for i in range(len(rows))], dtype=np.int64)
    _, run_label = np.unique(roots, return_inverse=True)
    labels = np.zeros((h, w), dtype=np.int32)
    for r, s, e, lab in zip(rows, starts, ends, run_label + 1, strict=True):
        labels[r, s:e] = lab
    return labels, int(run_label.max() + 1) if len(rows) else 0


def grown(mask: np.ndarray) -> np.ndarray:
    """A mask one pixel larger in the four directions (a stroke's antialiased edge)."""
    out = mask.copy()
    out[1:] |= mask[:-1]
    out[:-1] |= mask[1:]
    out[:, 1:] |= mask[:, :-1]
    out[:, :-1] |= mask[:, 1:]
    return out


def component_boxes(labels: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Labels 1..n -> (boxes (n, 4): x0, y0, x1, y1 exclusive; areas (n,)), component i at row i - 1."""
    ys, xs = np.nonzero(labels)
    lab = labels[ys, xs] - 1
    area = np.bincount(lab, minlength=n)
    x0, y0 = np.full(n, labels.shape[1]), np.full(n, labels.shape[0])
    x1, y1 = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    np.minimum.at(x0, lab, xs)
    np.minimum.at(y0, lab, ys)
    np.maximum.at(x1, lab, xs + 1)
    np.maximum.at(y1, lab, ys + 1)
    return np.stack([x0, y0, x1, y1], axis=1), area


def loops_round_writing(boxes: np.ndarray, areas: np.ndarray) -> np.ndarray:
    """(n,) bool: which marks are a loop drawn round the writing (a circled answer, a box drawn by
    hand). Such a mark's box holds other marks, the tallest of them ENCLOSED[0] to ENCLOSED[1] of its
    height, and its ink is a thin line round a mostly empty box. No digit holds another digit: a dot
    inside a 0 is too small to count, a 0's slash too tall, and a 0's own stroke fills more of its box.
    ``boxes``: (n, 4) x0, y0, x1, y1 (exclusive); ``areas``: (n,) ink pixels."""
    x0, y0, x1, y1 = (boxes[:, i] for i in range(4))
    height = y1 - y0
    inside = (x0[None, :] >= x0[:, None]) & (x1[None, :] <= x1[:, None])
    inside &= (y0[None, :] >= y0[:, None]) & (y1[None, :] <= y1[:, None])
    np.fill_diagonal(inside, False)  # [i, j]: mark j lies inside mark i's box
    tallest = np.where(inside, height[None, :], 0).max(axis=1, initial=0)
    lo, hi = ENCLOSED
    thin = areas <= ENCLOSE_FILL * (x1 - x0) * height
    return (tallest > 0) & (tallest >= lo * height) & (tallest <= hi * height) & thin
