"""Triton's statistics extension (``GET /v2/models/{name}/stats``, gRPC ``ModelStatistics``): per-model
counts and cumulative times, read from the service's metrics, so every figure is the whole service's
(all workers and the engine), as ``/metrics`` totals are.

What each figure counts here:
- ``success`` / ``fail``: requests that reached the model's engine, from their arrival to their answer
  (a refused, expired, failed or abandoned request is a failure);
- ``queue``: the time a request waited in its model's batch queue;
- ``compute_infer``: each computed request's batch forward pass (copies to and from the device included,
  so ``compute_input`` and ``compute_output`` are zero);
- ``inference_count`` / ``execution_count``: images and forward passes (their ratio is the mean batch).
- ``batch_stats``: per batch size the engine ran, its forward passes and their time (``compute_infer``;
  its ``count`` is passes, not requests), sorted by size.
Responses are not cached, so the cache figures are zero.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from .metrics import Metrics, service_registry

NS = 1e9
# (sample name, model, its outcome or batch size label, else "") -> summed over processes
Samples = dict[tuple[str, str, str], float]


def statistics(metrics: Metrics, names: list[str]) -> dict[str, Any]:
    """``{"model_stats": [...]}`` for the named models, in Triton's JSON form."""
    values: Samples = defaultdict(float)
    for family in service_registry(metrics).collect():
        for sample in family.samples:
            model = sample.labels.get("model")
            if model is not None:
                detail = sample.labels.get("outcome") or sample.labels.get("batch_size", "")
                values[sample.name, model, detail] += sample.value
    return {"model_stats": [_model(values, name) for name in names]}


def _model(v: Samples, name: str) -> dict[str, Any]:
    def duration(count: float, seconds: float) -> dict[str, int]:
        return {"count": int(count), "ns": int(seconds * NS)}

    def requests(outcome: str) -> dict[str, int]:
        prefix = "vit_digits_model_request_seconds"
        return duration(v[f"{prefix}_count", name, outcome], v[f"{prefix}_sum", name, outcome])

    def total(sample: str) -> float:
        return v[sample, name, ""]

    passes = "vit_digits_batch_executions_total"

    def batch(size: str) -> dict[str, Any]:
        count = v[passes, name, size]
        infer = duration(count, v["vit_digits_batch_compute_seconds_total", name, size])
        return {"batch_size": int(size), "compute_input": duration(count, 0), "compute_infer": infer,
                "compute_output": duration(count, 0)}  # fmt: skip

    computed = total("vit_digits_queue_seconds_count")
    zero = duration(0, 0)
    sizes = sorted((size for sample, model, size in v if sample == passes and model == name), key=int)
    return {
        "name": name,
        "version": "1",
        "last_inference": int(total("vit_digits_last_inference_timestamp_seconds") * 1000),  # ms
        "inference_count": int(total("vit_digits_inference_count_total")),
        "execution_count": int(total("vit_digits_execution_count_total")),
        "inference_stats": {
            "success": requests("success"),
            "fail": requests("fail"),
            "queue": duration(computed, total("vit_digits_queue_seconds_sum")),
            "compute_input": duration(computed, 0),
            "compute_infer": duration(computed, total("vit_digits_request_compute_seconds_total")),
            "compute_output": duration(computed, 0),
            "cache_hit": zero,
            "cache_miss": zero,
        },
        "batch_stats": [batch(size) for size in sizes],
    }
