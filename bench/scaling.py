"""Scale-out figures, all in one run on one machine (`python -m bench.scaling`):

1. **Worker sweep**: ``python -m app`` with WORKERS = 1..N. ``GET /v1/noop`` measures the front end alone
   (HTTP in, JSON out, no engine); a single-PNG predict measures the whole path (upload, decode,
   preprocess, hop, batcher, model, answer). req/s at 64 connections (``--connections``), p50 at 1
   connection, mean batch size (from /metrics), and memory of the whole process tree (RSS and PSS
   summed over the supervisor, the engine and every worker) idle and under load (the peak sampled
   every 0.25 s while wrk runs).
2. **Before/after** (``--baseline REV``): the service as it was at REV (default: the last single-process
   commit), from a git worktree, on the same checkpoints and bodies, alternating rounds with today's.
   Its card reader predates calibration, so it reads a copy of the store without the calibration fields
   (weights byte-identical); it serves uncalibrated probabilities, which costs it nothing measurable.

wrk drives the load (see bench/results/loadgen-compare.md for why). Writes
bench/results/scaling.{json,md}. Run nothing else meanwhile; compare ratios within one run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from app.cpus import available_cpus
from app.settings import Settings
from testkit.metrics import scrape, total
from testkit.server import REPO_ROOT, PeakMemory, ServiceProcess

from . import wrk
from .alternating import alternating_latency
from .report import md_table
from .samples import load_digits
from .served import make_target
from .store import resolve_store

BASELINE_REV = "c12c18c"  # the last commit before the engine/front-end split: one process
# Card fields BASELINE_REV does not know that shape training only: stochastic depth is the identity at
# inference whatever its rate (the shipped ViT was fine-tuned with 0.1).
TRAINING_ONLY_ARCH_FIELDS = ("drop_path",)


def batch_stats(url: str, model: str) -> tuple[float, float]:
    """(images, batches) counted by the service so far for `model`."""
    samples = scrape(url)
    return total(samples, "vit_digits_batch_size_sum", model=model), total(
        samples, "vit_digits_batch_size_count", model=model
    )


def measure(server: ServiceProcess, target, conns: int, seconds: float, threads: int, model: str | None):
    """One wrk run; adds the mean batch size (from /metrics)."""
    before = batch_stats(server.url, model) if model else (0.0, 0.0)
    row = wrk.run_wrk(server.port, target, conns, 1.0, seconds, threads)
    after = batch_stats(server.url, model) if model else (0.0, 0.0)
    batches = after[1] - before[1]
    row["mean_batch"] = round((after[0] - before[0]) / batches, 2) if batches else None
    return row


@contextmanager
def baseline_tree(rev: str, store: Path) -> Iterator[tuple[Path, Path]]:
    """A worktree of `rev` and a copy of `store` its card reader accepts (no calibration fields, no
    newer architecture fields that shape training only)."""
    tmp = Path(tempfile.mkdtemp(prefix="bench-baseline-"))
    tree, old_store = tmp / "tree", tmp / "store"
    subprocess.run(
        ["git", "worktree", "add", "-f", "--detach", str(tree), rev],
        cwd=REPO_ROOT,
        check=True,
        capture_output=True,
    )
    try:
        for model_dir in store.iterdir():
            card_path = model_dir / "card.json"
            if not card_path.exists():
                continue
            card = json.loads(card_path.read_text())
            card.pop("calibration", None)
            for key in TRAINING_ONLY_ARCH_FIELDS:  # its reader refuses unknown fields
                card["architecture"].pop(key, None)
            (old_store / model_dir.name).mkdir(parents=True)
            (old_store / model_dir.name / "card.json").write_text(json.dumps(card, indent=2))
            shutil.copy(model_dir / "model.safetensors", old_store / model_dir.name / "model.safetensors")
        yield tree, old_store
    finally:
        subprocess.run(
            ["git", "worktree", "remove", "--force", str(tree)], cwd=REPO_ROOT, capture_output=True
        )
        shutil.rmtree(tmp, ignore_errors=True)


def baseline_process(tree: Path, store: Path, env: dict[str, str]) -> ServiceProcess:
    """The old single-process service: `uvicorn app.main:app` run from the worktree (its `app` first on
    sys.path), with this venv's packages."""
    return ServiceProcess({**env, "MODEL_STORE_DIR": str(store)}, workers=None, cwd=tree)


def before_after(args, env: dict[str, str], store: Path, routes: dict, models: list[str], threads: int):
    """Both versions up side by side (an idle one costs nothing). Throughput: alternating loaded runs.
    Latency at 1 client: one client alternating request by request between the two (bench.alternating),
    so that the machine's drift hits both alike; reported with the median paired difference."""
    auto_workers = Settings(device=args.device).workers_here()
    png = {m: routes[f"png {m}"][0] for m in models}
    loaded: list[dict] = []
    with (
        baseline_tree(args.baseline, store) as (tree, old_store),
        baseline_process(tree, old_store, env) as before,
        ServiceProcess(env, workers=auto_workers) as after,  # as shipped: WORKERS=auto
    ):
        versions = {"before": before, "after": after}
        for rnd in range(args.rounds):
            for label, server in versions.items():
                for m, target in png.items():
                    run = wrk.run_wrk(server.port, target, args.connections, 1.0, args.seconds, threads)
                    row = {"round": rnd, "version": label, "model": m, "rps": round(run["ok_per_s"], 1)}
                    loaded.append(row | {"p99_ms": run["p99_ms"]})
                    print(
                        f"{label:6} round {rnd} {m:10} {args.connections}c {row['rps']:8.0f} req/s",
                        flush=True,
                    )
        ports = {label: server.port for label, server in versions.items()}
        ab = {}
        for m, target in png.items():
            lat = alternating_latency(ports, target, args.latency_requests)
            ab[m] = {
                "requests": args.latency_requests,
                "median_before_ms": lat["before"]["p50_ms"],
                "median_after_ms": lat["after"]["p50_ms"],
                "median_paired_diff_ms": lat["median_paired_diff_ms"],
            }
            print(
                f"{m}: p50 @1 before {ab[m]['median_before_ms']:.2f} ms, "
                f"after {ab[m]['median_after_ms']:.2f} ms, "
                f"paired difference {ab[m]['median_paired_diff_ms']:+.2f} ms "
                f"({args.latency_requests} requests each, in turn)",
                flush=True,
            )
    return loaded, ab


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m bench.scaling",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--workers", default="", help="comma list (default: 1..usable cores)")
    p.add_argument("--models", default="vit-mnist,cnn-mnist", help="default: vit-mnist,cnn-mnist")
    p.add_argument("--seconds", type=float, default=6.0, help="measured seconds per run (6)")
    p.add_argument("--connections", type=int, default=64,
                   help="connections of the loaded runs (64; the GPU figures use 256)")  # fmt: skip
    p.add_argument("--rounds", type=int, default=2, help="alternating loaded rounds for before/after (2)")
    p.add_argument("--latency-requests", type=int, default=2000,
                   help="before/after: 1-client requests per version and model, in turn (2000)")  # fmt: skip
    p.add_argument(
        "--baseline", default=BASELINE_REV, help=f"git rev to compare with ({BASELINE_REV}); '' skips"
    )
    p.add_argument("--device", default="auto", help="DEVICE for the service (auto)")
    p.add_argument("--out", type=Path, default=REPO_ROOT / "bench" / "results", help="bench/results")
    args = p.parse_args(argv)
    if not wrk.available():
        raise SystemExit("wrk is needed: apt-get install wrk")
    cpus = available_cpus()
    sweep = [int(w) for w in args.workers.split(",")] if args.workers else list(range(1, cpus + 1))
    models = args.models.split(",")
    store, store_desc = resolve_store(None, models)
    digits, _ = load_digits(1)
    routes = {"noop": (make_target("noop", None, digits, 1), None)}
    routes |= {f"png {m}": (make_target("png", m, digits, 1), m) for m in models}
    threads = max(1, cpus // 4)
    env = {
        "MODEL_STORE_DIR": str(store),
        "DEVICE": args.device,
        "LOG_LEVEL": "warning",
        "MAX_QUEUE_SIZE": "4096",
    }
    result: dict = {
        "store": store_desc,
        "cpus": cpus,
        "seconds": args.seconds,
        "wrk_threads": threads,
        "connections": args.connections,
        "sweep": [],
        "baseline": [],
        "latency_ab": {},
    }

    for workers in sweep:
        with ServiceProcess(env, workers=workers) as server:
            time.sleep(1.0)  # let the workers finish their own start-up work before measuring idle memory
            idle = server.memory_mb()
            for route, (target, model) in routes.items():
                with PeakMemory(server.proc.pid) as memory:  # sampled only under load: /proc reads cost
                    loaded_run = measure(server, target, args.connections, args.seconds, threads, model)
                loaded = memory.peak
                r1 = measure(server, target, 1, args.seconds / 2, 1, model)
                row = {
                    "workers": workers,
                    "route": route,
                    "rps": round(loaded_run["ok_per_s"], 1),
                    "p50_ms": loaded_run["p50_ms"],
                    "p99_ms": loaded_run["p99_ms"],
                    "non_2xx": loaded_run["requests"] - loaded_run["ok"],
                    "mean_batch": loaded_run["mean_batch"],
                    "p50_1_ms": r1["p50_ms"],
                    "rps_1": round(r1["ok_per_s"], 1),
                    "memory_idle": idle,
                    "memory_load": loaded,
                }
                result["sweep"].append(row)
                print(
                    f"workers={workers} {route:14} {args.connections}c {row['rps']:8.0f} req/s (batch "
                    f"{row['mean_batch']}) | 1c p50 {row['p50_1_ms']:.2f} ms | PSS idle "
                    f"{idle['pss_mb']:.0f} MB, load {loaded['pss_mb']:.0f} MB",
                    flush=True,
                )

    if args.baseline:
        result["baseline"], result["latency_ab"] = before_after(args, env, store, routes, models, threads)

    result["load_avg_1m_after"] = round(os.getloadavg()[0], 2)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "scaling.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out / "scaling.md").write_text(markdown(result))
    print(markdown(result))
    return 0


def markdown(result: dict) -> str:
    lines = [
        "# Scale-out: worker sweep and before/after",
        "",
        f"{result['store']}; {result['cpus']} usable CPUs; wrk with {result['wrk_threads']} thread(s); "
        f"{result['seconds']:g} s per run; load average after {result['load_avg_1m_after']}.",
        "",
    ]
    one = {r["route"]: r["rps"] for r in result["sweep"] if r["workers"] == 1}
    c = result["connections"]
    lines += md_table(
        ["workers", "route", f"req/s @{c}", "x vs 1 worker", "mean batch", f"p50 @{c} ms", f"p99 @{c} ms",
         "p50 @1 ms", "PSS idle / load MB", "RSS idle / load MB"],
        [[r["workers"], r["route"], f"{r['rps']:.0f}",
          f"{r['rps'] / one[r['route']]:.2f}" if one.get(r["route"]) else "-", r["mean_batch"] or "-",
          f"{r['p50_ms']:.2f}", f"{r['p99_ms']:.2f}", f"{r['p50_1_ms']:.2f}",
          f"{r['memory_idle']['pss_mb']:.0f} / {r['memory_load']['pss_mb']:.0f}",
          f"{r['memory_idle']['rss_mb']:.0f} / {r['memory_load']['rss_mb']:.0f}"] for r in result["sweep"]],
        text_columns=2,
    )  # fmt: skip
    if result["baseline"]:
        lines += [
            "",
            "Before/after, single PNG predict, same checkpoints and bodies, alternating rounds:",
            "",
        ]
        lines += md_table(
            ["round", "version", "model", f"req/s @{c}", f"p99 @{c} ms"],
            [[r["round"], r["version"], r["model"], f"{r['rps']:.0f}", f"{r['p99_ms']:.2f}"]
             for r in result["baseline"]],
            text_columns=3,
        )  # fmt: skip
    if result.get("latency_ab"):
        n = next(iter(result["latency_ab"].values()))["requests"]
        lines += [
            "",
            f"p50 at 1 client: one client sending {n} requests to each version in turn (ABBA), keep-alive; "
            "the difference is the median of the request-by-request paired differences:",
            "",
        ]
        lines += md_table(
            ["model", "before ms", "after ms", "after - before ms"],
            [[m, f"{a['median_before_ms']:.2f}", f"{a['median_after_ms']:.2f}",
              f"{a['median_paired_diff_ms']:+.2f}"] for m, a in result["latency_ab"].items()],
            text_columns=1,
        )  # fmt: skip
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
