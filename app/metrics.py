"""Prometheus metrics, one CollectorRegistry per app (tests build several apps in one process)."""

from __future__ import annotations

import os
import time
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    generate_latest,
    multiprocess,
)
from starlette.types import ASGIApp, Message, Receive, Scope, Send

disable_created_metrics()  # no *_created series: they double the output for nothing we use

LATENCY_BUCKETS = (
    0.0005,
    0.001,
    0.002,
    0.003,
    0.005,
    0.0075,
    0.01,
    0.02,
    0.05,
    0.1,
    0.25,
    0.5,
    1,
    2.5,
    5,
    10,
)
QUEUE_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.003, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1, 5)
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


def service_registry(metrics: Metrics) -> CollectorRegistry:
    """The whole service's totals when the processes share a multiprocess directory (``python -m
    app``), else this process's own registry."""
    path = os.environ.get("PROMETHEUS_MULTIPROC_DIR")  # prometheus_client's own switch
    if not path:
        return metrics.registry
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, path)
    return registry


def exposition(metrics: Metrics) -> bytes:
    """The text format of ``service_registry``."""
    return generate_latest(service_registry(metrics))


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter(
            "vit_digits_requests", "HTTP requests by route, method and status", ["route", "method", "status"],
            registry=r,
        )  # fmt: skip
        self.request_seconds = Histogram(
            "vit_digits_request_seconds",
            "HTTP request latency",
            ["route"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.queue_seconds = Histogram(
            "vit_digits_queue_seconds", "time a request waited in the batch queue", ["model"],
            buckets=QUEUE_BUCKETS, registry=r,
        )  # fmt: skip
        self.compute_seconds = Histogram(
            "vit_digits_compute_seconds", "forward pass time per batch", ["model"], buckets=LATENCY_BUCKETS,
            registry=r,
        )  # fmt: skip
        self.batch_size = Histogram(
            "vit_digits_batch_size", "images per forward pass", ["model"], buckets=BATCH_BUCKETS, registry=r
        )
        self.pending = Gauge(
            "vit_digits_pending_requests", "images queued or being computed", ["model"], registry=r,
            multiprocess_mode="livesum",
        )  # fmt: skip
        self.lanes = Gauge(
            "vit_digits_lanes", "forward passes the engine may compute at once (CPU_LANES; 1 on a GPU)",
            ["device"], registry=r, multiprocess_mode="livesum",
        )  # fmt: skip
        self.lanes_busy = Gauge(
            "vit_digits_lanes_busy", "lanes computing now (a second one: the device fell behind)", ["device"],
            registry=r, multiprocess_mode="livesum",
        )  # fmt: skip
        self.body_bytes = Gauge(
            "vit_digits_request_body_bytes",
            "request body and gRPC message bytes held by requests not yet answered (each worker's: "
            "MAX_BODY_BYTES_IN_FLIGHT)",
            registry=r,
            multiprocess_mode="livesum",
        )
        self.inference_count = Counter(
            "vit_digits_inference_count", "images run through the model", ["model"], registry=r
        )
        self.execution_count = Counter(
            "vit_digits_execution_count", "forward passes (inference/execution = mean batch size)", ["model"],
            registry=r,
        )  # fmt: skip
        # Per model, for Triton's statistics extension (``app.model_stats``) as much as for dashboards.
        self.model_request_seconds = Histogram(
            "vit_digits_model_request_seconds",
            "requests that reached a model's engine: arrival to answer, by outcome (success, fail)",
            ["model", "outcome"], buckets=LATENCY_BUCKETS, registry=r,
        )  # fmt: skip
        self.request_compute_seconds = Counter(
            "vit_digits_request_compute_seconds",
            "each computed request's share of the device time: its batch's forward pass, once per request",
            ["model"], registry=r,
        )  # fmt: skip
        self.batch_executions = Counter(
            "vit_digits_batch_executions", "forward passes by their exact batch size (1..MAX_BATCH_SIZE)",
            ["model", "batch_size"], registry=r,
        )  # fmt: skip
        self.batch_compute_seconds = Counter(
            "vit_digits_batch_compute_seconds", "forward pass time by exact batch size",
            ["model", "batch_size"], registry=r,
        )  # fmt: skip
        self.last_inference = Gauge(
            "vit_digits_last_inference_timestamp_seconds", "when the model last ran a batch (Unix time)",
            ["model"], registry=r, multiprocess_mode="max",
        )  # fmt: skip
        self.process_starts = Counter(
            "vit_digits_process_starts",
            "processes started, by role (engine, worker): more than the first ones means restarts",
            ["role"], registry=r,
        )  # fmt: skip
        self._model_requests: dict[tuple[str, str], Any] = {}
        self._batches: dict[tuple[str, int], tuple[Any, Any]] = {}

    def model_request(self, model: str, ok: bool) -> Any:
        """The labelled child of ``model_request_seconds`` (``labels()`` locks and hashes per call)."""
        key = (model, "success" if ok else "fail")
        child = self._model_requests.get(key)
        if child is None:
            child = self._model_requests[key] = self.model_request_seconds.labels(*key)
        return child

    def batch_of(self, model: str, size: int) -> tuple[Any, Any]:
        """The children of ``batch_executions`` and ``batch_compute_seconds`` for ``size`` images."""
        key = (model, size)
        children = self._batches.get(key)
        if children is None:
            labels = (model, str(size))
            children = self._batches[key] = (
                self.batch_executions.labels(*labels),
                self.batch_compute_seconds.labels(*labels),
            )
        return children


def route_label(scope: Scope) -> str:
    """The route template (``/v1/models/{name}/predict``), never the raw path: bounded cardinality."""
    route = scope.get("route")
    path = getattr(route, "path", None)
    return path if isinstance(path, str) else "unmatched"


class MetricsMiddleware:
    """Pure ASGI middleware: request count and latency by route template, method and status."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics
        # Labelled children by (route, method, status): ``labels()`` locks and hashes on every call.
        self._children: dict[tuple[str, str, int], tuple[Any, Any]] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500

        async def send_wrapper(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            key = (route_label(scope), scope["method"], status)
            children = self._children.get(key)
            if children is None:  # bounded: route templates x methods x statuses
                route, method, code = key
                children = self._children[key] = (
                    self.metrics.requests.labels(route, method, str(code)),
                    self.metrics.request_seconds.labels(route),
                )
            children[0].inc()
            children[1].observe(time.perf_counter() - start)
