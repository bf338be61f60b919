"""Labelling connected marks (``model_store.components``) against a plain flood fill."""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest

from model_store.components import Runs, label_components, row_runs


def flood_labels(mask: np.ndarray) -> np.ndarray:
    """8-connected components by breadth-first search, numbered in the order their first pixels come row
    by row: what ``label_components`` promises, spelled out the slow way."""
    h, w = mask.shape
    labels = np.zeros((h, w), dtype=np.int32)
    n = 0
    for r, c in zip(*np.nonzero(mask), strict=True):
        if labels[r, c]:
            continue
        n += 1
        labels[r, c] = n
        todo = deque([(r, c)])
        while todo:
            y, x = todo.popleft()
            for dy in (-1, 0, 1):
                for dx in (-1, 0, 1):
                    v, u = y + dy, x + dx
                    if 0 <= v < h and 0 <= u < w and mask[v, u] and not labels[v, u]:
                        labels[v, u] = n
                        todo.append((v, u))
    return labels


def masks() -> list[np.ndarray]:
    """Random masks of every density and size (blocky ones too), a snake whose one component winds
    through every row, and the empty and full cases."""
    rng = np.random.default_rng(0)
    out = []
    for _ in range(150):
        h, w = rng.integers(1, 40, 2)
        mask = rng.random((h, w)) < rng.random()
        if rng.random() < 0.3:
            mask = np.kron(mask, np.ones((2, 3), dtype=bool))
        out.append(mask)
    snake = np.zeros((41, 30), dtype=bool)
    snake[::4] = True
    for r in range(0, 37, 4):
        snake[r : r + 4, -1 if r % 8 == 0 else 0] = True
    return [*out, snake, np.zeros((5, 7), dtype=bool), np.ones((6, 4), dtype=bool)]


@pytest.mark.parametrize("mask", masks())
def test_labels_are_a_flood_fills(mask: np.ndarray) -> None:
    labels, n = label_components(mask)
    expected = flood_labels(mask)
    assert labels.dtype == np.int32
    assert n == expected.max()
    np.testing.assert_array_equal(labels, expected)


@pytest.mark.parametrize("mask", masks()[::10])
def test_runs_give_each_components_size_box_and_pixels(mask: np.ndarray) -> None:
    labels = flood_labels(mask)
    runs = Runs.of(mask)
    rows, starts, ends = row_runs(mask)
    assert (runs.ends - runs.starts).sum() == mask.sum() == (ends - starts).sum()
    np.testing.assert_array_equal(
        runs.sizes(), np.bincount(labels.ravel(), minlength=runs.n + 1) * (np.arange(runs.n + 1) > 0)
    )
    for k in range(1, runs.n + 1):
        (r0, r1, c0, c1), inside = runs.region(k)
        rr, cc = np.nonzero(labels == k)
        assert (r0, r1, c0, c1) == (rr.min(), rr.max() + 1, cc.min(), cc.max() + 1)
        np.testing.assert_array_equal(inside, labels[r0:r1, c0:c1] == k)
