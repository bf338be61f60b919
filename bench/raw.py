"""Raw in-process model throughput: images/s and latency per batch size, no HTTP, no batcher."""

from __future__ import annotations

import statistics
import time
from pathlib import Path

import torch

BATCH_SIZES = [1, 2, 4, 8, 16, 32, 64, 128, 256]


def load_model(name: str, store: Path | None, device: str) -> tuple[torch.nn.Module, str]:
    """The store's checkpoint when present, else the preset with random weights (same cost per image)."""
    from model_store import ModelStore, create_model

    if store is not None and (store / name / "card.json").is_file():
        model, _ = ModelStore(store).load(name, device)
        return model, f"checkpoint {store / name}"
    return create_model(name).to(device).eval(), f"preset {name} (random init)"


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def time_batch(model: torch.nn.Module, batch: torch.Tensor, device: str, min_time: float, min_iters: int):
    """Per-call latencies (s) of model(batch) after a warm-up, for at least min_time and min_iters."""
    with torch.inference_mode():
        for _ in range(3):
            model(batch)
        _sync(device)
        times: list[float] = []
        start = time.perf_counter()
        while len(times) < min_iters or time.perf_counter() - start < min_time:
            t0 = time.perf_counter()
            model(batch)
            _sync(device)
            times.append(time.perf_counter() - t0)
            if len(times) >= 10_000:
                break
    return times


def bench_model(
    name: str,
    store: Path | None,
    device: str,
    batch_sizes: list[int],
    min_time: float,
    images: torch.Tensor,
    threads: int,
) -> dict:
    torch.set_num_threads(threads)
    model, source = load_model(name, store, device)
    rows = []
    for bs in batch_sizes:
        reps = -(-bs // len(images))
        batch = images.repeat(reps, 1, 1, 1)[:bs].to(device)
        times = time_batch(model, batch, device, min_time=min_time, min_iters=5)
        med = statistics.median(times)
        rows.append(
            {
                "batch_size": bs,
                "iters": len(times),
                "latency_ms_p50": med * 1e3,
                "latency_ms_min": min(times) * 1e3,
                "images_per_s": bs / med,
            }
        )
    return {"model": name, "device": device, "threads": threads, "source": source, "rows": rows}


def cpu_thread_settings() -> list[int]:
    """Torch's default (one intra-op thread per core) and, on a multi-core box, a single thread: on a
    shared or busy machine an OpenMP team over every core can stall badly, one thread does not."""
    default = torch.get_num_threads()
    return [default, 1] if default > 1 else [default]


def run_raw(
    models: list[str], store: Path | None, device: str, batch_sizes: list[int], min_time: float, digits
) -> list[dict]:
    """digits: (N, 28, 28) uint8. Inputs are normalised like the service does (MNIST mean/std)."""
    from model_store import MNIST_MEAN, MNIST_STD

    images = (torch.from_numpy(digits.copy()).float().div(255).sub(MNIST_MEAN).div(MNIST_STD)).unsqueeze(1)
    default = torch.get_num_threads()
    settings = cpu_thread_settings() if device == "cpu" else [default]
    try:
        return [
            bench_model(m, store, device, batch_sizes, min_time, images, threads)
            for threads in settings
            for m in models
        ]
    finally:
        torch.set_num_threads(default)


def best_images_per_s(result: dict) -> float:
    return max(r["images_per_s"] for r in result["rows"])


def at_batch(result: dict, bs: int) -> dict | None:
    return next((r for r in result["rows"] if r["batch_size"] == bs), None)
