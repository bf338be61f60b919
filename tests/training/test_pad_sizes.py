"""Digits written small and large on the page's pad (training.pad_sizes): sent with the page's pen, read
and not flagged by the shipped models at every height; the marker alone would blot the small ones."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image

from training.pad_sizes import (
    HEIGHTS,
    LINE_HEIGHTS,
    PENS,
    markdown,
    pad_sizes_check,
    size_uploads,
    two_line_uploads,
)


def _ink_rows(png: bytes) -> int:
    dark = np.asarray(Image.open(io.BytesIO(png)).convert("L")) < 128
    rows = np.flatnonzero(dark.any(axis=1))
    return int(rows[-1] - rows[0] + 1)


def test_uploads_are_seeded_and_as_tall_as_asked() -> None:
    small = size_uploads(0.12, 2, seed=0)
    assert set(small) == set(PENS) and all(len(v) == 20 for v in small.values())
    assert small == size_uploads(0.12, 2, seed=0) and small != size_uploads(0.12, 2, seed=1)
    for sent, marker in zip(small["sent"], small["marker"], strict=True):
        # centre lines 0.12 of 280 px tall (34 px, a little less where a curve cuts a corner), each pen
        # adding its width: 0.15 of that (5 px) as sent, 21 px with the marker
        assert 32 <= _ink_rows(sent) <= 34 + 7
        assert 13 <= _ink_rows(marker) - _ink_rows(sent) <= 19


def test_two_line_uploads_are_seeded_numbers_on_the_wide_pad() -> None:
    uploads, texts = two_line_uploads(0.15, 3, seed=0)
    assert set(uploads) == set(PENS) and all(len(v) == 3 for v in uploads.values())
    assert (uploads, texts) == two_line_uploads(0.15, 3, seed=0)
    for text in texts:
        lines = text.split("\n")
        assert len(lines) == 2 and all(2 <= len(line) <= 4 and line.isdigit() for line in lines)
    assert Image.open(io.BytesIO(uploads["sent"][0])).size == (840, 280)


def test_shipped_models_read_small_writing_sent_as_the_page_sends_it(shipped_heads) -> None:
    result = pad_sizes_check(shipped_heads, per_digit=10, seed=0)
    assert list(result["heights"]) == [str(h) for h in HEIGHTS]
    for height, row in result["heights"].items():
        for model in shipped_heads:
            assert row["sent"][model]["read"] >= 0.93, (height, model, row)
            assert row["sent"][model]["not_a_digit"] <= 0.03, (height, model, row)
    smallest = result["heights"][str(HEIGHTS[0])]["marker"]
    assert all(smallest[m]["not_a_digit"] >= 0.5 for m in shipped_heads), smallest  # why the pen is finer
    assert list(result["two_lines"]) == [str(h) for h in LINE_HEIGHTS]
    for height, row in result["two_lines"].items():
        assert all(row["sent"][m] >= 0.9 for m in shipped_heads), (height, row)
    assert all(result["two_lines"][str(LINE_HEIGHTS[0])]["marker"][m] <= 0.5 for m in shipped_heads)
    table = markdown(result, list(shipped_heads))
    assert table.count("\n") == len(HEIGHTS) + len(LINE_HEIGHTS) + 4 and "| 12% of the pad |" in table
