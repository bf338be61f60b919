"""Over HTTP (in-process): overload answers 503 + Retry-After, deadlines 504, a client that leaves costs
no compute. The model is held on a gate so that the queue state is known, not timed."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import numpy as np

from app.main import create_app

from .conftest import VIT, engine_batcher, make_settings, running

# The gate holds the model inside a forward pass of one image: the engine must keep reading requests
# meanwhile, so these apps compute lone images on the engine's device thread too
# (CPU_COMPUTE_ON_LOOP=false). Computing on the loop: tests/app/test_batcher.py and every other server.
# One lane, so that the held pass holds the device and the rest queues (lanes: test_batcher.py).
GATED = {"cpu_compute_on_loop": False, "cpu_lanes": 1}

PREDICT = f"/v1/models/{VIT}/predict"


def predict_scope(content_type: bytes, length: int) -> dict:
    """The ASGI scope of a POST to PREDICT, for tests that play the client's side message by message."""
    return {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": PREDICT, "raw_path": PREDICT.encode(), "query_string": b"",
        "root_path": "", "client": ("127.0.0.1", 5555), "server": ("test", 80),
        "headers": [(b"content-type", content_type), (b"content-length", str(length).encode())],
    }  # fmt: skip


def pixels(value: int = 255) -> dict:
    u8 = np.zeros((28, 28), np.uint8)
    u8[6:22, 12:16] = value
    return {"pixels": u8.tolist()}


class Gate:
    """Wraps a batcher's model call: records batch sizes and blocks until opened."""

    def __init__(self, batcher) -> None:  # type: ignore[no-untyped-def]
        self.batcher = batcher
        self.original = batcher.run_batch
        self.event = threading.Event()
        self.calls: list[int] = []
        batcher.run_batch = self

    def __call__(self, xs: np.ndarray):  # type: ignore[no-untyped-def]
        self.calls.append(len(xs))
        assert self.event.wait(20), "gate never opened"
        return self.original(xs)

    def open(self) -> None:
        self.event.set()


async def hold_the_model(app, client) -> tuple[Gate, asyncio.Future]:  # type: ignore[no-untyped-def]
    """One request that the (gated) ViT has started on and that waits until the gate opens."""
    gate = Gate(engine_batcher(app, VIT))
    first = asyncio.ensure_future(client.post(PREDICT, json=pixels()))
    await until(lambda: gate.calls == [1])
    return gate, first


async def until(condition, timeout: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    """Poll in-process state the batcher exposes no event for; the timeout only catches a hang."""
    end = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < end, "condition not reached"
        await asyncio.sleep(0.005)


def test_overload_gives_503_with_retry_after_and_everyone_is_answered(test_store):
    # A long deadline: on a saturated machine the queued three must not expire into 504s.
    app = create_app(
        make_settings(test_store, max_queue_size=2, max_batch_size=1, request_timeout_s=120, **GATED)
    )

    async def main() -> list:
        async with running(app) as c:
            # The first one holds the model; small payloads are decoded on the event loop, so a
            # burst sent together could otherwise fill the queue before the batcher takes the first.
            gate, first = await hold_the_model(app, c)
            batcher = gate.batcher
            tasks = [first]
            tasks += [asyncio.ensure_future(c.post(PREDICT, json=pixels())) for _ in range(19)]
            # refused at once while the model is still blocked
            await until(lambda: sum(t.done() for t in tasks) >= 17, timeout=60)
            assert batcher.pending == 3 and gate.calls == [1]
            gate.open()
            return await asyncio.gather(*tasks)

    responses = asyncio.run(main())
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [200] * 3 + [503] * 17
    for r in responses:
        if r.status_code == 503:
            assert int(r.headers["retry-after"]) >= 1 and "overloaded" in r.json()["detail"]
        else:
            assert r.json()["digit"] in range(10)


def test_a_request_past_its_deadline_gets_504_and_costs_no_compute(test_store):
    app = create_app(make_settings(test_store, request_timeout_s=0.3, max_batch_size=1, **GATED))

    async def main() -> list:
        async with running(app) as c:
            gate, first = await hold_the_model(app, c)
            batcher = gate.batcher
            second = asyncio.ensure_future(c.post(PREDICT, json=pixels(200)))
            r2 = await second  # waits in the queue behind the blocked model until its deadline
            gate.open()
            r1 = await first
            # dropped when the batcher took it from the queue: from then on it can never be computed
            await until(lambda: batcher.stats.cancelled + batcher.stats.expired == 1)
            assert gate.calls == [1] and batcher.pending == 0  # the expired one never reached the model
            return [r1, r2]

    r1, r2 = asyncio.run(main())
    assert r2.status_code == 504 and "timeout" in r2.json()["detail"]
    assert r1.status_code == 504  # it was computing when its own deadline passed


def test_tiny_timeout_is_504_not_500(make_client):
    c = make_client(request_timeout_s=1e-6)
    r = c.post(PREDICT, json=pixels())
    assert r.status_code == 504


def test_a_client_that_leaves_while_uploading_is_not_an_error(test_store, caplog):
    app = create_app(make_settings(test_store))
    sent: list[dict] = []

    async def main() -> None:
        async with running(app):
            messages = [
                {"type": "http.request", "body": b"\x89PNG\r\n", "more_body": True},
                {"type": "http.disconnect"},
            ]

            async def receive() -> dict:
                return messages.pop(0)

            async def send(message: dict) -> None:
                sent.append(message)

            await app(predict_scope(b"image/png", 100_000), receive, send)

    asyncio.run(main())
    assert [m["status"] for m in sent if m["type"] == "http.response.start"] == [499]
    assert not [r for r in caplog.records if r.levelname == "ERROR"]


def test_a_client_that_disconnects_costs_no_compute(test_store):
    app = create_app(make_settings(test_store, max_batch_size=1, **GATED))
    body = json.dumps(pixels(180)).encode()
    sent: list[dict] = []

    async def leaving_client(gone: asyncio.Event) -> None:
        """A raw ASGI call: the body, then (when told) http.disconnect."""
        messages = [{"type": "http.request", "body": body, "more_body": False}]

        async def receive() -> dict:
            if messages:
                return messages.pop(0)
            await gone.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict) -> None:
            sent.append(message)

        await app(predict_scope(b"application/json", len(body)), receive, send)

    async def main() -> None:
        async with running(app) as c:
            gate, blocker = await hold_the_model(app, c)
            batcher = gate.batcher
            gone = asyncio.Event()
            leaving = asyncio.ensure_future(leaving_client(gone))
            await until(lambda: batcher.pending == 2)  # queued behind the blocker
            gone.set()
            await leaving
            gate.open()
            assert (await blocker).status_code == 200
            await until(lambda: batcher.stats.cancelled == 1)  # dropped as the batcher took it
            assert gate.calls == [1] and batcher.pending == 0  # its image was never computed

    asyncio.run(main())
    statuses = [m["status"] for m in sent if m["type"] == "http.response.start"]
    assert statuses == [499]
