"""`python -m bench`: raw model, served load (batched / unbatched / no-op), batch endpoint, cold start."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
import traceback
from pathlib import Path

from app.settings import Settings
from testkit.server import REPO_ROOT, ServiceProcess

from . import report
from .coldstart import run_coldstart
from .machine import machine_info
from .raw import BATCH_SIZES, run_raw
from .samples import load_digits
from .served import Phase, run_phase
from .store import resolve_store


def get_args_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    p.add_argument("--quick", action="store_true", help="short phases, ViT only (about 1.5 min on 2 cores)")
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"], help="default: auto")
    p.add_argument("--out", type=Path, default=REPO_ROOT / "bench" / "results", help="default: bench/results")
    p.add_argument("--models", default="vit-mnist,cnn-mnist", help="default: vit-mnist,cnn-mnist")
    p.add_argument("--store", type=Path, default=None, help="default: shipped checkpoints, else random init")
    p.add_argument("--concurrency", default="1,8,64,256", help="default: 1,8,64,256")
    p.add_argument("--duration", type=float, default=None, help="measured seconds per phase (5; quick 2)")
    p.add_argument("--warmup", type=float, default=None, help="warm-up seconds per phase (1; quick 0.5)")
    p.add_argument("--raw-time", type=float, default=None, help="seconds per raw batch size (1; quick 0.25)")
    p.add_argument("--batch-images", type=int, default=64, help="images per batch-endpoint request (64)")
    p.add_argument(
        "--loadgen-procs", type=int, default=0, help="load generator processes (0: 1 per 4 cores, max 4)"
    )
    p.add_argument(
        "--client", default="raw", choices=["raw", "httpx", "wrk"],
        help="load generator: our raw asyncio client (default), httpx, or wrk (apt-get install wrk)",
    )  # fmt: skip
    p.add_argument("--coldstart-repeats", type=int, default=None, help="default: 3 (quick 1)")
    p.add_argument("--queue-size", type=int, default=4096, help="MAX_QUEUE_SIZE for load runs (4096)")
    p.add_argument("--skip", default="", help="comma list of sections to skip: raw,served,coldstart")
    p.add_argument(
        "--workers", type=int, default=0,
        help="WORKERS for `python -m app` (default 0: as shipped, WORKERS=auto); -1: one uvicorn process "
        "serving --app with its engine on a thread",
    )  # fmt: skip
    p.add_argument("--app", default="app.main:app", help="ASGI app for --workers -1 (default: app.main:app)")
    p.add_argument(
        "--server-env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra environment for the served runs (repeatable), e.g. TORCH_THREADS=1",
    )
    p.add_argument("--access-log", action="store_true", help="keep uvicorn's access log on (default off)")
    return p


def resolve_device(name: str) -> str:
    import torch

    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: CUDA is not available")
    return name


def served_phases(models: list[str], conc: list[int], quick: bool) -> tuple[list[Phase], list[Phase]]:
    vit = models[0]
    batched = [Phase("noop", None, "noop", c) for c in conc]
    for m in models:
        batched += [Phase("batched", m, "png", c) for c in conc]
    ref = 64 if 64 in conc else conc[-1]
    batched += [Phase("batched", vit, "pixels", c) for c in sorted({1, ref})]
    batched += [Phase("batched", vit, "multipart", ref)]
    for m in models[:1] if quick else models:
        batched += [Phase("batch", m, "batch-png", c) for c in (1, 4)]
    batched += [Phase("batch", vit, "batch-pixels", 4)]
    unbatched = [Phase("unbatched", m, "png", c) for m in models for c in conc]
    return batched, unbatched


def service(args: argparse.Namespace, env: dict[str, str], log: Path | None = None) -> ServiceProcess:
    """The service as the flags ask for it (not started)."""
    return ServiceProcess(
        env, workers=workers(args), log_path=log, app=args.app,
        uvicorn_args=("--log-level", "warning"), access_log=args.access_log,
    )  # fmt: skip


def workers(args: argparse.Namespace) -> int | None:
    """--workers as ServiceProcess takes it: a count, or None for one uvicorn process."""
    if args.workers < 0:
        return None
    if args.workers == 0:  # what `python -m app` would pick here
        return Settings(device=args.device).workers_here()
    return args.workers


def server_note(args: argparse.Namespace) -> str:
    access = "access log " + ("on" if args.access_log else "off")
    if (n := workers(args)) is not None:
        how = "auto" if args.workers == 0 else "set"
        return f"python -m app, WORKERS={n} ({how}; supervisor, engine, front-end workers), {access}"
    return f"uvicorn {args.app} --workers 1 (uvloop/httptools when installed), {access}"


def loadgen_note(client: str, procs: int) -> str:
    kind = {"raw": "raw asyncio HTTP/1.1", "httpx": "httpx.AsyncClient", "wrk": "wrk"}[client]
    where = f"{procs} wrk thread(s)" if client == "wrk" else f"{procs} separate process(es) with uvloop"
    return (
        f"closed loop, {kind} keep-alive connections (one per client), in {where}, on the same machine "
        "as the server (it competes with the server for CPU; the no-op ceiling pays the same cost). "
        "Throughput counts 200 answers completed inside the measured window; every request of a phase "
        "repeats the same body."
    )


def main(argv: list[str] | None = None) -> int:
    args = get_args_parser().parse_args(argv)
    device = resolve_device(args.device)
    quick = args.quick
    duration = args.duration or (2.0 if quick else 5.0)
    warmup = args.warmup if args.warmup is not None else (0.5 if quick else 1.0)
    raw_time = args.raw_time or (0.25 if quick else 1.0)
    repeats = args.coldstart_repeats or (1 if quick else 3)
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    conc = [int(c) for c in args.concurrency.split(",")]
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    cores = os.cpu_count() or 1
    procs = args.loadgen_procs or (1 if cores <= 4 else min(4, cores // 4))
    served_models = models[:1] if quick else models

    digits, sample = load_digits(256)
    store, store_desc = resolve_store(args.store, models)
    raw_dir = args.out / "raw"
    raw_dir.mkdir(parents=True, exist_ok=True)
    res: dict = {
        "machine": machine_info(device),
        "settings": {
            "command": f"python -m bench {shlex.join(sys.argv[1:] if argv is None else argv)}".strip(),
            "device": device,
            "quick": quick,
            "models": models,
            "served_models": served_models,
            "store": store_desc,
            "sample": sample,
            "concurrency": conc,
            "duration_s": duration,
            "warmup_s": warmup,
            "raw_min_time_s": raw_time,
            "batch_images": args.batch_images,
            "server": server_note(args),
            "server_env": {
                "DEVICE": device,
                "MAX_QUEUE_SIZE": args.queue_size,
                "LOG_LEVEL": "warning",
                **dict(kv.split("=", 1) for kv in args.server_env),
            },
            "loadgen": loadgen_note(args.client, procs),
        },
        "errors": {},
    }
    print(f"bench: device {device}, models from {store_desc}, sample {sample}", flush=True)

    if "raw" not in skip:
        devices = ["cpu"] + (["cuda"] if device == "cuda" else [])
        res["raw"] = []
        for dev in devices:
            t0 = time.perf_counter()
            res["raw"] += run_raw(models, store, dev, BATCH_SIZES, raw_time, digits)
            print(f"raw models on {dev}: {time.perf_counter() - t0:.0f} s", flush=True)

    env = {"MODEL_STORE_DIR": str(store), "DEVICE": device, "MAX_QUEUE_SIZE": str(args.queue_size),
           "LOG_LEVEL": "warning"}  # fmt: skip
    env.update(dict(kv.split("=", 1) for kv in args.server_env))
    if "served" not in skip:
        res["served"] = []
        batched, unbatched = served_phases(served_models, conc, quick)
        for label, extra, phases in (
            ("batched", {}, batched),
            ("unbatched", {"MAX_BATCH_SIZE": "1"}, unbatched),
        ):
            log = raw_dir / f"server-{label}.log"
            log.unlink(missing_ok=True)
            try:
                with service(args, {**env, **extra}, log) as srv:
                    for ph in phases:
                        row = run_phase(
                            srv, ph, digits, warmup=warmup, duration=duration, procs=procs,
                            client=args.client, batch_images=args.batch_images,
                        )  # fmt: skip
                        res["served"].append(row)
                        print(report.console({"served": [row], "targets": []}).strip(), flush=True)
            except Exception as exc:  # keep the other sections' results
                res["errors"][f"served-{label}"] = f"{exc}\n{traceback.format_exc()[-3000:]}"
                print(f"served ({label}) failed: {exc}", file=sys.stderr, flush=True)

    if "coldstart" not in skip:
        try:
            res["coldstart"] = run_coldstart(lambda: service(args, env), repeats)
        except Exception as exc:
            res["errors"]["coldstart"] = str(exc)
            print(f"cold start failed: {exc}", file=sys.stderr, flush=True)

    res["machine"]["load_avg_1m_after"] = round(os.getloadavg()[0], 2)
    report.add_raw_ratios(res)
    res["targets"] = report.compute_targets(res)
    paths = report.write_all(res, args.out)
    print()
    print(report.console(res))
    print("\nwrote " + ", ".join(str(p) for p in paths))
    return 0
