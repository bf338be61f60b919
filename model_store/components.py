"""Connected marks of a boolean ink image: labelling, their boxes, and loops drawn round writing.

Shared by the single-digit preprocessing (``preprocess``) and the reading of whole numbers
(``segment``), so it sits below both.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

ENCLOSED = (0.35, 0.83)  # a loop round writing holds marks this tall (times the loop's height) ...
ENCLOSE_FILL = 0.2  # ... and has ink on at most this share of its box (a circled answer)


def row_runs(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The runs of True along each row of a boolean image: (row, first column, end column exclusive)
    per run, in row-major order."""
    h, w = mask.shape
    padded = np.zeros((h, w + 2), dtype=bool)
    padded[:, 1:-1] = mask
    rows, cols = np.nonzero(padded[:, 1:] != padded[:, :-1])  # per row: a start, its end, the next ...
    return rows[0::2], cols[0::2], cols[1::2]


def euler_number(mask: np.ndarray) -> int:
    """Components (8-connected) minus holes of a boolean image, counted from its 2x2 windows (Gray's
    bit quads), without labelling: a few array operations, where labelling loops over the runs."""
    m = np.pad(mask, 1).astype(np.int8)
    a, b, c, d = m[:-1, :-1], m[:-1, 1:], m[1:, :-1], m[1:, 1:]
    n = a + b + c + d
    diagonal = (n == 2) & (a == d)
    return int(((n == 1).sum() - (n == 3).sum() - 2 * diagonal.sum()) // 4)


def label_components(mask: np.ndarray) -> tuple[np.ndarray, int]:
    """8-connected components of a boolean image -> (int32 labels 1..n, 0 = background), n, numbered
    in the order their first pixels come row by row."""
    mask = np.asarray(mask, dtype=bool)
    runs = Runs.of(mask)
    labels = np.zeros(mask.shape, dtype=np.int32)
    labels[mask] = np.repeat(runs.label, runs.ends - runs.starts)  # row-major, as the runs
    return labels, runs.n


@dataclass(frozen=True)
class Runs:
    """A boolean image's runs of True per row (``row_runs``), each with its component's label (1..n,
    ``label_components``' numbering).

    Runs are the nodes; a run touches the runs of the row above whose columns overlap it by one pixel
    diagonally. The touching pairs are found with two sorted searches, and each run takes the least run
    index of its component by propagation with pointer jumping: array operations, where a loop over the
    runs took 0.1-0.3 s on a 1000 px screenshot's level.
    """

    rows: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    label: np.ndarray
    n: int

    @classmethod
    def of(cls, mask: np.ndarray) -> Runs:
        w = mask.shape[1]
        rows, starts, ends = row_runs(mask)
        n = len(rows)
        if n == 0:
            return cls(rows, starts, ends, np.zeros(0, dtype=np.int32), 0)
        row_key = rows.astype(np.int64) * (w + 2)  # runs sorted by row, then column: one key orders both
        above = row_key - (w + 2)
        first = np.searchsorted(row_key + ends, above + starts, "left")  # the row above's runs reaching it
        past = np.searchsorted(row_key + starts, above + ends, "right")
        count = np.maximum(past - first, 0)
        run = np.repeat(np.arange(n), count)
        touched = _ranges(first, count)
        root = np.arange(n)
        while True:
            least = np.minimum(root[run], root[touched])
            hooked = root.copy()
            np.minimum.at(hooked, run, least)
            np.minimum.at(hooked, touched, least)
            while not np.array_equal(jumped := hooked[hooked], hooked):
                hooked = jumped
            if np.array_equal(hooked, root):
                break
            root = hooked
        _, label = np.unique(root, return_inverse=True)
        return cls(rows, starts, ends, label.astype(np.int32) + 1, int(label.max()) + 1)

    def sizes(self) -> np.ndarray:
        """(n + 1,) pixels per label, 0 for the background's place."""
        return np.bincount(self.label, weights=self.ends - self.starts, minlength=self.n + 1).astype(np.int64)

    def region(self, k: int) -> tuple[tuple[int, int, int, int], np.ndarray]:
        """Component ``k``'s box (r0, r1, c0, c1, exclusive) and its pixels within it."""
        at = self.label == k
        rows, starts, ends = self.rows[at], self.starts[at], self.ends[at]
        r0, r1, c0, c1 = int(rows.min()), int(rows.max()) + 1, int(starts.min()), int(ends.max())
        inside = np.zeros((r1 - r0, c1 - c0), dtype=bool)
        first = (rows - r0) * (c1 - c0) + starts - c0  # each run's first pixel in the box, row-major
        inside.ravel()[_ranges(first, ends - starts)] = True
        return (r0, r1, c0, c1), inside


def _ranges(first: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """first[0], first[0] + 1, ... (lengths[0] of them), then first[1], ...: many ranges at once."""
    return np.repeat(first - np.cumsum(lengths) + lengths, lengths) + np.arange(int(lengths.sum()))


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
