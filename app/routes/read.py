"""Whole numbers: ``POST /v1/models/{name}/read`` splits a picture into digits and reads them all.

The picture is split by ``model_store.segment`` on a worker thread; every digit it finds goes to the
model's batcher in one submission, so a number costs one forward pass, not one per digit.
"""

from __future__ import annotations

import json
import time
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from model_store import preprocess as mp
from model_store.segment import DigitCrop, segment_bytes

from ..deps import path_and_flag, query_flag
from ..errors import BadImage, InvalidInput, NoInk, PayloadTooLarge, ServiceError, UnsupportedMediaType
from ..inputs import Payload, read_payload
from ..openapi import errors, ref, request_body
from ..pipeline import infer, serving
from ..preprocess import decode_base64
from ..schemas import ImageJSON, ReadResponse
from ..settings import Settings

router = APIRouter(prefix="/v1/models", tags=["models"])

_BINARY = {"type": "string", "format": "binary"}
READ_BODY = request_body(
    {
        "multipart/form-data": {"type": "object", "properties": {"file": _BINARY}, "required": ["file"]},
        "image/*": _BINARY,
        "application/json": ref(ImageJSON),
    },
    "one picture of a number: a multipart field `file`, a raw image body, or JSON `image` (base64)",
)
RETURN_INPUT = "add each digit's 28x28 preprocessed input"

# model_store knows nothing of HTTP; its errors name the status (see model_store.preprocess).
_STATUS: tuple[tuple[type[mp.ImageError], type[ServiceError]], ...] = (
    (mp.ImageTooLarge, PayloadTooLarge),  # TooManyDigits included
    (mp.NoInk, NoInk),
    (mp.UnsupportedFormat, UnsupportedMediaType),
    (mp.InvalidPixels, InvalidInput),
)


def _image_bytes(payload: Payload) -> bytes:
    if payload.json_body is None:
        return payload.images[0]
    try:
        obj = json.loads(payload.json_body)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise InvalidInput(f"body is not valid JSON: {exc}") from None
    if not isinstance(obj, dict) or set(obj) != {"image"}:
        raise InvalidInput("JSON body must be an object with exactly one field, `image` (base64)")
    if not isinstance(obj["image"], str) or not obj["image"]:
        raise InvalidInput("`image` must be a non-empty base64 string")
    return decode_base64(obj["image"])


def split_upload(payload: Payload, settings: Settings) -> list[DigitCrop]:
    """Payload -> the picture's digits in reading order. Worker thread; raises ServiceError."""
    data = _image_bytes(payload)
    try:
        return segment_bytes(data, settings.max_image_pixels, settings.max_digits)
    except mp.ImageError as exc:
        status = next((s for cls, s in _STATUS if isinstance(exc, cls)), BadImage)
        raise status(str(exc)) from exc


@router.post(
    "/{name}/read",
    response_model=ReadResponse,
    responses=errors(400, 404, 413, 415, 422, 503, 504),
    openapi_extra={**READ_BODY, **path_and_flag("return_input", RETURN_INPUT)},
)
async def read_number(request: Request) -> JSONResponse:
    """Read a whole number: split the picture into digits and classify them together."""
    started = time.monotonic()
    runtime, served = serving(request)
    return_input = query_flag(request, "return_input")
    payload = await read_payload(request, runtime.settings, many=False)
    crops = await runtime.run_cpu(split_upload, payload, runtime.settings)
    answer = await infer(request, runtime, served, [c.pixels for c in crops], started)
    digits: list[dict[str, Any]] = []
    for i, crop in enumerate(crops):
        digit = {**answer.prediction(i), "box": list(crop.box), "line": crop.line}
        if return_input:
            digit["input"] = crop.pixels.tolist()
        digits.append(digit)
    text = "\n".join(
        "".join(d["label"] for d in digits if d["line"] == line)
        for line in range(max(d["line"] for d in digits) + 1)
    )
    return JSONResponse({"model": served.name, "text": text, "digits": digits, "timing": answer.timing()})
