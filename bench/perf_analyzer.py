"""`python -m bench.perf_analyzer`: the service measured by NVIDIA's own load generator for Triton,
perf_analyzer (shipped in the tritonclient wheel), over REST and gRPC, with a tensor and with a PNG, and
a tensor over gRPC's streaming extension (``--streaming``).
It reads the model's configuration and statistics (Triton's extensions), so its report splits the
server's time into queue, compute and the rest, as it does for Triton.

    python -m bench.perf_analyzer --workers 2 --concurrency 1,16,64

Prints a table and writes bench/results/perf_analyzer.{json,md}. perf_analyzer is C++ (its client
costs less CPU than the Python clients of bench.grpc), but it still shares the machine's cores.
"""

from __future__ import annotations

import argparse
import base64
import csv
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from testkit.images import png_bytes
from testkit.server import ServiceProcess

from .route_sweep import ROUTES, add_service_arguments, serve, sweep, write_run

# and Triton's streaming gRPC (ModelStreamInfer): each of perf_analyzer's clients keeps one stream open
PERF_ROUTES = (*ROUTES, "grpc-stream tensor")

# what perf_analyzer needs on a machine without the CUDA toolkit (it links libcudart even on CPU)
MISSING_LIBRARY_HELP = {
    "libb64": "apt-get install libb64-0d",
    "libcudart": "pip install nvidia-cuda-runtime-cu12 (a dev extra), or a CUDA 12 toolkit's",
}


def get_args_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench.perf_analyzer", description=__doc__.split("\n\n")[0])
    add_service_arguments(p)
    p.add_argument("--seconds", type=float, default=3.0, help="measurement window (default 3)")
    p.add_argument("--perf-analyzer", default=None, help="the binary (default: perf_analyzer on PATH)")
    return p


def perf_analyzer_env() -> dict[str, str]:
    """The environment perf_analyzer starts in: libcudart.so.12 from the nvidia-cuda-runtime-cu12 wheel
    (a dev extra) on LD_LIBRARY_PATH where no CUDA toolkit provides it."""
    env = dict(os.environ)
    try:
        import nvidia.cuda_runtime  # type: ignore[import-not-found]
    except ImportError:
        return env
    libs = [str(Path(p) / "lib") for p in nvidia.cuda_runtime.__path__]
    env["LD_LIBRARY_PATH"] = os.pathsep.join([*libs, *filter(None, [env.get("LD_LIBRARY_PATH")])])
    return env


def find_binary(given: str | None) -> tuple[str, str]:
    """The perf_analyzer binary and its version, checked to start; SystemExit saying what is missing
    otherwise."""
    path = given or shutil.which("perf_analyzer") or str(Path(sys.executable).with_name("perf_analyzer"))
    if not Path(path).exists():
        raise SystemExit("perf_analyzer not found: the tritonclient wheel ships it")
    probe = subprocess.run([path, "--version"], capture_output=True, text=True, env=perf_analyzer_env())
    if "error while loading shared libraries" in probe.stderr:
        fixes = "; ".join(fix for lib, fix in MISSING_LIBRARY_HELP.items() if lib in probe.stderr)
        raise SystemExit(f"perf_analyzer cannot start: {probe.stderr.strip()}\n  fix: {fixes}")
    return path, probe.stdout.strip() or os.path.basename(path)


def input_data(tensor: np.ndarray, png: bytes) -> dict[str, dict]:
    """perf_analyzer's --input-data for each input: a 28x28 UINT8 tensor (white on black), and a picture
    (a BYTES element, given as base64 of its serialised form: 4-byte little-endian length, then the bytes).
    docs/examples/perf-seven-*.json are these for seven.png (tests/bench checks they still are)."""
    pixels = {"content": tensor.astype(np.uint8).ravel().tolist(), "shape": [28, 28]}
    serialised = base64.b64encode(struct.pack("<I", len(png)) + png).decode()
    return {
        "tensor": {"data": [{"image": pixels}]},
        "png": {"data": [{"image_bytes": {"b64": serialised, "shape": [1]}}]},
    }


def input_files(digit: np.ndarray, where: Path) -> dict[str, Path]:
    """``input_data`` for an MNIST digit and its PNG, written under ``where``."""
    paths = {}
    for kind, data in input_data(digit, png_bytes(digit)).items():
        paths[kind] = where / f"{kind}.json"
        paths[kind].write_text(json.dumps(data))
    return paths


def measure(binary: str, server: ServiceProcess, model: str, route: str, data: Path, concurrency: int,
            seconds: float, where: Path) -> dict[str, float]:  # fmt: skip
    protocol, _ = route.split()
    url = server.url.removeprefix("http://") if protocol == "rest" else server.grpc_target
    report = where / f"{route.replace(' ', '-')}-{concurrency}.csv"
    cmd = [
        binary, "-m", model, "-u", url, "-i", "http" if protocol == "rest" else "grpc",
        *(["--streaming"] if protocol == "grpc-stream" else []),
        "--input-data", str(data), "--concurrency-range", str(concurrency),
        # stable when three windows' mean latencies lie within 50%: a shared 2-core machine is noisy
        "--measurement-interval", str(int(seconds * 1000)), "--stability-percentage", "50",
        "--max-trials", "10", "-f", str(report),
    ]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=perf_analyzer_env())
    if done.returncode != 0:
        why = done.stdout[-2000:] + done.stderr
        raise SystemExit(f"perf_analyzer failed ({route} @{concurrency}):\n{why}")
    with report.open() as f:
        row = next(csv.DictReader(f))
    us = {key: float(value) for key, value in row.items() if key and value and key != "Concurrency"}
    return {
        "req_s": us["Inferences/Second"],
        "p50_ms": us["p50 latency"] / 1000,
        "p99_ms": us["p99 latency"] / 1000,
        "server_queue_ms": us["Server Queue"] / 1000,
        "server_compute_ms": us["Server Compute Infer"] / 1000,
    }


def table(rows: list[dict]) -> str:
    lines = [
        "| route | in flight | req/s | p50 | p99 | server: queue | server: compute |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['route']} | {r['concurrency']} | {r['req_s']:,.0f} | {r['p50_ms']:.2f} ms "
            f"| {r['p99_ms']:.2f} ms | {r['server_queue_ms']:.2f} ms | {r['server_compute_ms']:.2f} ms |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = get_args_parser().parse_args(argv)
    binary, version = find_binary(args.perf_analyzer)
    with tempfile.TemporaryDirectory() as tmp, serve(args) as served:
        where = Path(tmp)
        data = input_files(served.digit, where)

        def run(route: str, concurrency: int) -> dict[str, float]:
            data_file = data[route.split()[1]]
            return measure(
                binary, served.server, args.model, route, data_file, concurrency, args.seconds, where
            )

        rows = sweep(args.concurrency, run, PERF_ROUTES)
    text = table(rows)
    print(text)
    write_run(
        args, "perf_analyzer", "perf_analyzer", argv, text, **served.facts, perf_analyzer=version, rows=rows
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
