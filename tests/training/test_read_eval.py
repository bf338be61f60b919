"""``read-eval`` end to end on the shipped checkpoints: the exact-read table, the target line, and with
``--hints`` the table of how often ``/predict`` names a number sent as one digit."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from training.cli import main
from training.numbers import make_drawings, make_family
from training.read_eval import not_number_markdown


def test_read_eval_prints_the_reads_and_the_hints(shipped_store: Path, capsys) -> None:
    code = main(["read-eval", "--store-dir", str(shipped_store), "--device", "cpu", "--families", "strokes",
                 "fonts", "--count", "6", "--hints", "9", "--not-numbers", "3"])  # fmt: skip
    assert code == 0
    out = capsys.readouterr().out
    for family in ("strokes", "fonts"):
        row = re.search(rf"^\| {family} \| 6 \| ([\d.]+)% \| ([\d.]+)% \|", out, re.MULTILINE)
        assert row is not None, out
        assert min(float(row[1]), float(row[2])) >= 5 / 6 * 100, row[0]  # exact reads, both models
    assert re.search(r"^cnn-mnist: strokes [\d.]+% \(target >= 97%: (pass|FAIL)\)$", out, re.MULTILINE)
    # How sure each reading is, per family (as strokes too), and per model its calibration.
    assert "How sure each reading is" in out
    for family in ("strokes", "strokes, sent as strokes", "fonts"):
        assert re.search(rf"^\| {family} \| [\d.]+ / [\d.]+ \| [\d.]+ / [\d.]+ \|$", out, re.MULTILINE), out
    assert re.search(r"^vit-mnist: 18 readings, .* calibration error [\d.]+, AUROC", out, re.MULTILINE), out
    # Pictures that are not numbers: per family, how many were read as no number, and how many as a number
    # and how surely; the pen's words and lone letters as strokes too.
    assert "Pictures that are not numbers" in out
    for family in ("letters", "scenes", "words", "pen_words", "pen_words, sent as strokes", "lone_letters",
                   "lone_letters, sent as strokes", "**all**"):  # fmt: skip
        count = 39 if family == "**all**" else 3
        assert re.search(
            rf"^\| {re.escape(family)} \| {count} \|( [\d.]+% \|){{3}} ([\d.]+|-) \|", out, re.MULTILINE
        ), (family, out)
    # The hint table: a row per number family (a pen family sent as strokes too) and per family of
    # pictures that are not numbers (letters and digits drawn on the pad, sent as strokes, too).
    assert "hinted right / wrong" in out
    for family in ("strokes", "strokes, sent as strokes", "fonts", "letters", "scribbles", "scenes",
                   "drawn digits", "faces", "letters drawn on the pad (`pen_letters`), sent as strokes",
                   "letters in other shapes (`other_letters`), sent as strokes",
                   "digits drawn on the pad, sent as strokes"):  # fmt: skip
        assert re.search(rf"^\| {re.escape(family)} \| \d+ \|", out, re.MULTILINE), (family, out)


def test_the_cropped_family_is_cut_flush_to_the_ink_either_polarity() -> None:
    samples = make_family("cropped", 20, seed=0)
    assert [t for _, t in samples] == [t for _, t in make_family("cropped", 20, seed=0)]
    light_on_dark = 0
    for img, text in samples:
        ground = np.median(np.concatenate([img[0], img[-1], img[:, 0], img[:, -1]]))
        light_on_dark += ground < 128
        ink = np.abs(img.astype(np.float32) - (0 if ground < 128 else 255)) > 100
        rows, cols = np.flatnonzero(ink.any(axis=1)), np.flatnonzero(ink.any(axis=0))
        margin = 0.05 * img.shape[0] + 1  # 2% of the writing's height, and the resampling's blur
        assert rows[0] <= margin and img.shape[0] - 1 - rows[-1] <= margin, text
        assert cols[0] <= margin and img.shape[1] - 1 - cols[-1] <= margin, text
    assert 0 < light_on_dark < len(samples)


def test_hints_are_measured_on_the_served_split_only(shipped_store: Path) -> None:
    with pytest.raises(SystemExit, match="--hints measures the service's split"):
        main(["read-eval", "--store-dir", str(shipped_store), "--families", "strokes", "--count", "2",
              "--hints", "1", "--rules-only"])  # fmt: skip


def test_the_drawn_families_are_the_pictures_numbers_sent_as_strokes() -> None:
    """``strokes``, ``touching`` and ``hands`` as strokes are the very numbers their pictures show;
    ``marks`` as strokes are numbers with punctuation, all written with the pen."""
    for family in ("strokes", "touching", "hands"):
        pictures, drawings = make_family(family, 8, seed=3), make_drawings(family, 8, seed=3)
        assert [t for _, t in pictures] == [t for _, t in drawings], family
    marks = make_drawings("marks", 20, seed=3)
    assert all(not t.isdigit() for _, t in marks)
    with pytest.raises(ValueError, match="not drawn with the pen alone"):
        make_drawings("fonts", 1)


def test_the_not_number_table_counts_every_picture_once() -> None:
    """Five pictures: one read as no number, four read as some text with these confidences; a checkpoint
    without a digit score gets no confidence, so no figures."""
    confidences, none_read = np.array([0.9, 0.6, 0.1, 0.2]), np.array([False, True, False, False, False])
    rows = {"letters": {"a": (confidences, none_read), "b": (np.empty(0), np.empty(0, bool))}}
    table = not_number_markdown(rows, ["a", "b"]).splitlines()
    assert table[0].startswith("| not a number | pictures | a: no number | a: >= 0.5 | a: >= 0.9 | a: mean |")
    assert table[2] == "| letters | 5 | 20.0% | 40.0% | 20.0% | 0.450 | - | - | - | - |"
    assert table[3] == "| **all** | 5 | 20.0% | 40.0% | 20.0% | 0.450 | - | - | - | - |"
