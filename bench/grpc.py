"""`python -m bench.grpc`: the Open Inference Protocol over gRPC beside the same protocol over REST, on
one ``python -m app``: the same model, the same tensors or PNGs, the same kind of client (tritonclient's
asyncio clients, ``concurrency`` calls in flight from one process), each route in turn.

    python -m bench.grpc --workers 2 --seconds 5 --concurrency 1,16,64

Prints a table and writes bench/results/grpc.{json,md}. The load generator is Python on the same machine:
on a small one it competes with the service for the cores, alike for both protocols.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Awaitable, Callable

import numpy as np

from testkit.images import png_bytes
from testkit.server import ServiceProcess

from .route_sweep import add_service_arguments, serve, sweep, write_run


def get_args_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench.grpc", description=__doc__.split("\n\n")[0])
    add_service_arguments(p)
    p.add_argument("--seconds", type=float, default=5.0, help="measured seconds per route and concurrency")
    return p


def callers(server: ServiceProcess, model: str, digit: np.ndarray) -> dict[str, Callable]:
    """Route -> a factory of (client, one call) for that route; each call checks its answer's shape."""
    import tritonclient.grpc.aio as grpc_aio
    import tritonclient.http.aio as http_aio

    tensor = digit[None].astype(np.uint8)
    png = np.array([png_bytes(digit)], dtype=np.object_)

    def make(module, url: str, name: str, data: np.ndarray, datatype: str):  # type: ignore[no-untyped-def]
        def factory() -> tuple[object, Callable[[], Awaitable[None]]]:
            client = module.InferenceServerClient(url)
            binary = {"binary_data": True} if module is http_aio else {}  # REST: Triton's binary tensors
            inp = module.InferInput(name, list(data.shape), datatype)
            inp.set_data_from_numpy(data, **binary)
            outs = [module.InferRequestedOutput("probabilities", **binary)]

            async def one() -> None:
                result = await client.infer(model, [inp], outputs=outs)
                assert result.as_numpy("probabilities").shape == (1, 10)

            return client, one

        return factory

    rest, grpc_target = server.url.removeprefix("http://"), server.grpc_target
    return {
        "rest tensor": make(http_aio, rest, "image", tensor, "UINT8"),
        "grpc tensor": make(grpc_aio, grpc_target, "image", tensor, "UINT8"),
        "rest png": make(http_aio, rest, "image_bytes", png, "BYTES"),
        "grpc png": make(grpc_aio, grpc_target, "image_bytes", png, "BYTES"),
    }


async def measure(factory: Callable, concurrency: int, seconds: float) -> dict[str, float]:
    """``concurrency`` loops calling back to back: 1 s of warm-up, then ``seconds`` measured."""
    client, one = factory()
    latencies: list[float] = []
    errors = 0

    async def loop(until: float, record: bool) -> None:
        nonlocal errors
        while (t := time.perf_counter()) < until:
            try:
                await one()
            except Exception:  # counted: the table says how many calls failed
                errors += 1
                continue
            if record:
                latencies.append(time.perf_counter() - t)

    try:
        warm_until = time.perf_counter() + 1.0
        await asyncio.gather(*(loop(warm_until, False) for _ in range(concurrency)))
        errors = 0
        start = time.perf_counter()
        await asyncio.gather(*(loop(start + seconds, True) for _ in range(concurrency)))
        elapsed = time.perf_counter() - start
    finally:
        await client.close()
    ms = np.asarray(latencies) * 1000
    return {
        "req_s": len(ms) / elapsed,
        "p50_ms": float(np.percentile(ms, 50)) if len(ms) else float("nan"),
        "p99_ms": float(np.percentile(ms, 99)) if len(ms) else float("nan"),
        "errors": errors,
    }


def table(rows: list[dict]) -> str:
    lines = [
        "| route | calls in flight | req/s | p50 ms | p99 ms | errors |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        cells = (
            r["route"],
            r["concurrency"],
            f"{r['req_s']:,.0f}",
            f"{r['p50_ms']:.2f}",
            f"{r['p99_ms']:.2f}",
        )
        lines.append("| " + " | ".join(map(str, (*cells, r["errors"]))) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = get_args_parser().parse_args(argv)
    with serve(args) as served:
        make = callers(served.server, args.model, served.digit)
        rows = sweep(args.concurrency, lambda route, n: asyncio.run(measure(make[route], n, args.seconds)))
    text = table(rows)
    print(text)
    write_run(args, "grpc", "gRPC beside REST", argv, text, **served.facts, rows=rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
