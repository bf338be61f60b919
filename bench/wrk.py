"""wrk (C, epoll) as the load generator: the same closed loop as bench.loadgen at a fraction of the
client CPU per request; needs `wrk` on PATH (`apt-get install wrk`). Answers in run_loadgen's shape."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from .loadgen import Target

# wrk runs Lua: the body is read from a file (it may be binary), done() prints the summary as JSON.
SCRIPT = """
local f = io.open("{body}", "rb"); wrk.body = f:read("*a"); f:close()
wrk.method = "{method}"
{headers}
done = function(s, latency, requests)
  local e = s.errors
  io.write(string.format('WRK {{"requests": %d, "duration_us": %d, "non_2xx": %d, "connect": %d, ' ..
    '"read": %d, "write": %d, "timeout": %d, "p50_us": %d, "p95_us": %d, "p99_us": %d, "mean_us": %f}}\\n',
    s.requests, s.duration, e.status, e.connect, e.read, e.write, e.timeout, latency:percentile(50),
    latency:percentile(95), latency:percentile(99), latency.mean))
end
"""


def available() -> bool:
    return shutil.which("wrk") is not None


def _run(port: int, target: Target, concurrency: int, seconds: float, threads: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        body = Path(tmp) / "body"
        body.write_bytes(target.body)
        headers = "\n".join(f'wrk.headers["{k}"] = "{v}"' for k, v in target.headers.items())
        script = Path(tmp) / "target.lua"
        script.write_text(SCRIPT.format(body=body, method=target.method, headers=headers))
        cmd = ["wrk", f"-t{threads}", f"-c{concurrency}", f"-d{max(1, round(seconds))}s", "--timeout", "30s"]
        cmd += ["-s", str(script), f"http://127.0.0.1:{port}{target.path}"]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 120)
    found = re.search(r"^WRK (.*)$", done.stdout, re.M)
    if done.returncode != 0 or not found:
        raise RuntimeError(f"wrk failed ({done.returncode}): {done.stdout[-1500:]}{done.stderr[-1500:]}")
    return json.loads(found.group(1))


def run_wrk(
    port: int, target: Target, concurrency: int, warmup: float, duration: float, threads: int
) -> dict:
    """A warm-up run (discarded), then the measured one. wrk counts whole seconds and reports
    statuses only as 2xx/3xx versus the rest."""
    threads = max(1, min(threads, concurrency))
    if warmup > 0:
        _run(port, target, concurrency, warmup, threads)
    r = _run(port, target, concurrency, duration, threads)
    seconds = r["duration_us"] / 1e6
    errors = {k: r[k] for k in ("connect", "read", "write", "timeout") if r[k]}
    ok = r["requests"] - r["non_2xx"]
    return {
        "requests": r["requests"],
        "ok": ok,
        "status": {"2xx/3xx": ok, **({"other": r["non_2xx"]} if r["non_2xx"] else {})},
        "errors": errors,
        "rps": r["requests"] / seconds,
        "ok_per_s": ok / seconds,
        "p50_ms": r["p50_us"] / 1e3,
        "p95_ms": r["p95_us"] / 1e3,
        "p99_ms": r["p99_us"] / 1e3,
        "mean_ms": r["mean_us"] / 1e3,
        "loop": "wrk",
        "loadgen_procs": threads,
    }
