"""Cold start: process spawn to the first 200 from /v2/health/ready, and SIGTERM to exit."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from testkit.server import ServiceProcess


def run_coldstart(make_service: Callable[[], ServiceProcess], repeats: int) -> dict:
    ready_s, stop_s, codes = [], [], []
    for _ in range(repeats):
        server = make_service().spawn()
        try:
            ready_s.append(server.wait_ready(timeout=120, poll=0.005))
            memory = server.memory_mb()
        finally:
            t0 = time.perf_counter()
            codes.append(server.stop())
            stop_s.append(time.perf_counter() - t0)
    return {
        "repeats": repeats,
        "ready_s": ready_s,
        "ready_s_median": statistics.median(ready_s),
        "stop_s_median": statistics.median(stop_s),
        "exit_codes": codes,
        "rss_mb_at_ready": memory["rss_mb"],  # all processes: supervisor, engine, workers
        "pss_mb_at_ready": memory["pss_mb"],
    }
