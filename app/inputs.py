"""Reading images from a request: multipart file(s), a raw ``image/*`` body, or JSON.

``read_payload`` runs on the event loop and only collects bytes; ``decode_payload`` (JSON parsing,
image decoding, preprocessing) is CPU work and runs on a worker thread.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from fastapi import Request
from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException

from .errors import InvalidInput, PayloadTooLarge, ServiceError, UnsupportedMediaType
from .openapi import ref, request_body
from .preprocess import SUPPORTED_MEDIA_TYPES, decode_base64, pixels_to_array, preprocess_bytes
from .schemas import BatchImagesJSON, BatchPixelsJSON, ImageJSON, PixelsJSON
from .settings import Settings

ACCEPTED = "multipart/form-data, image/png|jpeg|webp|bmp|gif or application/json"

_BINARY = {"type": "string", "format": "binary"}
SINGLE_BODY = request_body(
    {
        "multipart/form-data": {"type": "object", "properties": {"file": _BINARY}, "required": ["file"]},
        "image/*": _BINARY,
        "application/json": {"oneOf": [ref(ImageJSON), ref(PixelsJSON)]},
    },
    "one image: a multipart field `file`, a raw image body, or JSON with `image` (base64) or `pixels`",
)
BATCH_BODY = request_body(
    {
        "multipart/form-data": {
            "type": "object",
            "properties": {"files": {"type": "array", "items": _BINARY}},
            "required": ["files"],
        },
        "application/json": {"oneOf": [ref(BatchImagesJSON), ref(BatchPixelsJSON)]},
    },
    "many images: repeated multipart field `files`, or JSON `images` (base64) or `pixels`",
)


# Payloads this small are decoded on the event loop: a 28x28 PNG or pixels list takes ~50-70 µs,
# less than the hop to a worker thread and back (~100 µs of CPU spread over two threads and the GIL).
INLINE_MAX_BYTES = 8192
INLINE_MAX_SIDE = 64
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def is_small_png(data: bytes) -> bool:
    """A PNG of at most INLINE_MAX_SIDE per side, read from its header (no decoding)."""
    if len(data) > INLINE_MAX_BYTES or data[:8] != _PNG_SIGNATURE or data[12:16] != b"IHDR":
        return False
    width, height = struct.unpack(">II", data[16:24])
    return 0 < width <= INLINE_MAX_SIDE and 0 < height <= INLINE_MAX_SIDE


@dataclass(slots=True)
class Payload:
    """What arrived, still encoded."""

    images: list[bytes] = field(default_factory=list)
    json_body: bytes | None = None

    @property
    def expected(self) -> int:
        return len(self.images) or 1

    @property
    def inline(self) -> bool:
        """Cheap to decode on the event loop: one small PNG, or small JSON without base64 images
        (those could hide a decompression bomb in a few kilobytes)."""
        if self.json_body is not None:
            return len(self.json_body) <= INLINE_MAX_BYTES and b'"image' not in self.json_body
        return len(self.images) == 1 and is_small_png(self.images[0])


def media_type(request: Request) -> str:
    return request.headers.get("content-type", "").split(";", 1)[0].strip().lower()


async def read_payload(request: Request, settings: Settings, *, many: bool) -> Payload:
    media = media_type(request)
    if media == "multipart/form-data":
        return Payload(images=await _read_multipart(request, settings, many))
    if media.startswith("image/"):
        if many:
            raise UnsupportedMediaType("a batch is sent as multipart `files` or JSON, not as one raw image")
        if media not in SUPPORTED_MEDIA_TYPES:
            raise UnsupportedMediaType(
                f"content type {media} is not supported; send PNG, JPEG, WebP, BMP or GIF"
            )
        return Payload(images=[await request.body()])
    if media == "application/json" or media.endswith("+json"):
        return Payload(json_body=await request.body())
    shown = media or "none"
    raise UnsupportedMediaType(f"content type {shown} is not supported; send {ACCEPTED}")


async def _read_multipart(request: Request, settings: Settings, many: bool) -> list[bytes]:
    limit = settings.max_batch_images if many else 1
    try:
        form = await request.form(max_files=limit + 1, max_fields=100, max_part_size=settings.max_body_bytes)
    except HTTPException as exc:
        if "Too many files" in str(exc.detail):
            raise PayloadTooLarge(f"too many files: at most {limit} per request") from None
        raise InvalidInput(f"malformed multipart body: {exc.detail}") from None
    try:
        names = ("files", "file") if many else ("file",)
        uploads = [u for name in names for u in form.getlist(name)]
        if not uploads:
            other = [k for k in form if k not in names]
            hint = f" (got {', '.join(other)})" if other else ""
            raise InvalidInput(f"multipart field `{names[0]}` is missing{hint}")
        if len(uploads) > limit:
            if many:
                raise PayloadTooLarge(f"{len(uploads)} images: at most {limit} per batch")
            raise InvalidInput("one image per request; use /predict/batch for several")
        data = []
        for upload in uploads:
            if not isinstance(upload, UploadFile):
                raise InvalidInput(f"multipart field `{names[0]}` must be a file, not a text value")
            data.append(await upload.read())
        return data
    finally:
        await form.close()


def decode_payload(payload: Payload, settings: Settings, many: bool) -> list[np.ndarray]:
    """Payload -> MNIST-style (28, 28) float32 arrays. Worker thread; raises ServiceError."""
    if payload.json_body is None:
        return _each(payload.images, lambda b: preprocess_bytes(b, settings.max_image_pixels), many)
    try:
        obj = json.loads(payload.json_body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"body is not valid JSON: {exc}") from None
    except RecursionError:
        raise InvalidInput("body is not valid JSON: nested too deeply") from None
    if not isinstance(obj, dict):
        raise InvalidInput("JSON body must be an object")
    keys = ("images", "pixels") if many else ("image", "pixels")
    given = [k for k in keys if k in obj]
    unknown = sorted(set(obj) - set(keys))
    if len(given) != 1 or unknown:
        extra = f"; unknown field(s) {unknown}" if unknown else ""
        raise InvalidInput(f"JSON body must have exactly one of {list(keys)}{extra}")
    key = given[0]
    value = obj[key]
    if not many:
        if key == "pixels":
            return [pixels_to_array(value)]
        if not isinstance(value, str) or not value:
            raise InvalidInput("`image` must be a non-empty base64 string")
        return [preprocess_bytes(decode_base64(value), settings.max_image_pixels)]
    if not isinstance(value, list) or not value:
        raise InvalidInput(f"`{key}` must be a non-empty list")
    if len(value) > settings.max_batch_images:
        raise PayloadTooLarge(f"{len(value)} images: at most {settings.max_batch_images} per batch")
    if key == "pixels":
        return [pixels_to_array(p, f"pixels[{i}]") for i, p in enumerate(value)]

    def one(item: object) -> np.ndarray:
        if not isinstance(item, str) or not item:
            raise InvalidInput("must be a non-empty base64 string")
        return preprocess_bytes(decode_base64(item), settings.max_image_pixels)

    return _each(value, one, many)


def _each(items: list, fn: Callable[[Any], np.ndarray], many: bool) -> list[np.ndarray]:
    if not many:
        return [fn(items[0])]
    out = []
    for i, item in enumerate(items):
        try:
            out.append(fn(item))
        except ServiceError as exc:  # say which image was wrong
            raise ServiceError(f"image {i}: {exc.message}", exc.status_code, exc.headers) from None
    return out
