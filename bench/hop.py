"""The inter-process hop's own cost: a worker's round trip to the engine with the model call replaced
by an echo, so what is left is submit -> batcher -> DONE -> reply (shared memory, socket, event loops).

    python -m bench.hop [--requests 3000]

The engine runs in its own process, as under ``python -m app``; one client sends requests one at a
time (latency) and then 64 at a time (throughput per request).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np


def _engine(socket_path: str, store: str) -> None:
    os.environ.update(MODEL_STORE_DIR=store, DEVICE="cpu", WARMUP="false", JIT="false", LOG_LEVEL="warning")
    from app.engine.server import Engine
    from app.hop import event_loop_factory
    from app.settings import Settings

    async def main() -> None:
        engine = Engine(Settings(), socket_path, 1)
        await engine.start()
        for batcher in engine.batchers.values():  # echo: the hop without the model
            batcher.run_batch = lambda views: np.zeros((sum(len(v) for v in views), 11), np.float32)
        await asyncio.Event().wait()

    with asyncio.Runner(loop_factory=event_loop_factory()) as runner:  # as python -m app.engine
        runner.run(main())


async def _client(socket_path: str, requests: int) -> dict[str, float]:
    from app.hop import EngineClient, Op

    client = EngineClient(socket_path)
    client.start()
    await client.connected.wait()
    image = np.zeros((28, 28), np.float32)

    async def one() -> None:
        _, future = client.submit(0, Op.PREDICT, [image], 11, time.monotonic() + 10)
        await future

    for _ in range(200):
        await one()
    times = []
    for _ in range(requests):
        t0 = time.perf_counter()
        await one()
        times.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    for _ in range(requests // 64):
        await asyncio.gather(*(one() for _ in range(64)))
    per_request = (time.perf_counter() - t0) / (requests // 64 * 64)
    await client.close()
    return {
        "round_trip_p50_us": statistics.median(times) * 1e6,
        "round_trip_p99_us": float(np.percentile(times, 99) * 1e6),
        "concurrent_64_per_request_us": per_request * 1e6,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=3000, help="default: 3000")
    parser.add_argument("--store", default="model_store/checkpoints", help="models to load (echoed)")
    parser.add_argument("--output", default="bench/results/hop.json", help="default: bench/results/hop.json")
    args = parser.parse_args()
    path = os.path.join(tempfile.mkdtemp(prefix="vit-digits-hop-"), "engine.sock")
    proc = mp.get_context("spawn").Process(target=_engine, args=(path, args.store), daemon=True)
    proc.start()
    while not os.path.exists(path):
        time.sleep(0.05)
    from app.hop import event_loop_factory

    with asyncio.Runner(loop_factory=event_loop_factory()) as runner:  # the workers run on uvloop too
        result = runner.run(_client(path, args.requests))
    proc.terminate()
    print("| hop (echo model, separate processes) | µs |\n|---|---:|")
    for key, value in result.items():
        print(f"| {key} | {value:.1f} |")
    Path(args.output).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
