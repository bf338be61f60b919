"""The served service under load: phases of (endpoint, payload, concurrency) against one server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from testkit.http import multipart_body
from testkit.images import png_bytes
from testkit.metrics import total
from testkit.server import REPO_ROOT, PeakMemory, ServiceProcess

from .loadgen import Target
from .samples import pixels_list
from .wrk import run_wrk


@dataclass
class Phase:
    label: str  # "batched", "unbatched", "noop"
    model: str | None
    payload: str  # noop | png | pixels | multipart | batch-png | batch-pixels
    concurrency: int


def make_target(payload: str, model: str | None, digits: np.ndarray, batch_images: int) -> Target:
    if payload == "noop":
        return Target("GET", "/v1/noop")
    base = f"/v1/models/{model}/predict"
    digit = digits[0]
    if payload == "png":
        return Target("POST", base, {"Content-Type": "image/png"}, png_bytes(digit))
    if payload == "pixels":
        body = json.dumps({"pixels": pixels_list(digit)}, separators=(",", ":")).encode()
        return Target("POST", base, {"Content-Type": "application/json"}, body)
    if payload == "multipart":
        body, ctype = multipart_body([("file", "digit.png", png_bytes(digit), "image/png")])
        return Target("POST", base, {"Content-Type": ctype}, body)
    picks = [digits[i % len(digits)] for i in range(batch_images)]
    if payload == "batch-png":
        body, ctype = multipart_body(
            [("files", f"d{i}.png", png_bytes(d), "image/png") for i, d in enumerate(picks)]
        )
        return Target("POST", base + "/batch", {"Content-Type": ctype}, body)
    if payload == "batch-pixels":
        body = json.dumps({"pixels": [pixels_list(d) for d in picks]}, separators=(",", ":")).encode()
        return Target("POST", base + "/batch", {"Content-Type": "application/json"}, body)
    raise ValueError(f"unknown payload {payload!r}")


def percentile(sorted_values: list[float], q: float) -> float | None:
    if not sorted_values:
        return None
    idx = min(len(sorted_values) - 1, max(0, round(q / 100 * (len(sorted_values) - 1))))
    return sorted_values[idx]


def run_loadgen(
    port: int, target: Target, concurrency: int, warmup: float, duration: float, procs: int, client: str
) -> dict:
    """Run the load generator in `procs` separate processes (connections split between them), merged."""
    procs = max(1, min(procs, concurrency))
    shares = [concurrency // procs + (1 if i < concurrency % procs else 0) for i in range(procs)]
    start_at = time.time() + 0.4 + 0.1 * procs  # every process starts its clock together
    children = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, share in enumerate(shares):
            spec = {
                "host": "127.0.0.1",
                "port": port,
                "target": target.to_json(),
                "concurrency": share,
                "warmup_s": warmup,
                "duration_s": duration,
                "start_at": start_at,
                "client": client,
            }
            path = Path(tmp) / f"spec{i}.json"
            path.write_text(json.dumps(spec))
            cmd = [sys.executable, "-m", "bench.loadgen", str(path)]
            children.append(
                subprocess.Popen(cmd, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            )
        results = []
        for child in children:
            out, err = child.communicate(timeout=warmup + duration + 120)
            if child.returncode != 0:
                raise RuntimeError(f"load generator failed ({child.returncode}): {err.decode()[-2000:]}")
            results.append(json.loads(out))
    latencies = sorted(x for r in results for x in r["latencies"])
    status: dict[str, int] = {}
    errors: dict[str, int] = {}
    for r in results:
        for k, v in r["status"].items():
            status[k] = status.get(k, 0) + v
        for k, v in r["errors"].items():
            errors[k] = errors.get(k, 0) + v
    ok = status.get("200", 0)
    return {
        "requests": len(latencies),
        "ok": ok,
        "status": status,
        "errors": errors,
        "rps": len(latencies) / duration,
        "ok_per_s": ok / duration,
        "p50_ms": _ms(percentile(latencies, 50)),
        "p95_ms": _ms(percentile(latencies, 95)),
        "p99_ms": _ms(percentile(latencies, 99)),
        "mean_ms": _ms(sum(latencies) / len(latencies)) if latencies else None,
        "loop": results[0].get("loop"),
        "loadgen_procs": procs,
    }


def _ms(x: float | None) -> float | None:
    return None if x is None else x * 1e3


def run_phase(
    server: ServiceProcess,
    phase: Phase,
    digits,
    *,
    warmup: float,
    duration: float,
    procs: int,
    client: str,
    batch_images: int,
) -> dict:
    target = make_target(phase.payload, phase.model, digits, batch_images)
    before = server.metrics() if phase.model else None
    load_before = os.getloadavg()[0]
    with PeakMemory(server.proc.pid) as memory:  # the whole process tree, at its peak during the load
        if client == "wrk":
            res = run_wrk(server.port, target, phase.concurrency, warmup, duration, threads=procs)
        else:
            res = run_loadgen(server.port, target, phase.concurrency, warmup, duration, procs, client)
    row = {
        "label": phase.label,
        "model": phase.model,
        "payload": phase.payload,
        "concurrency": phase.concurrency,
        "images_per_request": batch_images if phase.payload.startswith("batch") else 1,
        **res,
        "load_avg_1m_before": round(load_before, 2),
        "server_rss_mb": memory.peak.get("rss_mb"),
        "server_pss_mb": memory.peak.get("pss_mb"),
    }
    row["images_per_s"] = row["ok_per_s"] * row["images_per_request"]
    if phase.model:
        after = server.metrics()

        def grew(name: str) -> float:
            return total(after, name, model=phase.model) - total(before, name, model=phase.model)

        d_sum, d_cnt = grew("vit_digits_batch_size_sum"), grew("vit_digits_batch_size_count")
        d_inf, d_exe = grew("vit_digits_inference_count"), grew("vit_digits_execution_count")
        row["mean_batch_size"] = d_sum / d_cnt if d_cnt else None
        row["executions"] = d_exe or d_cnt
        row["inferences"] = d_inf or d_sum
    return row


def fmt_row(row: dict) -> str:
    mb = row.get("mean_batch_size")
    return (
        f"{row['label']:>9} {row['payload']:>12} {row['model'] or '-':>10} c={row['concurrency']:<4}"
        f" {row['ok_per_s']:9.1f} ok/s  p50 {row['p50_ms'] or 0:7.2f}  p99 {row['p99_ms'] or 0:7.2f} ms"
        f"  batch {mb if mb is not None else float('nan'):5.1f}  status {row['status']}"
        + (f" errors {row['errors']}" if row["errors"] else "")
    )
