"""`python -m bench.grpc` runs end to end: every route answers, and the table and JSON are written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("tritonclient.grpc")


def test_the_grpc_bench_measures_every_route(shipped_store: Path, tmp_path: Path) -> None:
    from bench import grpc
    from bench.route_sweep import ROUTES

    argv = ["--store", str(shipped_store), "--device", "cpu", "--workers", "1", "--seconds", "0.3",
            "--concurrency", "2", "--out", str(tmp_path)]  # fmt: skip
    assert grpc.main(argv) == 0
    rows = json.loads((tmp_path / "grpc.json").read_text())["rows"]
    assert [r["route"] for r in rows] == list(ROUTES)
    assert all(r["req_s"] > 0 and r["errors"] == 0 for r in rows), rows
    assert "| grpc png | 2 |" in (tmp_path / "grpc.md").read_text()
