"""``python -m app`` as a real process tree: supervisor, engine, two workers.

Totals in /metrics cover every worker; a SIGKILLed worker is replaced while the other serves; a
SIGKILLed engine makes waiting requests fail with 503 at once, readiness drop, and then comes back.
"""

from __future__ import annotations

import os
import signal

import httpx
import pytest

from app.supervisor import ENGINE_MALLOC
from testkit.metrics import scrape, total
from testkit.server import child_commands as children
from testkit.server import wait_for

from .conftest import VIT

PIXELS = {"pixels": [[0] * 10 + [255] * 8 + [0] * 10] * 28}
PREDICT = f"/v1/models/{VIT}/predict"


def ready(url: str) -> bool:
    try:
        return httpx.get(f"{url}/v2/health/ready", timeout=2).status_code == 200
    except httpx.TransportError:
        return False


def starts(url: str) -> dict[str, int]:
    """vit_digits_process_starts_total by role, from the service's one /metrics."""
    samples = scrape(url)
    return {r: int(total(samples, "vit_digits_process_starts", role=r)) for r in ("engine", "worker")}


@pytest.fixture
def service(start_server):  # type: ignore[no-untyped-def]
    return start_server(workers=2)


def test_two_workers_one_engine_and_metrics_totals_for_the_whole_service(service) -> None:  # type: ignore[no-untyped-def]
    procs = children(service.proc.pid)
    assert sum("app.worker" in c for c in procs.values()) == 2
    assert sum("app.engine" in c for c in procs.values()) == 1
    answered_by = set()
    for _ in range(24):  # a new connection each time: the kernel spreads them over both workers
        with httpx.Client(base_url=service.url, timeout=30) as c:
            r = c.post(PREDICT, json=PIXELS)
            assert r.status_code == 200
            answered_by.add(c.get("/health").json()["worker_pid"])
    text = httpx.get(f"{service.url}/metrics", timeout=10).text
    line = 'vit_digits_requests_total{method="POST",route="/v1/models/{name}/predict",status="200"} 24.0'
    assert line in text
    assert f'vit_digits_inference_count_total{{model="{VIT}"}} 24.0' in text
    assert answered_by <= {pid for pid, c in procs.items() if "app.worker" in c}


def test_a_killed_worker_is_replaced_and_the_other_keeps_serving(service) -> None:  # type: ignore[no-untyped-def]
    workers = [pid for pid, c in children(service.proc.pid).items() if "app.worker" in c]
    os.kill(workers[0], signal.SIGKILL)
    for _ in range(5):  # the listening socket stays open: new connections reach the live worker
        assert httpx.post(f"{service.url}{PREDICT}", json=PIXELS, timeout=30).status_code == 200
    assert wait_for(
        lambda: len([p for p, c in children(service.proc.pid).items() if "app.worker" in c]) == 2, 60
    ), "the killed worker was not replaced"
    assert workers[0] not in children(service.proc.pid)
    # counted once the replacement has built its app; what the VitDigitsRestarting alert watches
    assert wait_for(lambda: starts(service.url) == {"engine": 1, "worker": 3}, 60), starts(service.url)


def test_a_killed_engine_gives_503_at_once_drops_readiness_and_is_restarted(service) -> None:  # type: ignore[no-untyped-def]
    [engine] = [pid for pid, c in children(service.proc.pid).items() if "app.engine" in c]
    os.kill(engine, signal.SIGKILL)
    assert wait_for(lambda: not ready(service.url), 10), "still ready with the engine gone"
    r = httpx.post(f"{service.url}{PREDICT}", json=PIXELS, timeout=30)
    if r.status_code != 200:  # 200 only if the new engine was already up
        # 503 at once, not a wait for the engine that ends in the request timeout's 504
        assert r.status_code == 503 and r.headers["retry-after"], r.text
    assert wait_for(lambda: ready(service.url), 120), "not ready again after the engine's restart"
    assert engine not in children(service.proc.pid)
    assert httpx.post(f"{service.url}{PREDICT}", json=PIXELS, timeout=30).status_code == 200
    assert starts(service.url) == {"engine": 2, "worker": 2}


def environment(pid: int) -> dict[str, str]:
    pairs = open(f"/proc/{pid}/environ", "rb").read().decode().split("\0")
    return dict(p.split("=", 1) for p in pairs if "=" in p)


def test_only_the_engine_keeps_its_freed_activation_memory_in_the_heap(service) -> None:  # type: ignore[no-untyped-def]
    """glibc's malloc tuned in the engine alone (see app.supervisor.ENGINE_MALLOC): its large blocks are
    a batch's activations, reused each forward pass; a worker's are decoded photos."""
    procs = children(service.proc.pid)
    [engine] = [pid for pid, c in procs.items() if "app.engine" in c]
    assert {k: environment(engine).get(k) for k in ENGINE_MALLOC} == ENGINE_MALLOC
    for worker in (pid for pid, c in procs.items() if "app.worker" in c):
        assert not set(ENGINE_MALLOC) & set(environment(worker))
