"""`python -m bench.perf_analyzer` runs end to end where tritonclient's perf_analyzer starts: NVIDIA's
load generator reads the models' configuration, sends tensors and PNGs over REST and gRPC, and reads the
server's statistics (its queue and compute columns come from them)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"


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
    assert [r["route"] for r in rows] == list(perf_analyzer.PERF_ROUTES)
    assert rows[-1]["route"] == "grpc-stream tensor"
    assert all(r["req_s"] > 0 and r["server_compute_ms"] > 0 for r in rows), rows
    assert "| grpc png | 2 |" in (tmp_path / "perf_analyzer.md").read_text()
    assert "| grpc-stream tensor | 2 |" in (tmp_path / "perf_analyzer.md").read_text()


def test_the_example_input_files_are_seven_png_as_the_bench_writes_them() -> None:
    """docs/examples/perf-seven-{tensor,png}.json, for perf_analyzer by hand: seven.png preprocessed as an
    upload is (the tensor), and seven.png itself (the picture)."""
    from bench.perf_analyzer import input_data
    from model_store.preprocess import preprocess_bytes

    png = (EXAMPLES / "seven.png").read_bytes()
    tensor = np.round(np.asarray(preprocess_bytes(png, 25_000_000)) * 255).reshape(28, 28)
    for kind, data in input_data(tensor, png).items():
        assert json.loads((EXAMPLES / f"perf-seven-{kind}.json").read_text()) == data, kind
