"""``read-eval`` end to end on the shipped checkpoints: the exact-read table, the target line, and with
``--hints`` the table of how often ``/predict`` names a number sent as one digit."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from training.cli import main


def test_read_eval_prints_the_reads_and_the_hints(shipped_store: Path, capsys) -> None:
    code = main(["read-eval", "--store-dir", str(shipped_store), "--device", "cpu",
                 "--families", "strokes", "fonts", "--count", "6", "--hints", "9"])  # fmt: skip
    assert code == 0
    out = capsys.readouterr().out
    for family in ("strokes", "fonts"):
        row = re.search(rf"^\| {family} \| 6 \| ([\d.]+)% \| ([\d.]+)% \|", out, re.MULTILINE)
        assert row is not None, out
        assert min(float(row[1]), float(row[2])) >= 5 / 6 * 100, row[0]  # exact reads, both models
    assert re.search(r"^cnn-mnist: strokes [\d.]+% \(target >= 97%: (pass|FAIL)\)$", out, re.MULTILINE)
    # The hint table: a row per number family and per family of pictures that are not numbers.
    assert "hinted right / wrong" in out
    for family in ("strokes", "fonts", "letters", "scribbles", "drawn digits"):
        assert re.search(rf"^\| {family} \|", out, re.MULTILINE), (family, out)


def test_hints_are_measured_on_the_served_split_only(shipped_store: Path) -> None:
    with pytest.raises(SystemExit, match="--hints measures the service's split"):
        main(["read-eval", "--store-dir", str(shipped_store), "--families", "strokes", "--count", "2",
              "--hints", "1", "--rules-only"])  # fmt: skip
