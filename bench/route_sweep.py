"""What the route benches share (bench.grpc, bench.perf_analyzer): one ``python -m app`` serving one model,
the same digit as a tensor or a PNG over REST and gRPC, each route at each concurrency in turn, and the run
written to bench/results/<module>.{json,md} (or --out)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from app.settings import Settings
from testkit.server import REPO_ROOT, ServiceProcess

from .machine import machine_info
from .samples import load_digits
from .store import resolve_store

ROUTES = ("rest tensor", "grpc tensor", "rest png", "grpc png")


def add_service_arguments(p: argparse.ArgumentParser) -> None:
    """The service's and the sweep's options (each bench adds its own --seconds)."""
    p.add_argument("--workers", default="2", help="WORKERS of the service: a number or auto (default 2)")
    p.add_argument("--model", default="vit-mnist", help="default: vit-mnist")
    p.add_argument("--store", type=Path, default=None, help="default: shipped checkpoints")
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    p.add_argument("--concurrency", default="1,16,64", help="requests in flight (default 1,16,64)")
    p.add_argument("--out", type=Path, default=REPO_ROOT / "bench" / "results", help="default: bench/results")


@dataclass
class Served:
    server: ServiceProcess
    digit: np.ndarray  # the one MNIST test digit every request carries
    facts: dict[str, object]  # workers, store and digit sources: recorded with the rows


@contextmanager
def serve(args: argparse.Namespace) -> Iterator[Served]:
    """The service as the arguments ask, started and ready; stopped after."""
    store, store_source = resolve_store(args.store, [args.model])
    digits, digit_source = load_digits(1)
    env = {"MODEL_STORE_DIR": str(store), "DEVICE": args.device, "LOG_LEVEL": "warning"}
    # auto: the count WORKERS=auto gives on this machine (python -m app, never plain uvicorn)
    workers = Settings(device=args.device).workers_here() if args.workers == "auto" else int(args.workers)
    with ServiceProcess(env, workers=workers) as server:
        yield Served(server, digits[0], {"workers": workers, "store": store_source, "digit": digit_source})


def sweep(
    concurrency: str, run: Callable[[str, int], dict[str, float]], routes: tuple[str, ...] = ROUTES
) -> list[dict]:
    """Every route at every level of ``concurrency`` ("1,16,64"), one after the other: the rows."""
    rows = []
    for level in (int(c) for c in concurrency.split(",")):
        for route in routes:
            result = run(route, level)
            rows.append({"route": route, "concurrency": level, **result})
            print(f"{route:12s} @{level:<3d} {result['req_s']:8,.0f} req/s", flush=True)
    return rows


def write_run(
    args: argparse.Namespace, stem: str, title: str, argv: list[str] | None, table: str, **fields: object
) -> None:
    """The run into ``args.out``: ``<stem>.json`` (the machine, the arguments, ``fields``: the rows and
    what they were measured on) and ``<stem>.md`` (the command that made it, and its table)."""
    out: Path = args.out
    meta = {
        "machine": machine_info(args.device),
        "args": {k: str(v) for k, v in vars(args).items()},
        **fields,
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stem}.json").write_text(json.dumps(meta, indent=2) + "\n")
    command = f"python -m bench.{stem} " + " ".join(argv if argv is not None else sys.argv[1:])
    (out / f"{stem}.md").write_text(f"# {title}\n\n`{command.strip()}`\n\n{table}\n")
