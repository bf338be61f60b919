"""The request path, owned in one place: read -> decode/preprocess -> one ``await infer`` on the
engine -> format. The inference routes are thin adapters over it.

``infer`` sends the images through the hop (``app.hop``) and waits for the engine's reply; a client
that leaves or a deadline that passes cancels the work (dropped before compute when still queued).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any

import numpy as np
from fastapi import Request

from .errors import ClientDisconnected, DeadlineExceeded, ServiceError, Unavailable
from .hop import EngineGone, EngineRefused, Op, Reply, Status
from .inputs import SINGLE, BodyForm, Payload, preprocess_all, read_payload
from .runtime import Runtime, ServedModel
from .v2codec import output_tensors


class InferenceError(ServiceError):
    status_code = 500


@dataclass(slots=True)
class Answer:
    model: ServedModel
    reply: Reply
    started: float

    @property
    def outputs(self) -> np.ndarray:
        """(n, width) float32 rows from the engine."""
        return self.reply.outputs

    def timing(self) -> dict[str, float]:
        r = self.reply
        return {
            "queue_ms": round(r.queue_s * 1000, 3),
            "compute_ms": round(r.compute_s * 1000, 3),
            "total_ms": round((time.monotonic() - self.started) * 1000, 3),
            "batch_size": r.batch_size,
        }

    def prediction(self, i: int = 0) -> dict[str, Any]:
        return prediction(self.model, self.outputs[i])


def prediction(model: ServedModel, row: np.ndarray) -> dict[str, Any]:
    """One output row -> the JSON prediction: digit, label, confidence, probabilities, is_digit."""
    classes = len(model.card.labels)
    probs = row[:classes]
    digit = int(probs.argmax())
    score = float(row[classes])
    threshold = model.digit_threshold
    return {
        "digit": digit,
        "label": model.card.labels[digit],
        "confidence": float(probs[digit]),
        "probabilities": probs.tolist(),
        "is_digit": None if threshold is None else score >= threshold,
        "digit_score": score,
    }


def serving(request: Request) -> tuple[Runtime, ServedModel]:
    """(runtime, model) read straight off the request: FastAPI's dependency solving took a quarter
    of the event loop's time per predict request. Routes document parameters with openapi_extra."""
    runtime: Runtime = request.app.state.runtime
    return runtime, runtime.model_for_inference(request.path_params["name"])


async def read_images(
    request: Request, runtime: Runtime, form: BodyForm = SINGLE
) -> tuple[Payload, list[np.ndarray]]:  # fmt: skip
    """Read the body and decode it into MNIST-style (28, 28) float32 images; the payload as it came
    (a one-digit route reads it again as a number for its hint, ``app.reading``)."""
    payload = await read_payload(request, runtime.settings, form)
    return payload, await runtime.decode(payload)


async def infer(
    request: Request | None, runtime: Runtime, model: ServedModel, images: list[np.ndarray], started: float,
    op: Op = Op.PREDICT,
) -> Answer:  # fmt: skip
    """Run images through the engine; 503/504 on refusal or deadline, 499 when the client left.
    ``request``: the HTTP request, watched for the client leaving; None where the caller's own task is
    cancelled when its client leaves (gRPC). More images than one engine call holds (a long number's
    candidates) go as several calls at once, their rows joined; counted as one request of the model."""
    client = runtime.client
    assert client is not None, "runtime not started"
    width = model.predict_width
    if op == Op.ATTENTION:
        assert model.attention is not None
        width = model.attention["width"]
    deadline = started + runtime.settings.request_timeout_s
    size = client.max_images  # 0 while the engine is away: submit says so (503)
    ok = False
    try:
        if len(images) <= size or not size:
            reply = await _submitted(request, runtime, model, op, images, width, deadline)
        else:  # more than one engine call holds: in parts, sent at once
            parts = [images[i : i + size] for i in range(0, len(images), size)]
            calls = [_submitted(request, runtime, model, op, p, width, deadline) for p in parts]
            reply = await _joined(calls)
        ok = True
    finally:  # refused, expired, failed or abandoned requests count as the model's failures
        runtime.metrics.model_request(model.name, ok).observe(time.monotonic() - started)
    return Answer(model, reply, started)


async def _submitted(
    request: Request | None, runtime: Runtime, model: ServedModel, op: Op, images: list[np.ndarray],
    width: int, deadline: float,
) -> Reply:  # fmt: skip
    """One engine call: submitted, then awaited (its own errors: 503/504, 499)."""
    client = runtime.client
    assert client is not None
    try:
        req_id, future = client.submit(model.index, op, images, width, deadline)
    except EngineGone:
        raise Unavailable(f"the engine is not available: {runtime.not_ready_reason}") from None
    except EngineRefused as exc:
        raise _refusal(exc.status, model.name) from None
    return await _wait(request, client, req_id, future, deadline, model.name)


async def _joined(parts: list[Coroutine[Any, Any, Reply]]) -> Reply:
    """Engine calls sent at once -> one reply: their rows in order; the largest forward pass, the longest
    queue wait and compute (the parts may share passes or follow one another). The first failure is
    raised at once, the other calls cancelled (dropped before compute where still queued)."""
    tasks = [asyncio.ensure_future(part) for part in parts]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        for task in tasks:
            if task in done and not task.cancelled() and task.exception() is not None:
                raise task.exception()  # type: ignore[misc]
        replies = [task.result() for task in tasks]  # every one done: no failure came first
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)  # the others' errors: retrieved, not raised
    return Reply(
        outputs=np.concatenate([r.outputs for r in replies]),
        batch_size=max(r.batch_size for r in replies),
        queue_s=max(r.queue_s for r in replies),
        compute_s=max(r.compute_s for r in replies),
    )


async def infer_tensors(
    request: Request | None, runtime: Runtime, model: ServedModel, images: np.ndarray | None,
    encoded: list[bytes] | None, started: float,
) -> dict[str, np.ndarray]:  # fmt: skip
    """The Open Inference Protocol's inference, whichever wire brought it (REST ``/v2``, gRPC): MNIST-style
    ``images``, or ``encoded`` pictures preprocessed as uploads are (off the event loop), through the
    engine; every output tensor (``v2codec.output_tensors``)."""
    if encoded is not None:
        batch = await runtime.run_cpu(preprocess_all, encoded, runtime.settings)
    else:
        assert images is not None
        batch = list(images)
    out = (await infer(request, runtime, model, batch, started)).outputs
    classes = len(model.card.labels)
    return output_tensors(out[:, :classes], out[:, classes], model.digit_threshold)


async def _wait(request: Request | None, client: Any, req_id: int, future: asyncio.Future, deadline: float,
                name: str) -> Reply:  # fmt: skip
    """Await the reply with one disconnect watcher and one timer (no extra tasks on the hot path)."""
    loop = asyncio.get_running_loop()
    why: list[type[Exception]] = []

    def stop(reason: type[Exception]) -> None:
        if not future.done():
            why.append(reason)
            future.cancel()

    watch = None
    if request is not None:
        watch = loop.create_task(_disconnected(request))
        watch.add_done_callback(lambda t: None if t.cancelled() else stop(ClientDisconnected))
    timer = loop.call_later(max(deadline - time.monotonic(), 0.0), stop, DeadlineExceeded)
    try:
        return await future
    except asyncio.CancelledError:
        client.cancel(req_id)
        if why and why[0] is DeadlineExceeded:
            raise DeadlineExceeded(f"no answer from {name} within the request timeout") from None
        if why:
            raise ClientDisconnected() from None
        raise  # this request's own task was cancelled
    except EngineGone:
        raise Unavailable("the engine went away while this request waited; retry shortly") from None
    except EngineRefused as exc:
        raise _refusal(exc.status, name) from None
    finally:
        timer.cancel()
        if watch is not None:
            watch.cancel()


def _refusal(status: Status, name: str) -> ServiceError:
    if status == Status.EXPIRED:
        return DeadlineExceeded(f"request to {name} expired in the queue")
    if status == Status.OVERLOADED:
        return Unavailable(f"model {name} is overloaded; retry shortly")
    if status == Status.SHUTTING_DOWN:
        return Unavailable(f"model {name} is shutting down")
    if status == Status.UNKNOWN:
        return InferenceError(f"the engine does not serve {name} this way")
    return InferenceError(f"inference failed on {name}")


async def _disconnected(request: Request) -> None:
    """Returns once the client has gone (call only after the body has been read)."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return
