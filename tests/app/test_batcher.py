"""The engine's dynamic batcher: batches across requesters (workers), refusals, drops, failures.

Ordering is arranged with gates (threading events the model call waits on), never with sleeps.
"""

from __future__ import annotations

import asyncio
import threading
import time
from contextlib import suppress

import numpy as np

from app.engine.batcher import DeviceRunner, DynamicBatcher, Job
from app.hop import Status
from app.metrics import Metrics


class Origin:
    """A requester (one worker's link): inputs are the slot number, outputs recorded."""

    def __init__(self) -> None:
        self.closed = False
        self.answers: dict[int, tuple[Status, int]] = {}
        self.written: dict[int, np.ndarray] = {}
        self.answered = asyncio.Event()

    def inputs(self, slot: int, n: int) -> np.ndarray:
        return np.full((n, 28, 28), slot, dtype=np.float32)

    def write(self, slot: int, outputs: np.ndarray) -> None:
        self.written[slot] = outputs.copy()

    def done(
        self, req_id: int, status: Status, batch: int = 0, queue_s: float = 0.0, compute_s: float = 0.0
    ) -> None:
        assert req_id not in self.answers, "answered twice"
        self.answers[req_id] = (status, batch)
        self.answered.set()


class Model:
    """Echoes each image's value; the first call can be held at a gate; records batch sizes."""

    def __init__(self, hold_first: bool = False, fail_on: float | None = None) -> None:
        self.calls: list[int] = []
        self.gate = threading.Event()
        self.entered = threading.Event()
        self.hold_first = hold_first
        self.fail_on = fail_on

    def __call__(self, views: list[np.ndarray]) -> np.ndarray:
        x = np.concatenate(views)
        self.calls.append(len(x))
        self.entered.set()
        if self.hold_first and len(self.calls) == 1:
            assert self.gate.wait(10)
        if self.fail_on is not None and (x[:, 0, 0] == self.fail_on).any():
            raise RuntimeError("bad input")
        return x[:, 0, :2].copy()


def make(model: Model, **kw: object) -> DynamicBatcher:
    return DynamicBatcher("m", model, runner=DeviceRunner(), **kw)  # type: ignore[arg-type]


def job(origin: Origin, req_id: int, n: int = 1, deadline_s: float = 30.0) -> Job:
    now = time.monotonic()
    return Job(origin, req_id, slot=req_id, n=n, deadline=now + deadline_s, enqueued=now)


async def answered(origins: list[Origin], count: int) -> None:
    while sum(len(o.answers) for o in origins) < count:
        for o in origins:
            o.answered.clear()
        await asyncio.wait([asyncio.ensure_future(o.answered.wait()) for o in origins], timeout=10,
                           return_when=asyncio.FIRST_COMPLETED)  # fmt: skip


def test_jobs_from_two_workers_share_a_batch_and_each_gets_its_own_rows() -> None:
    async def main() -> None:
        model = Model(hold_first=True)
        b = make(model, max_batch_size=8)
        b.start()
        a, c = Origin(), Origin()
        b.submit(job(a, 1))
        await asyncio.to_thread(model.entered.wait, 10)  # the model is busy with job 1 ...
        for req_id in (2, 3):
            b.submit(job(a, req_id))
            b.submit(job(c, req_id + 10, n=2))  # ... while both workers queue more
        model.gate.set()
        await answered([a, c], 5)
        assert model.calls == [1, 6]  # everything that queued meanwhile went in one batch
        assert a.answers[2] == (Status.OK, 6) and c.answers[13] == (Status.OK, 6)
        assert (c.written[13] == 13).all() and c.written[13].shape == (2, 2)
        assert (a.written[3] == 3).all()
        await b.stop()

    asyncio.run(main())


def test_a_full_queue_refuses_at_once_and_expired_or_cancelled_jobs_cost_no_compute() -> None:
    async def main() -> None:
        model = Model(hold_first=True)
        b = make(model, max_batch_size=8, max_queue_size=3)
        b.start()
        o = Origin()
        b.submit(job(o, 1))
        await asyncio.to_thread(model.entered.wait, 10)
        b.submit(job(o, 2, deadline_s=0.0))  # expires in the queue
        cancelled = job(o, 3)
        b.submit(cancelled)
        b.submit(job(o, 4))
        b.submit(job(o, 5, n=2))  # 3 images queued already: over the limit
        assert o.answers[5] == (Status.OVERLOADED, 0)
        cancelled.cancelled = True
        model.gate.set()
        await answered([o], 5)
        assert o.answers[2][0] == Status.EXPIRED and o.answers[3][0] == Status.CANCELLED
        assert o.answers[4] == (Status.OK, 1) and model.calls == [1, 1]
        await b.stop()

    asyncio.run(main())


def test_a_failing_image_fails_alone_and_the_rest_of_its_batch_is_answered() -> None:
    async def main() -> None:
        model = Model(hold_first=True, fail_on=3.0)
        b = make(model, max_batch_size=8)
        b.start()
        o = Origin()
        b.submit(job(o, 1))
        await asyncio.to_thread(model.entered.wait, 10)
        for req_id in (2, 3, 4):
            b.submit(job(o, req_id))
        model.gate.set()
        await answered([o], 4)
        assert o.answers[3][0] == Status.FAILED
        assert all(o.answers[i][0] == Status.OK for i in (1, 2, 4)) and (o.written[4] == 4).all()
        await b.stop()

    asyncio.run(main())


def test_a_job_larger_than_the_batch_limit_runs_alone_and_stop_answers_what_is_queued() -> None:
    async def main() -> None:
        model = Model(hold_first=True)
        b = make(model, max_batch_size=4)
        b.start()
        o = Origin()
        b.submit(job(o, 1))
        await asyncio.to_thread(model.entered.wait, 10)
        b.submit(job(o, 2, n=6))
        b.submit(job(o, 3))
        model.gate.set()
        await answered([o], 3)
        assert model.calls == [1, 6, 1]
        b._accepting = True
        model.hold_first, model.calls = True, []
        model.gate.clear()
        model.entered.clear()
        await b.stop()
        b.submit(job(o, 9))
        assert o.answers[9][0] == Status.SHUTTING_DOWN

    asyncio.run(main())


def test_a_lone_image_runs_on_the_loop_and_what_arrived_meanwhile_batches_on_the_thread() -> None:
    """The engine's CPU mode (a DeviceRunner with on_loop_max_images=1). SUBMITs that arrive during a
    forward pass on the loop wait in the socket and are read after it; here the model queues them."""

    async def main() -> None:
        o = Origin()
        threads: list[threading.Thread] = []
        model = Model(fail_on=3.0)

        def forward(views: list[np.ndarray]) -> np.ndarray:
            threads.append(threading.current_thread())
            if len(model.calls) == 0:
                for req_id in (2, 3, 4):
                    b.submit(job(o, req_id))
            return model(views)

        b = DynamicBatcher("m", forward, runner=DeviceRunner(on_loop_max_images=1),
                           max_batch_size=8)  # fmt: skip
        b.start()
        b.submit(job(o, 1))
        await answered([o], 4)
        loop_thread = threading.current_thread()
        assert model.calls == [1, 3, 1, 1, 1]  # the three that arrived meanwhile went in together
        assert threads[0] is loop_thread and threads[1] is not loop_thread  # then one by one: the loop
        assert all(t is loop_thread for t in threads[2:])
        assert o.answers[3][0] == Status.FAILED  # the culprit alone
        assert o.answers[2] == (Status.OK, 3) and o.answers[4] == (Status.OK, 3)
        await b.stop()

    asyncio.run(main())


def test_after_a_batch_on_the_loop_it_yields_so_a_cancel_read_meanwhile_drops_a_queued_job() -> None:
    """A backlog of lone images all run on the loop: between them the loop must read its sockets
    (here: a CANCEL, as a callback the first forward pass schedules) and send the answers."""

    async def main() -> None:
        o = Origin()
        loop = asyncio.get_running_loop()
        model = Model()
        jobs = [job(o, req_id) for req_id in (1, 2, 3, 4)]

        def forward(views: list[np.ndarray]) -> np.ndarray:
            if not model.calls:
                loop.call_soon(setattr, jobs[3], "cancelled", True)  # the CANCEL of job 4 arrives
            return model(views)

        b = DynamicBatcher("m", forward, runner=DeviceRunner(on_loop_max_images=1),
                           max_batch_size=1)  # fmt: skip
        b.start()
        for j in jobs:
            b.submit(j)
        await answered([o], 4)
        assert o.answers[4] == (Status.CANCELLED, 0) and model.calls == [1, 1, 1]
        await b.stop()

    asyncio.run(main())


def test_a_lone_image_waits_for_the_device_thread_while_another_batcher_computes_on_it() -> None:
    """Two models share one device runner: while one computes a batch on the thread, the other's lone
    image queues behind it on the thread instead of running on the loop at the same time."""

    async def main() -> None:
        runner = DeviceRunner(on_loop_max_images=1)
        big, lone = Model(hold_first=True), Model()
        order: list[str] = []

        def forward(name: str, model: Model):  # type: ignore[no-untyped-def]
            def call(views: list[np.ndarray]) -> np.ndarray:
                order.append(f"{name} in")
                out = model(views)
                order.append(f"{name} out")
                return out

            return call

        a = DynamicBatcher("a", forward("a", big), runner=runner)
        b = DynamicBatcher("b", forward("b", lone), runner=runner)
        a.start()
        b.start()
        oa, ob = Origin(), Origin()
        a.submit(job(oa, 1, n=2))  # two images: the device thread
        await asyncio.to_thread(big.entered.wait, 10)
        b.submit(job(ob, 2))  # a lone image while the thread is busy
        for _ in range(20):  # loop turns for b's task to take its job (on the loop, it would start now)
            await asyncio.sleep(0)
        assert order == ["a in"]
        big.gate.set()
        await answered([oa, ob], 2)
        assert order == ["a in", "a out", "b in", "b out"]
        assert ob.answers[2] == (Status.OK, 1)
        await a.stop()
        await b.stop()

    asyncio.run(main())


def test_a_forward_pass_cancelled_while_on_the_thread_still_keeps_the_loop_off_torch() -> None:
    """Cancelling the task that awaits a forward pass does not stop the thread computing it: until the
    thread is really done, a lone image still goes to the thread rather than running beside it."""

    async def main() -> None:
        runner = DeviceRunner(on_loop_max_images=1)
        held = Model(hold_first=True)
        threads: list[threading.Thread] = []

        def lone(views: list[np.ndarray]) -> np.ndarray:
            threads.append(threading.current_thread())
            return np.concatenate(views)[:, 0, :2].copy()

        image = np.zeros((1, 28, 28), np.float32)
        waiting = asyncio.create_task(runner.run(held, [np.zeros((2, 28, 28), np.float32)]))
        await asyncio.to_thread(held.entered.wait, 10)
        waiting.cancel()  # as Engine.stop does; the thread goes on computing
        with suppress(asyncio.CancelledError):
            await waiting
        second = asyncio.create_task(runner.run(lone, [image]))
        for _ in range(20):
            await asyncio.sleep(0)
        assert threads == []  # queued behind the held pass, not run on the loop beside it
        held.gate.set()
        await second
        assert threads and threads[0] is not threading.main_thread()
        assert runner._on_thread == 0  # counted back before the awaiting task resumed
        await runner.run(lone, [image])  # the thread is idle again: a lone image runs on the loop
        assert threads[-1] is threading.main_thread()

    asyncio.run(main())


class HeldModel(Model):
    """Every call waits at the gate; counts the calls inside at once."""

    def __init__(self) -> None:
        super().__init__()
        self.inside = 0
        self.most_inside = 0
        self.lock = threading.Lock()
        self.entries = threading.Semaphore(0)

    def __call__(self, views: list[np.ndarray]) -> np.ndarray:
        with self.lock:
            self.inside += 1
            self.most_inside = max(self.most_inside, self.inside)
        self.entries.release()
        assert self.gate.wait(10)
        with self.lock:
            self.inside -= 1
        return super().__call__(views)


def test_two_lanes_compute_two_batches_at_once_and_further_work_batches_until_one_frees() -> None:
    """The CPU engine's lanes (CPU_LANES): the device's batchers share them; a batch is formed only
    when a lane is free, so what arrives while every lane computes goes in together afterwards."""

    async def main() -> None:
        metrics = Metrics()
        runner = DeviceRunner(lanes=2, metrics=metrics)
        held = HeldModel()
        a = DynamicBatcher("a", held, runner=runner, max_batch_size=8)
        b = DynamicBatcher("b", held, runner=runner, max_batch_size=8)
        a.start()
        b.start()
        oa, ob = Origin(), Origin()
        a.submit(job(oa, 1, n=2))
        b.submit(job(ob, 2, n=3))
        for _ in range(2):  # both models inside at once, one on each lane
            assert await asyncio.to_thread(held.entries.acquire, True, 10)
        a.submit(job(oa, 3))  # no lane is free: these queue
        b.submit(job(ob, 4))
        a.submit(job(oa, 5, n=2))
        for _ in range(20):
            await asyncio.sleep(0)
        assert held.inside == 2 and a.pending == 5 and b.pending == 4
        busy = metrics.lanes_busy.labels("device")
        assert busy._value.get() == 2 and metrics.lanes.labels("device")._value.get() == 2
        held.gate.set()
        await answered([oa, ob], 5)
        assert held.most_inside == 2
        assert sorted(held.calls) == [1, 2, 3, 3]  # a's two queued jobs went in one batch
        assert (
            oa.answers[5] == (Status.OK, 3) and (oa.written[5] == 5).all() and oa.written[5].shape == (2, 2)
        )
        assert ob.answers[4] == (Status.OK, 1) and (ob.written[4] == 4).all()
        for _ in range(5):  # the lanes go back when the batches' tasks end, just after their answers
            await asyncio.sleep(0)
        assert a.pending == 0 and b.pending == 0 and busy._value.get() == 0
        await a.stop()
        await b.stop()

    asyncio.run(main())


def test_stop_answers_the_batches_on_the_lanes_at_once_and_writes_nothing_when_they_finish() -> None:
    """A job answered before its forward pass ends frees its worker's slot for another request: the
    late outputs must not be written into it."""

    async def main() -> None:
        runner = DeviceRunner(lanes=2)
        held = HeldModel()
        b = DynamicBatcher("m", held, runner=runner, max_batch_size=1)
        b.start()
        o = Origin()
        b.submit(job(o, 1))
        b.submit(job(o, 2))
        for _ in range(2):
            assert await asyncio.to_thread(held.entries.acquire, True, 10)
        await b.stop()
        assert o.answers == {1: (Status.SHUTTING_DOWN, 0), 2: (Status.SHUTTING_DOWN, 0)}
        held.gate.set()
        await asyncio.to_thread(runner.shutdown, True)  # both forward passes ran to the end
        for _ in range(20):
            await asyncio.sleep(0)
        assert len(held.calls) == 2 and o.written == {} and b.pending == 0

    asyncio.run(main())


def test_one_model_takes_a_second_lane_only_for_a_full_batch_and_light_work_stays_on_the_first() -> None:
    """While a batch of a model computes, what arrives waits for it unless a full batch is waiting:
    only then is the device behind and a second lane worth the front end's CPU. Work that needs one
    lane at a time always gets the same one (the same thread, the same core's caches)."""

    async def main() -> None:
        runner = DeviceRunner(lanes=2)
        held = HeldModel()
        threads: list[str] = []
        sizes: list[int] = []

        def forward(views: list[np.ndarray]) -> np.ndarray:
            threads.append(threading.current_thread().name)
            sizes.append(sum(len(v) for v in views))
            return held(views)

        b = DynamicBatcher("m", forward, runner=runner, max_batch_size=4)
        b.start()
        o = Origin()
        b.submit(job(o, 1))
        assert await asyncio.to_thread(held.entries.acquire, True, 10)
        for req_id in (2, 3, 4):  # three images: not a full batch, they wait for the first lane
            b.submit(job(o, req_id))
        for _ in range(20):
            await asyncio.sleep(0)
        assert held.inside == 1 and runner.lanes_busy == 1
        b.submit(job(o, 5))  # four waiting: the second lane takes them
        assert await asyncio.to_thread(held.entries.acquire, True, 10)
        assert held.inside == 2 and sizes == [1, 4]
        held.gate.set()
        await answered([o], 5)
        for req_id in (6, 7, 8):  # one at a time: always the first lane
            b.submit(job(o, req_id))
            await answered([o], req_id)
        assert threads[:2] == ["device-lane0_0", "device-lane1_0"]
        assert threads[2:] == ["device-lane0_0"] * 3
        await b.stop()

    asyncio.run(main())
