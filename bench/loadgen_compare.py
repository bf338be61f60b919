"""Our load generator against wrk on the same running service, route and connection count, in one run:
requests/s reached and the client's own CPU seconds per 1000 requests (on a small box every cycle the
client spends is taken from the server, so the cheaper client measures the server more truly).

    python -m bench.loadgen_compare [--seconds 5] [--concurrency 1,64] [--rounds 2]

Writes bench/results/loadgen-compare.{json,md}. oha is not packaged for Debian bookworm; install it (or
wrk: `apt-get install wrk`) to have it measured, a missing tool is reported and skipped.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from testkit.server import REPO_ROOT, ServiceProcess

from .loadgen import Target
from .report import md_table
from .samples import load_digits
from .served import make_target, run_loadgen
from .store import resolve_store
from .wrk import available as wrk_available
from .wrk import run_wrk


def children_cpu_s() -> float:
    """CPU seconds of every child process that has exited and been waited for (the clients here)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def ours(client: str) -> Callable[[int, Target, int, float], dict]:
    def run(port: int, target: Target, concurrency: int, seconds: float) -> dict:
        res = run_loadgen(port, target, concurrency, 0.0, seconds, 1, client)
        return {key: res[key] for key in ("rps", "ok_per_s", "p50_ms", "p99_ms")}

    return run


def wrk(port: int, target: Target, concurrency: int, seconds: float) -> dict:
    res = run_wrk(port, target, concurrency, 0.0, seconds, 1)
    return {key: res[key] for key in ("rps", "ok_per_s", "p50_ms", "p99_ms")}


def measure(run: Callable, port: int, target: Target, concurrency: int, seconds: float) -> dict:
    cpu0, t0 = children_cpu_s(), time.perf_counter()
    row = run(port, target, concurrency, seconds)
    row["client_cpu_s"] = children_cpu_s() - cpu0
    row["wall_s"] = time.perf_counter() - t0
    return row


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.loadgen_compare", description=__doc__)
    p.add_argument("--seconds", type=float, default=5.0, help="measured seconds per run (5)")
    p.add_argument("--concurrency", default="1,64", help="connections (1,64)")
    p.add_argument("--rounds", type=int, default=2, help="alternating rounds of every client (2)")
    p.add_argument("--out", type=Path, default=REPO_ROOT / "bench" / "results", help="bench/results")
    args = p.parse_args(argv)

    clients = {"ours-raw": ours("raw"), "ours-httpx": ours("httpx")}
    missing = [tool for tool in ("wrk", "oha") if shutil.which(tool) is None]
    if wrk_available():
        clients["wrk"] = wrk
    store, store_desc = resolve_store(None, ["vit-mnist"])
    env = {"MODEL_STORE_DIR": str(store), "DEVICE": "cpu", "LOG_LEVEL": "warning", "MAX_QUEUE_SIZE": "4096"}
    with ServiceProcess(env, workers=None, uvicorn_args=("--log-level", "warning")) as server:
        rows = compare(server.port, clients, [int(c) for c in args.concurrency.split(",")], args)
    result = {"store": store_desc, "seconds": args.seconds, "missing_tools": missing, "rows": rows}
    result["load_avg_1m_after"] = round(os.getloadavg()[0], 2)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "loadgen-compare.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out / "loadgen-compare.md").write_text(markdown(result))
    return 0


def compare(port: int, clients: dict[str, Callable], concurrencies: list[int], args: argparse.Namespace):
    """Every client on every route and connection count, rounds alternating between the clients so
    that drift in the machine's load hits them all alike."""
    digits, _ = load_digits(1)
    routes = {
        "GET /v1/noop": make_target("noop", None, digits, 1),
        "POST png /v1/models/vit-mnist/predict": make_target("png", "vit-mnist", digits, 1),
    }
    # What starting a Python client costs (interpreter, imports) whatever it then sends: subtracted
    # below, so that the per-request figure is the client's steady cost. wrk's start is negligible.
    startup = {name: measure(run, port, routes["GET /v1/noop"], 1, 0.01)["client_cpu_s"]
               for name, run in clients.items() if name.startswith("ours")}  # fmt: skip
    rows = []
    for route, target in routes.items():
        measure(ours("raw"), port, target, 16, 1.0)  # warm the server up; not recorded
        for concurrency in concurrencies:
            for rnd in range(args.rounds):
                for name, run in clients.items():
                    row = measure(run, port, target, concurrency, args.seconds)
                    rows.append({"route": route, "concurrency": concurrency, "round": rnd, "client": name})
                    rows[-1].update(row, client_startup_cpu_s=startup.get(name, 0.0))
                    steady = row["client_cpu_s"] - startup.get(name, 0.0)
                    rows[-1]["client_cpu_ms_per_1000"] = 1e6 * steady / max(1.0, row["rps"] * args.seconds)
                    print(f"{route:40} c={concurrency:<3} {name:10} {row['ok_per_s']:8.0f} ok/s, client CPU "
                          f"{rows[-1]['client_cpu_ms_per_1000']:4.0f} ms/1000 req", flush=True)  # fmt: skip
    return rows


def markdown(result: dict) -> str:
    lines = [
        "# Load generators compared (same service, route and connections, one run)",
        "",
        f"Server: one uvicorn process, {result['store']}; {result['seconds']:g} s per run, rounds alternate "
        f"between clients. Not installed: {', '.join(result['missing_tools']) or 'none'}. Load average "
        f"after: {result['load_avg_1m_after']} (other jobs share this machine: numbers are noisy).",
        "",
        "Client CPU is what the client process used per 1000 requests, its start-up (interpreter and "
        "imports, measured once with an empty run) taken out.",
        "",
    ]
    lines += md_table(
        ["route", "clients", "client", "round", "ok req/s", "p50 ms", "p99 ms", "client CPU ms / 1000 req"],
        [[r["route"], r["concurrency"], r["client"], r["round"], f"{r['ok_per_s']:.0f}",
          f"{r['p50_ms'] or 0:.2f}", f"{r['p99_ms'] or 0:.2f}", f"{r['client_cpu_ms_per_1000']:.0f}"]
         for r in result["rows"]],
    )  # fmt: skip
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
