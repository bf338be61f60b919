"""What a worker's gRPC streams may hold at once (``StreamAdmission``): requests wait for slots and for
room in the worker's body budget, shared with HTTP bodies, and give both back when answered."""

from __future__ import annotations

import asyncio

import pytest
from prometheus_client import CollectorRegistry, Gauge

pytest.importorskip("grpc")
from app.limits import BodyBudget  # noqa: E402
from app.oip_grpc import messages as pb  # noqa: E402
from app.oip_grpc.streams import StreamAdmission  # noqa: E402


def request(images: int, size: int) -> object:
    message = pb.ModelInferRequest(model_name="m", raw_input_contents=[bytes(size)])
    message.inputs.add(name="image", datatype="UINT8", shape=[images, 28, 28])
    return message


def budget(limit: int) -> BodyBudget:
    return BodyBudget(limit, Gauge("held", "held", registry=CollectorRegistry()))


def test_a_request_waits_for_room_in_the_body_budget_and_gives_it_back() -> None:
    first, second = request(1, 60_000), request(1, 30_000)
    a, b = first.ByteSize(), second.ByteSize()  # the messages' own size, as received

    async def scenario() -> list[tuple[bool, int]]:
        bytes_ = budget(100_000)
        admission = StreamAdmission(singles=8, batches=8, budget=bytes_)
        seen = []
        leave_first = await admission.enter(first)
        bytes_.hold(30_000)  # an HTTP body held by the same worker
        entering = asyncio.ensure_future(admission.enter(second))
        await asyncio.sleep(0.05)
        seen.append((entering.done(), bytes_.held))
        leave_first(None)
        leave_second = await asyncio.wait_for(entering, 5)
        seen.append((True, bytes_.held))
        leave_second(None)
        bytes_.release(30_000)
        seen.append((True, bytes_.held))
        return seen

    assert asyncio.run(scenario()) == [(False, a + 30_000), (True, 30_000 + b), (True, 0)]


def test_batch_requests_wait_for_the_large_slots_and_single_images_do_not() -> None:
    async def scenario() -> tuple[bool, bool]:
        admission = StreamAdmission(singles=4, batches=1, budget=budget(10**9))
        leave = await admission.enter(request(2, 100))
        batch = asyncio.ensure_future(admission.enter(request(64, 100)))
        single = asyncio.ensure_future(admission.enter(request(1, 100)))
        await asyncio.sleep(0.05)
        waited = not batch.done() and single.done()
        leave(None)
        await asyncio.wait_for(batch, 5)
        return waited, batch.done()

    assert asyncio.run(scenario()) == (True, True)
