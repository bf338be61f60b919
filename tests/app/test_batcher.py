"""DynamicBatcher on its own: batching, overload, deadlines, cancellation, failures, shutdown."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from app.batcher import DynamicBatcher, InferenceError
from app.errors import DeadlineExceeded, Unavailable
from app.metrics import Metrics


class FakeModel:
    """Answers each image with its own mean pixel value; records every batch it sees."""

    def __init__(self, delay_s: float = 0.0, gate: threading.Event | None = None):
        self.delay_s = delay_s
        self.gate = gate
        self.batches: list[list[float]] = []
        self.threads: set[str] = set()
        self.active = 0
        self.max_active = 0
        self._lock = threading.Lock()

    def __call__(self, xs: np.ndarray) -> list[float]:
        with self._lock:
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        try:
            self.threads.add(threading.current_thread().name)
            if self.gate is not None:
                assert self.gate.wait(10), "test gate never opened"
            time.sleep(self.delay_s)
            values = [float(x.mean()) for x in xs]
            self.batches.append(values)
            return values
        finally:
            with self._lock:
                self.active -= 1

    @property
    def seen(self) -> list[float]:
        return [v for b in self.batches for v in b]


def image(value: float) -> np.ndarray:
    return np.full((28, 28), value, dtype=np.float32)


def far() -> float:
    return time.monotonic() + 30


@pytest.fixture
def executor():
    ex = ThreadPoolExecutor(max_workers=1, thread_name_prefix="infer-test")
    yield ex
    ex.shutdown(wait=True)


def make(fn, executor, **kw) -> DynamicBatcher:  # type: ignore[no-untyped-def]
    kw.setdefault("max_wait_s", 0.005)
    return DynamicBatcher("fake", fn, executor=executor, **kw)


def test_concurrent_requests_form_batches_and_each_gets_its_own_answer(executor):
    model = FakeModel(delay_s=0.01)
    metrics = Metrics()

    async def main() -> None:
        b = make(model, executor, max_batch_size=8, metrics=metrics)
        b.start()
        values = [i / 100 for i in range(40)]
        results = await asyncio.gather(*(b.infer([image(v)], far()) for v in values))
        for v, [(out, timing)] in zip(values, results, strict=True):
            assert out == pytest.approx(v)
            assert 1 <= timing.batch_size <= 8
        await b.stop()

    asyncio.run(main())
    assert sorted(model.seen) == pytest.approx(sorted(i / 100 for i in range(40)))
    assert max(len(batch) for batch in model.batches) > 1
    assert all(len(batch) <= 8 for batch in model.batches)
    assert model.threads == {"infer-test_0"} and model.max_active == 1  # never entered concurrently
    assert metrics.registry.get_sample_value("vit_digits_inference_count_total", {"model": "fake"}) == 40
    executions = metrics.registry.get_sample_value("vit_digits_execution_count_total", {"model": "fake"})
    assert executions == len(model.batches) < 40
    assert metrics.registry.get_sample_value("vit_digits_batch_size_count", {"model": "fake"}) == executions


def test_waits_for_announced_requests_but_not_when_idle(executor):
    model = FakeModel()

    async def main() -> None:
        b = make(model, executor, max_batch_size=8, max_wait_s=0.5)
        b.start()
        t0 = time.monotonic()
        await b.infer([image(0.1)], far())
        assert time.monotonic() - t0 < 0.25  # idle: no 500 ms wait for company
        with b.expect(1):  # a second request is on its way (being preprocessed)
            first = asyncio.ensure_future(b.infer([image(0.2)], far()))
            await asyncio.sleep(0.05)
            second = asyncio.ensure_future(b.infer([image(0.3)], far()))
        await asyncio.gather(first, second)
        await b.stop()

    asyncio.run(main())
    assert model.batches[-1] == pytest.approx([0.2, 0.3])


def test_strict_wait_collects_everything_within_max_wait(executor):
    model = FakeModel()

    async def main() -> None:
        b = make(model, executor, max_batch_size=8, max_wait_s=0.2, adaptive_wait=False)
        b.start()
        first = asyncio.ensure_future(b.infer([image(0.2)], far()))
        await asyncio.sleep(0.05)
        second = asyncio.ensure_future(b.infer([image(0.3)], far()))
        await asyncio.gather(first, second)
        await b.stop()

    asyncio.run(main())
    assert model.batches == [pytest.approx([0.2, 0.3])]


def test_full_queue_refuses_at_once_and_everything_is_answered(executor):
    gate = threading.Event()
    model = FakeModel(gate=gate)

    async def main() -> list:
        b = make(model, executor, max_batch_size=2, max_queue_size=4)
        b.start()
        tasks = [asyncio.ensure_future(b.infer([image(i / 100)], far())) for i in range(12)]
        await asyncio.sleep(0.05)  # 4 were queued (8 refused), then 2 went into the (blocked) model
        assert b.pending == 4
        tasks += [asyncio.ensure_future(b.infer([image(0.5 + i / 100)], far())) for i in range(2)]
        await asyncio.sleep(0.01)  # the queue is full
        t0 = time.monotonic()
        with pytest.raises(Unavailable) as refused:
            await b.infer([image(0.5)], far())
        assert time.monotonic() - t0 < 0.05  # at once, not after a wait
        assert refused.value.headers == {"Retry-After": "1"}
        gate.set()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        await b.stop()
        return results

    results = asyncio.run(main())
    ok = [r for r in results if not isinstance(r, BaseException)]
    refused = [r for r in results if isinstance(r, Unavailable)]
    assert len(ok) == 6 and len(refused) == 8
    assert {round(out, 2) for [(out, _)] in ok} == {round(v, 2) for v in model.seen}


def test_expired_requests_are_dropped_before_compute(executor):
    gate = threading.Event()
    model = FakeModel(gate=gate)

    async def main() -> None:
        b = make(model, executor, max_batch_size=1)
        b.start()
        blocker = asyncio.ensure_future(b.infer([image(0.1)], far()))
        await asyncio.sleep(0.05)  # the model is busy with the blocker
        late = asyncio.ensure_future(b.infer([image(0.9)], time.monotonic() + 0.05))
        await asyncio.sleep(0.15)
        with pytest.raises(DeadlineExceeded):
            await late
        gate.set()
        await blocker
        await asyncio.sleep(0.05)
        await b.stop()
        assert b.stats.cancelled + b.stats.expired == 1

    asyncio.run(main())
    assert model.seen == pytest.approx([0.1])  # 0.9 never computed


def test_cancelled_requests_cost_no_compute(executor):
    gate = threading.Event()
    model = FakeModel(gate=gate)

    async def main() -> None:
        b = make(model, executor, max_batch_size=4)
        b.start()
        blocker = asyncio.ensure_future(b.infer([image(0.1)], far()))
        await asyncio.sleep(0.05)
        gone = asyncio.ensure_future(b.infer([image(0.7), image(0.8)], far()))
        stays = asyncio.ensure_future(b.infer([image(0.3)], far()))
        await asyncio.sleep(0.01)
        gone.cancel()  # the client disconnected
        gate.set()
        await blocker
        [(out, _)] = await stays
        assert out == pytest.approx(0.3)
        assert b.stats.cancelled == 2
        await b.stop()

    asyncio.run(main())
    assert sorted(model.seen) == pytest.approx([0.1, 0.3])


def test_a_failing_image_does_not_fail_the_others(executor):
    def flaky(xs: np.ndarray) -> list[float]:
        if any(np.isnan(x).any() for x in xs):
            raise ValueError("NaN in input")
        return [float(x.mean()) for x in xs]

    async def main() -> None:
        b = make(flaky, executor, max_batch_size=8, adaptive_wait=False, max_wait_s=0.05)
        b.start()
        values = [0.1, float("nan"), 0.3]
        results = await asyncio.gather(*(b.infer([image(v)], far()) for v in values), return_exceptions=True)
        assert results[0][0][0] == pytest.approx(0.1) and results[2][0][0] == pytest.approx(0.3)
        assert isinstance(results[1], InferenceError)
        await b.stop()

    asyncio.run(main())


def test_output_count_is_checked(executor):
    async def main() -> None:
        b = make(lambda xs: [0.0] * (len(xs) + 1), executor)
        b.start()
        with pytest.raises(InferenceError, match="outputs for 1 inputs"):
            await b.infer([image(0.5)], far())
        await b.stop()

    asyncio.run(main())


def test_drain_answers_queued_work_then_refuses(executor):
    model = FakeModel(delay_s=0.02)

    async def main() -> None:
        b = make(model, executor, max_batch_size=2)
        b.start()
        tasks = [asyncio.ensure_future(b.infer([image(i / 10)], far())) for i in range(6)]
        await asyncio.sleep(0)
        assert await b.drain(timeout_s=5)
        assert b.pending == 0
        results = await asyncio.wait_for(asyncio.gather(*tasks), 1)  # all answered, none refused
        assert [round(out, 1) for [(out, _)] in results] == [i / 10 for i in range(6)]
        with pytest.raises(Unavailable):
            b.submit([image(0.5)], far())
        await b.stop()

    asyncio.run(main())
    assert len(model.seen) == 6


def test_stop_fails_whatever_is_left_with_503(executor):
    gate = threading.Event()
    model = FakeModel(gate=gate)

    async def main() -> None:
        b = make(model, executor, max_batch_size=1)
        b.start()
        tasks = [asyncio.ensure_future(b.infer([image(i / 10)], far())) for i in range(3)]
        await asyncio.sleep(0.05)
        await b.stop()
        gate.set()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        assert all(isinstance(r, Unavailable) for r in results)

    asyncio.run(main())
