"""`python -m bench.perf_analyzer` runs end to end where tritonclient's perf_analyzer starts: NVIDIA's
load generator reads the models' configuration, sends tensors and PNGs over REST and gRPC, and reads the
server's statistics (its queue and compute columns come from them)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


def test_perf_analyzer_measures_every_route(shipped_store: Path, tmp_path: Path) -> None:
    from bench import perf_analyzer

    try:
        perf_analyzer.find_binary(None)
    except SystemExit as exc:
        pytest.skip(str(exc))
    argv = ["--store", str(shipped_store), "--device", "cpu", "--workers", "1", "--seconds", "0.5",
            "--concurrency", "2", "--out", str(tmp_path)]  # fmt: skip
    assert perf_analyzer.main(argv) == 0
    rows = json.loads((tmp_path / "perf_analyzer.json").read_text())["rows"]
    assert [r["route"] for r in rows] == list(perf_analyzer.ROUTES)
    assert all(r["req_s"] > 0 and r["server_compute_ms"] > 0 for r in rows), rows
    assert "| grpc png | 2 |" in (tmp_path / "perf_analyzer.md").read_text()
