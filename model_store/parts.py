"""What the page reader works with: a ``Part`` (a set of connected strokes, one digit or one still to
split, and its box) and the ``Seam``s a stroke is cut along where digits touch, straight down or bent
round the strokes; the piece of a part between two seams. ``model_store.segment`` groups and cuts parts
by rules; ``model_store.pieces`` cuts them along every seam the model may choose between."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True)
class Seam:
    """A line along which touching digits are cut: per page row from ``y0``, the first column of
    its right side (rows above and below it take its nearest end's column). The rules cut straight
    down; ``model_store.reading`` also cuts along a path that bends around the strokes."""

    y0: int
    xs: np.ndarray  # int, page columns

    @classmethod
    def straight(cls, x: int) -> Seam:
        return cls(0, np.array([x]))

    @property
    def x(self) -> float:
        """Its mean column: where it sits among the pieces."""
        return float(self.xs.mean())

    def right_of(self, y0: int, y1: int, x0: int, x1: int) -> np.ndarray:
        """Bool, broadcasting to (y1 - y0, x1 - x0): the pixels of that window on its right side."""
        if self.xs.size == 1:  # straight: one row serves them all
            return np.arange(x0, x1)[None, :] >= self.xs[0]
        xs = self.xs[np.clip(np.arange(y0 - self.y0, y1 - self.y0), 0, self.xs.size - 1)]
        return np.arange(x0, x1)[None, :] >= xs[:, None]


def between(left: Seam, right: Seam, y0: int, y1: int, x0: int, x1: int) -> np.ndarray:
    """Bool, broadcasting to (y1 - y0, x1 - x0): the pixels of that window between two seams."""
    return left.right_of(y0, y1, x0, x1) & ~right.right_of(y0, y1, x0, x1)


@dataclass(slots=True)
class Part:
    """A set of component labels (one digit, a digit still to split, or one stroke) and its extent."""

    labels: list[int]
    x0: int
    y0: int
    x1: int  # exclusive
    y1: int
    area: int
    cut: tuple[Seam, Seam] | None = None  # the seams on its left and right when a stroke was cut
    stroke: int | None = None  # one pen stroke of a drawing (``Page.pen``): its own pixels, not its labels'

    def own_pixels(self, labels: np.ndarray) -> np.ndarray:
        """Bool (height, width): the pixels of its labels in its box."""
        return np.isin(labels[self.y0 : self.y1, self.x0 : self.x1], self.labels)

    def within_cut(self, y0: int, y1: int, x0: int, x1: int) -> np.ndarray | None:
        """Bool, broadcasting to (y1 - y0, x1 - x0): the pixels of that window between its seams
        (None: not cut)."""
        return None if self.cut is None else between(*self.cut, y0, y1, x0, x1)

    @property
    def width(self) -> int:
        return self.x1 - self.x0

    @property
    def height(self) -> int:
        return self.y1 - self.y0

    def absorb(self, other: Part) -> None:
        self.labels += other.labels
        self.x0, self.y0 = min(self.x0, other.x0), min(self.y0, other.y0)
        self.x1, self.y1 = max(self.x1, other.x1), max(self.y1, other.y1)
        self.area += other.area


def column_piece(part: Part, mask: np.ndarray, a: int, b: int) -> Part | None:
    """Columns a..b of a part (its rows trimmed to the ink there)."""
    if b <= a:
        return None
    return piece_between(part, mask, Seam.straight(part.x0 + a), Seam.straight(part.x0 + b))


def piece_between(part: Part, mask: np.ndarray, left: Seam, right: Seam) -> Part | None:
    """The ink of a part (``mask``: its pixels within its box) between two seams, in a box trimmed
    to that ink (for one connected stroke cut straight down, that is its column window)."""
    sub = mask & between(left, right, part.y0, part.y1, part.x0, part.x1)
    rows, cols = np.flatnonzero(sub.any(axis=1)), np.flatnonzero(sub.any(axis=0))
    if rows.size == 0:
        return None
    x0, y0 = part.x0 + int(cols[0]), part.y0 + int(rows[0])
    x1, y1 = part.x0 + int(cols[-1]) + 1, part.y0 + int(rows[-1]) + 1
    return Part(list(part.labels), x0, y0, x1, y1, int(sub.sum()), cut=(left, right), stroke=part.stroke)
