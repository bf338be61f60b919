"""Graceful shutdown: SIGTERM a real server while requests are queued. Every request it had received is
answered (200, or 503 once draining began), new ones are refused, and the process exits 0 in bounded time."""

from __future__ import annotations

import asyncio
import signal
import time

import pytest

from testkit.http import read_answer, send_request, wire_request
from testkit.metrics import total

N = 200
PREDICT = "/v1/models/vit-mnist/predict"


async def run_scenario(srv, payload: bytes) -> dict:
    conns = [await asyncio.open_connection("127.0.0.1", srv.port) for _ in range(N)]
    for _, writer in conns:
        writer.write(payload)
    await asyncio.gather(*(w.drain() for _, w in conns))

    # SIGTERM once the service has taken in every request (queued or done) while some still wait
    loop = asyncio.get_running_loop()
    deadline = time.monotonic() + 10
    pending = 0.0
    while time.monotonic() < deadline:
        s = await loop.run_in_executor(None, srv.metrics)
        pending = total(s, "vit_digits_pending_requests", model="vit-mnist")
        done = total(s, "vit_digits_inference_count", model="vit-mnist") or total(
            s, "vit_digits_batch_size_sum", model="vit-mnist"
        )
        if pending + done >= N or (pending and time.monotonic() > deadline - 8):
            break
        await asyncio.sleep(0.01)  # polling another process's /metrics: no event crosses processes
    srv.terminate()
    sigterm_at = time.monotonic()

    async def answer(reader, writer):
        try:
            return await asyncio.wait_for(read_answer(reader), 60)
        except Exception as exc:
            return exc
        finally:
            writer.close()

    answers = await asyncio.gather(*(answer(r, w) for r, w in conns))
    late = None
    try:  # a request after SIGTERM: refused at the socket, or 503
        late = await send_request(srv.port, payload, timeout=10)
    except OSError as exc:
        late = exc
    return {"answers": answers, "pending_at_sigterm": pending, "sigterm_at": sigterm_at, "late": late}


def test_sigterm_with_requests_in_flight(start_server, full_store, digit_png):
    srv = start_server(full_store, max_batch_size=1, max_wait_ms=0, torch_threads=1, max_queue_size=1000)
    payload = wire_request("POST", PREDICT, digit_png, "image/png")
    result = asyncio.run(run_scenario(srv, payload))
    code = srv.wait(timeout=60)
    exit_s = time.monotonic() - result["sigterm_at"]

    answers = result["answers"]
    print(
        f"shutdown: {N} sent, {result['pending_at_sigterm']:.0f} pending at SIGTERM, exit {code} after "
        f"{exit_s:.1f} s, statuses {sorted({getattr(a, 'status', None) for a in answers}, key=str)}"
    )
    failures = [a for a in answers if isinstance(a, Exception)]
    assert not failures, f"{len(failures)}/{N} queued requests got no answer, e.g. {failures[:3]!r}"
    statuses = [a.status for a in answers]
    assert set(statuses) <= {200, 503}, statuses
    assert statuses.count(200) > 0
    late = result["late"]
    assert isinstance(late, OSError) or late.status == 503, late
    # uvicorn >= 0.29 re-raises the SIGTERM it handled once shutdown is complete, so a graceful exit
    # reads as "terminated by SIGTERM" (-15, shell 143) rather than 0; both mean it finished cleanly.
    assert code in (0, -signal.SIGTERM), f"exit code {code}:\n{srv.log()}"
    assert "Application shutdown complete" in srv.log() or code == 0, srv.log()
    if result["pending_at_sigterm"] == 0:
        pytest.skip("the machine emptied the queue before SIGTERM: nothing was in flight to drain")
