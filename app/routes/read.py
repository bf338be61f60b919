"""Whole numbers: ``POST /v1/models/{name}/read`` splits a picture into digits and reads them all.

The picture is split by ``model_store.reading`` on a worker thread into every plausible digit (the
alternative ways to merge broken strokes and cut touching ones); all of them go to the model's batcher
at once, so a number costs one forward pass (a long number's, up to ENGINE_CALLS engine calls of the
largest batch each), and ``choose`` keeps the reading the model finds most convincing. The punctuation
found between the digits (``model_store.marks``: a decimal point, a comma, a colon, a minus) is spelled
into ``text`` and listed in ``marks``; ``confidence`` is how sure the reading is as a whole
(``model_store.text_confidence``).
"""

from __future__ import annotations

import time
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from model_store.reading import best_path, path_scores
from model_store.text_confidence import text_confidence

from ..deps import path_and_flag, query_flag
from ..inputs import PICTURE, PICTURE_BODY, read_payload
from ..openapi import errors
from ..pipeline import infer, serving
from ..reading import engine_calls, split_upload
from ..schemas import ReadResponse

router = APIRouter(prefix="/v1/models", tags=["models"])

RETURN_INPUT = "add each digit's 28x28 preprocessed input"


@router.post(
    "/{name}/read",
    response_model=ReadResponse,
    responses=errors(400, 404, 413, 415, 422, 503, 504),
    openapi_extra={**PICTURE_BODY, **path_and_flag("return_input", RETURN_INPUT)},
)
async def read_number(request: Request) -> JSONResponse:
    """Read a whole number: split the picture into digits and classify them together."""
    started = time.monotonic()
    runtime, served = serving(request)
    return_input = query_flag(request, "return_input")
    payload = await read_payload(request, runtime.settings, PICTURE)
    assert runtime.client is not None  # serving() answered 503 unless the engine is connected
    calls = engine_calls(runtime.settings)
    cands = await runtime.run_cpu(split_upload, payload, runtime.settings, runtime.client.max_images, calls)
    answer = await infer(request, runtime, served, [c.pixels for c in cands.crops], started)
    digits: list[dict[str, Any]] = []
    scored = path_scores(cands, answer.outputs, served.digit_threshold)  # choose's, kept for the confidence
    chosen = best_path(cands, *scored)
    for i in chosen:
        crop = cands.crops[i]
        digit = {**answer.prediction(i), "box": list(crop.box), "line": crop.line}
        if return_input:
            digit["input"] = crop.pixels.tolist()
        digits.append(digit)
    text, marks = cands.spelled(chosen, [d["label"] for d in digits])
    return JSONResponse({
        "model": served.name,
        "text": text,
        "confidence": text_confidence(cands, answer.outputs, served.digit_threshold, chosen, scored),
        "digits": digits,
        "marks": [{"mark": m.char, "box": list(m.box), "line": m.line} for m in marks],
        "timing": answer.timing(),
    })  # fmt: skip
