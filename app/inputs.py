"""Reading images from a request: multipart file(s), a raw ``image/*`` body, or JSON (base64 images,
pixels, or a drawing's pen strokes).

A route names what it accepts with a ``BodyForm`` (SINGLE, BATCH, PICTURE). ``read_payload`` runs on the
event loop and only collects bytes; ``decode_payload`` (JSON validation with the pydantic models in
``schemas``, image decoding, preprocessing) runs inline for small bodies and on a worker thread
otherwise (``Payload.inline``).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
from fastapi import Request
from pydantic import BaseModel, ValidationError
from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException

from .encoding import decompress, is_encoded
from .errors import BadImage, InvalidInput, PayloadTooLarge, ServiceError, UnsupportedMediaType
from .openapi import ref, request_body
from .preprocess import (
    FORMAT_NAMES,
    SUPPORTED_MEDIA_TYPES,
    decode_base64,
    pixels_to_array,
    preprocess_bytes,
    preprocess_drawing,
)
from .schemas import BatchImagesJSON, BatchPixelsJSON, ImageJSON, PixelsJSON, StrokesJSON
from .settings import Settings

ACCEPTED = "multipart/form-data, image/png|jpeg|webp|bmp|gif|tiff|heic|avif or application/json"

_BINARY = {"type": "string", "format": "binary"}


# Payloads this small are decoded on the event loop: a 28x28 PNG or pixels list takes ~50-70 µs,
# less than the hop to a worker thread and back (~100 µs of CPU spread over two threads and the GIL).
INLINE_MAX_BYTES = 8192
INLINE_MAX_SIDE = 64
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_HEIF_BRANDS = frozenset(
    {b"heic", b"heix", b"heim", b"heis", b"hevc", b"hevx", b"mif1", b"msf1", b"avif", b"avis"}
)
T = TypeVar("T")


# Content types that say nothing about the body: none at all, generic bytes (requests' `data=`),
# curl's default for `--data-binary`, and plain text. Such a body is read as an image when its first
# bytes say so.
GENERIC_MEDIA_TYPES = frozenset(
    {"", "application/octet-stream", "application/x-www-form-urlencoded", "text/plain"}
)


def looks_like_image(data: bytes) -> bool:
    """The file signature of a format the decoder reads (PNG, JPEG, GIF, WebP, BMP, TIFF, HEIC/AVIF). None can
    begin a JSON document or a form, so a JSON or generic content type with such a body is a mislabelled
    upload (httpie labels a piped file as JSON), not a malformed one."""
    return (
        data.startswith((_PNG_SIGNATURE, b"\xff\xd8\xff", b"GIF87a", b"GIF89a", b"II*\0", b"MM\0*"))
        or (data[:4] == b"RIFF" and data[8:12] == b"WEBP")
        or (data[:2] == b"BM" and data[6:10] == b"\0\0\0\0")  # BMP: reserved header bytes are zero
        or (data[4:8] == b"ftyp" and data[8:12] in _HEIF_BRANDS)  # ISO media file: HEIC, HEIF, AVIF
    )


def is_small_png(data: bytes) -> bool:
    """A PNG of at most INLINE_MAX_SIDE per side, read from its header (no decoding)."""
    if len(data) > INLINE_MAX_BYTES or data[:8] != _PNG_SIGNATURE or data[12:16] != b"IHDR":
        return False
    width, height = struct.unpack(">II", data[16:24])
    return 0 < width <= INLINE_MAX_SIDE and 0 < height <= INLINE_MAX_SIDE


@dataclass(frozen=True, slots=True)
class BodyForm:
    """What a route accepts: the multipart field names (the first is documented; a batch also takes
    `file`), the JSON body models by their one key, whether a raw image body is allowed, and how many
    images one request may carry (None: MAX_BATCH_IMAGES)."""

    fields: tuple[str, ...]
    json_models: dict[str, type[BaseModel]]
    raw_image: bool = True
    max_images: int | None = 1

    @property
    def batch(self) -> bool:
        return self.max_images != 1

    def limit(self, settings: Settings) -> int:
        return settings.max_batch_images if self.max_images is None else self.max_images

    def openapi(self, description: str) -> dict[str, Any]:
        """The route's ``openapi_extra``: the request body exactly as this form reads it."""
        part = {"type": "array", "items": _BINARY} if self.batch else _BINARY
        content: dict[str, dict[str, Any]] = {
            "multipart/form-data": {
                "type": "object", "properties": {self.fields[0]: part}, "required": [self.fields[0]],
            },
        }  # fmt: skip
        if self.raw_image:
            content["image/*"] = _BINARY
        models = [ref(m) for m in self.json_models.values()]
        content["application/json"] = models[0] if len(models) == 1 else {"oneOf": models}
        return request_body(content, description)


SINGLE = BodyForm(("file",), {"image": ImageJSON, "pixels": PixelsJSON, "strokes": StrokesJSON})
BATCH = BodyForm(
    ("files", "file"), {"images": BatchImagesJSON, "pixels": BatchPixelsJSON},
    raw_image=False, max_images=None,
)  # fmt: skip
# /read: `pixels` would be one digit already
PICTURE = BodyForm(("file",), {"image": ImageJSON, "strokes": StrokesJSON})

SINGLE_BODY = SINGLE.openapi(
    "one image: a multipart field `file`, a raw image body, or JSON with `image` (base64), `pixels`, or "
    "`strokes` (a drawing's pen strokes)"
)
BATCH_BODY = BATCH.openapi(
    "many images: repeated multipart field `files`, or JSON `images` (base64) or `pixels`"
)
PICTURE_BODY = PICTURE.openapi(
    "one picture of a number: a multipart field `file`, a raw image body, or JSON `image` (base64) or "
    "`strokes` (a drawing's pen strokes: digits written into one another are parted along them)"
)


@dataclass(slots=True)
class Payload:
    """What arrived, still encoded."""

    form: BodyForm
    images: list[bytes] = field(default_factory=list)
    json_body: bytes | None = None
    parsed: BaseModel | None = None  # the JSON body once validated (``parse_json``), for a second reading

    @property
    def inline(self) -> bool:
        """Cheap to decode on the event loop: one small PNG, or small JSON without base64 images
        (those could hide a decompression bomb in a few kilobytes) or strokes (drawn, milliseconds)."""
        if self.json_body is not None:
            body = self.json_body  # a key may be written with escapes ("\\u0069mage"): none inline
            small = len(body) <= INLINE_MAX_BYTES
            return small and b'"image' not in body and b'"strokes' not in body and b"\\u" not in body
        return len(self.images) == 1 and is_small_png(self.images[0])


def media_type(request: Request) -> str:
    return request.headers.get("content-type", "").split(";", 1)[0].strip().lower()


async def read_payload(request: Request, settings: Settings, form: BodyForm) -> Payload:
    media = media_type(request)
    encoding = request.headers.get("content-encoding")
    if media == "multipart/form-data":
        if is_encoded(encoding):
            raise UnsupportedMediaType(
                f"a multipart body with Content-Encoding {encoding!r} is not supported: send the form "
                "uncompressed, or the image as a raw or JSON body"
            )
        return Payload(form, images=await _read_multipart(request, settings, form))
    if media.startswith("image/"):
        if media not in SUPPORTED_MEDIA_TYPES:
            raise UnsupportedMediaType(f"content type {media} is not supported; send {FORMAT_NAMES}")
        return _raw_image(form, decompress(await request.body(), encoding, settings.max_body_bytes))
    is_json = media == "application/json" or media.endswith("+json")
    if is_json or media in GENERIC_MEDIA_TYPES:
        body = decompress(await request.body(), encoding, settings.max_body_bytes)
        if looks_like_image(body):
            return _raw_image(form, body)
        if is_json:
            return Payload(form, json_body=body)
        if not body:
            raise BadImage("empty body: send an image (raw, multipart `file`) or JSON")
    shown = media or "none"
    raise UnsupportedMediaType(f"content type {shown} is not supported; send {ACCEPTED}")


def _raw_image(form: BodyForm, body: bytes) -> Payload:
    if not form.raw_image:
        raise UnsupportedMediaType("a batch is sent as multipart `files` or JSON, not as one raw image")
    return Payload(form, images=[body])


async def _read_multipart(request: Request, settings: Settings, form: BodyForm) -> list[bytes]:
    limit = form.limit(settings)
    try:
        parts = await request.form(max_files=limit + 1, max_fields=100, max_part_size=settings.max_body_bytes)
    except HTTPException as exc:
        if "Too many files" in str(exc.detail):  # as a count past the limit below is answered
            if form.batch:
                raise PayloadTooLarge(f"too many files: at most {limit} per batch") from None
            raise InvalidInput("one image per request; use /predict/batch for several") from None
        raise InvalidInput(f"malformed multipart body: {exc.detail}") from None
    try:
        names = form.fields
        uploads = [u for name in names for u in parts.getlist(name)]
        files = [u for _, u in parts.multi_items() if isinstance(u, UploadFile)]
        if not uploads and files and (form.batch or len(files) == 1):
            uploads = files  # the files under another name (`image`, `upload`, ...): unambiguous
        if not uploads:
            other = list(dict.fromkeys(parts))
            hint = f" (got {', '.join(other)})" if other else ""
            if other and not files:
                hint = f" (got the text field(s) {', '.join(other)}: send the image as a file)"
            raise InvalidInput(f"multipart field `{names[0]}` is missing{hint}")
        if len(uploads) > limit:
            if form.batch:
                raise PayloadTooLarge(f"{len(uploads)} images: at most {limit} per batch")
            raise InvalidInput("one image per request; use /predict/batch for several")
        data = []
        for upload in uploads:
            if not isinstance(upload, UploadFile):
                raise InvalidInput(
                    f"multipart field `{names[0]}` must be a file, not a text value (a part without a "
                    "filename in its Content-Disposition is text: curl -F file=@digit.png sends one)"
                )
            content = await upload.read()
            if not content:
                raise BadImage(f"the uploaded file {upload.filename or names[0]!r} is empty")
            data.append(content)
        return data
    finally:
        await parts.close()


def parse_json(payload: Payload) -> BaseModel:
    """The JSON body validated by the form's model for its one key; InvalidInput says what is wrong.
    Validated once: a second reading of the payload (the hint's split of a one-digit upload) takes it
    from there."""
    if payload.parsed is None:
        payload.parsed = _validated(payload)
    return payload.parsed


def _validated(payload: Payload) -> BaseModel:
    assert payload.json_body is not None
    try:
        obj = json.loads(payload.json_body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"body is not valid JSON: {exc}") from None
    except RecursionError:
        raise InvalidInput("body is not valid JSON: nested too deeply") from None
    if not isinstance(obj, dict):
        raise InvalidInput("JSON body must be an object")
    keys = list(payload.form.json_models)
    given = [k for k in keys if k in obj]
    # The chosen body's own fields beside its key (a drawing's `width`, ...), else the keys alone.
    fields = set(payload.form.json_models[given[0]].model_fields) if len(given) == 1 else set(keys)
    unknown = sorted(set(obj) - fields)
    if len(given) != 1 or unknown:
        extra = f"; unknown field(s) {unknown}" if unknown else ""
        raise InvalidInput(f"JSON body must have exactly one of {keys}{extra}")
    model = payload.form.json_models[given[0]]
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        raise InvalidInput(_first_error(exc, model)) from None


def _first_error(exc: ValidationError, model: type[BaseModel]) -> str:
    """pydantic's first complaint as one line, with what the field expects:
    "`pixels`: List should have at least 28 items after validation, not 3 (expected 28 rows of ...)"."""
    err = exc.errors(include_url=False)[0]
    where = ".".join(str(p) for p in err["loc"])
    field = model.model_fields.get(str(err["loc"][0])) if err["loc"] else None
    expected = f" (expected {field.description})" if field is not None and field.description else ""
    more = f"; {exc.error_count() - 1} more error(s)" if exc.error_count() > 1 else ""
    if not where:  # the body as a whole (a model validator): its own message says what
        return f"{err['msg'].removeprefix('Value error, ')}{more}"
    return f"`{where}`: {err['msg']}{expected}{more}"


def image_bytes(payload: Payload) -> list[bytes]:
    """The encoded images of an upload or of a JSON body with base64 `image` / `images`."""
    if payload.json_body is None:
        return payload.images
    body = parse_json(payload)
    if isinstance(body, ImageJSON):
        return [decode_base64(body.image)]
    if isinstance(body, BatchImagesJSON):
        return [_numbered(i, decode_base64, item) for i, item in enumerate(body.images)]
    raise InvalidInput(f"this route takes an encoded image, not `{next(iter(type(body).model_fields))}`")


def decode_payload(payload: Payload, settings: Settings) -> list[np.ndarray]:
    """Payload -> MNIST-style (28, 28) float32 arrays. Raises ServiceError."""
    body = parse_json(payload) if payload.json_body is not None else None
    if isinstance(body, PixelsJSON):
        return [pixels_to_array(body.pixels)]
    if isinstance(body, StrokesJSON):
        return [preprocess_drawing(body.drawing())]
    if isinstance(body, BatchPixelsJSON):
        pixels = body.pixels
        _check_count(len(pixels), settings)
        return [_numbered(i, pixels_to_array, p, f"pixels[{i}]") for i, p in enumerate(pixels)]
    encoded = image_bytes(payload)
    _check_count(len(encoded), settings)
    if not payload.form.batch:
        return [preprocess_bytes(encoded[0], settings.max_image_pixels)]
    return preprocess_all(encoded, settings)


def preprocess_all(encoded: list[bytes], settings: Settings) -> list[np.ndarray]:
    """Encoded pictures -> MNIST-style arrays; a failure names the picture's index. Raises ServiceError."""
    return [_numbered(i, preprocess_bytes, b, settings.max_image_pixels) for i, b in enumerate(encoded)]


def _check_count(n: int, settings: Settings) -> None:
    if n > settings.max_batch_images:
        raise PayloadTooLarge(f"{n} images: at most {settings.max_batch_images} per batch")


def _numbered(i: int, fn: Callable[..., T], *args: Any) -> T:
    """fn(*args), with the image's index in the message when it fails (batches)."""
    try:
        return fn(*args)
    except ServiceError as exc:
        raise ServiceError(f"image {i}: {exc.message}", exc.status_code, exc.headers) from None
