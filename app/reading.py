"""Pictures of numbers: the split ``/read`` serves, and the hint a one-digit route gives when it was sent one.

A person who uploads "42" to ``/predict`` gets "not a digit", which is true but not helpful. When a
one-digit route calls an uploaded picture not a digit, the picture is split the way ``/read`` splits it
and its candidates go to the engine (one more call, for flagged pictures only); when that reading is
plainly a number (``model_store.reading.plain_number``: several digits, each a digit to the digit score,
none cut through thick ink) the answer carries a ``hint`` naming the number and the route that reads it.
"""

from __future__ import annotations

import logging

from fastapi import Request

from model_store.reading import ENGINE_CALLS, Candidates, plain_number

from .errors import ServiceError
from .inputs import Payload, image_bytes, parse_json
from .pipeline import Answer, infer
from .preprocess import candidates_bytes, candidates_drawing
from .runtime import Runtime, ServedModel
from .schemas import StrokesJSON
from .settings import Settings

log = logging.getLogger(__name__)


def engine_calls(settings: Settings) -> int:
    """How many engine calls' worth of candidates a picture may have (``model_store.reading.candidates``):
    each call holds one of the worker's large slots, and a long number takes at most half of them."""
    return max(1, min(ENGINE_CALLS, settings.large_slots_per_worker // 2))


def split_upload(payload: Payload, settings: Settings, max_crops: int, calls: int = 1) -> Candidates:
    """Payload (a picture, or a drawing's strokes) -> its candidate digits: at most ``max_crops``, what one
    engine call holds, or ``calls`` times as many where one call's would leave the rules' digits alone
    (``model_store.reading.candidates``). Worker thread; raises ServiceError."""
    body = parse_json(payload) if payload.json_body is not None else None
    if isinstance(body, StrokesJSON):
        return candidates_drawing(body.drawing(), settings.max_digits, max_crops, calls)
    return candidates_bytes(
        image_bytes(payload)[0], settings.max_image_pixels, settings.max_digits, max_crops, calls
    )


async def number_hint(
    request: Request, runtime: Runtime, served: ServedModel, payload: Payload, answer: Answer
) -> dict[str, str] | None:  # fmt: skip
    """The hint for a one-digit answer (``number``, ``route``, ``message``), or None: only for an encoded
    picture the model called not a digit, and only when ``/read`` would read it plainly as a number.
    Never fails the request: a picture that cannot be split, a full queue or a passed deadline just give
    no hint."""
    classes, threshold = len(served.card.labels), served.digit_threshold
    if not runtime.settings.number_hints or threshold is None or answer.outputs[0, classes] >= threshold:
        return None
    assert runtime.client is not None  # the answer came from the engine
    max_crops, calls = runtime.client.max_images, engine_calls(runtime.settings)
    try:
        cands = await runtime.run_cpu(split_upload, payload, runtime.settings, max_crops, calls)
        if len(cands.crops) < 2:
            return None
        reading = await infer(request, runtime, served, [c.pixels for c in cands.crops], answer.started)
    except ServiceError:  # `pixels` (no picture), no ink for the rules, too many marks, overload, deadline
        return None
    except Exception:  # a fault in splitting or reading the picture: the digit's answer still stands
        log.exception("no number hint: splitting the picture failed")
        return None
    text = plain_number(cands, reading.outputs, threshold, served.card.labels)
    if text is None:
        return None
    route = f"/v1/models/{served.name}/read"
    message = f'this picture looks like the number "{text}" rather than one digit: POST it to {route}'
    return {"number": text, "route": route, "message": message}
