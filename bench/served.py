"""The served service under load: phases of (endpoint, payload, concurrency) against one server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .loadgen import Target
from .samples import encode_png, pixels_list
from .server import REPO_ROOT, Server, metric


@dataclass
class Phase:
    label: str  # "batched", "unbatched", "noop"
    model: str | None
    payload: str  # noop | png | pixels | multipart | batch-png | batch-pixels
    concurrency: int


def multipart(fields: list[tuple[str, str, bytes, str]]) -> tuple[bytes, str]:
    """(field, filename, content, content type) parts -> (body, Content-Type header)."""
    boundary = "bench" + uuid.uuid4().hex
    out = b""
    for name, filename, content, ctype in fields:
        out += (
            (
                f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; filename="{filename}"\r\n'
                f"Content-Type: {ctype}\r\n\r\n"
            ).encode()
            + content
            + b"\r\n"
        )
    out += f"--{boundary}--\r\n".encode()
    return out, f"multipart/form-data; boundary={boundary}"


def make_target(payload: str, model: str | None, digits: np.ndarray, batch_images: int) -> Target:
    if payload == "noop":
        return Target("GET", "/v1/noop")
    base = f"/v1/models/{model}/predict"
    digit = digits[0]
    if payload == "png":
        return Target("POST", base, {"Content-Type": "image/png"}, encode_png(digit))
    if payload == "pixels":
        body = json.dumps({"pixels": pixels_list(digit)}, separators=(",", ":")).encode()
        return Target("POST", base, {"Content-Type": "application/json"}, body)
    if payload == "multipart":
        body, ctype = multipart([("file", "digit.png", encode_png(digit), "image/png")])
        return Target("POST", base, {"Content-Type": ctype}, body)
    picks = [digits[i % len(digits)] for i in range(batch_images)]
    if payload == "batch-png":
        body, ctype = multipart(
            [("files", f"d{i}.png", encode_png(d), "image/png") for i, d in enumerate(picks)]
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
    server: Server, target: Target, concurrency: int, warmup: float, duration: float, procs: int, client: str
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
                "port": server.port,
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
    server: Server,
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
    res = run_loadgen(server, target, phase.concurrency, warmup, duration, procs, client)
    row = {
        "label": phase.label,
        "model": phase.model,
        "payload": phase.payload,
        "concurrency": phase.concurrency,
        "images_per_request": batch_images if phase.payload.startswith("batch") else 1,
        **res,
        "load_avg_1m_before": round(load_before, 2),
        "server_rss_mb": server.rss_mb(),
    }
    row["images_per_s"] = row["ok_per_s"] * row["images_per_request"]
    if phase.model:
        after = server.metrics()
        m = {"model": phase.model}
        d_sum = metric(after, "vit_digits_batch_size_sum", **m) - metric(
            before, "vit_digits_batch_size_sum", **m
        )
        d_cnt = metric(after, "vit_digits_batch_size_count", **m) - metric(
            before, "vit_digits_batch_size_count", **m
        )
        d_inf = metric(after, "vit_digits_inference_count", **m) - metric(
            before, "vit_digits_inference_count", **m
        )
        d_exe = metric(after, "vit_digits_execution_count", **m) - metric(
            before, "vit_digits_execution_count", **m
        )
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
