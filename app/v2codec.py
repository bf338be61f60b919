"""Open Inference Protocol v2 (KServe / Triton REST): request parsing and response encoding.

Inputs: one tensor ``image``, UINT8 [N, 28, 28] (0-255) or FP32 [N, 1, 28, 28] (0-1), white digit on
black, data flat or nested in JSON, or raw little-endian bytes after the JSON header (Triton's
binary tensor extension, ``Inference-Header-Content-Length``); or ``image_bytes``, BYTES [N]: encoded
pictures (PNG, JPEG, ...; base64 strings in JSON, length-prefixed raw bytes in binary) that go through
the same preprocessing as an upload. Outputs: ``probabilities`` FP32
[N, 10] and ``digit`` INT64 [N], as JSON data or binary (per output ``binary_data`` or the request's
``binary_data_output``). Errors raise ServiceError; the handlers render them as {"error"}.

``parse_tensor`` and ``output_tensors`` are the protocol's tensors whichever wire carries them: the gRPC
service (``app.oip_grpc``) uses them too.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import ValidationError

from .errors import PayloadTooLarge, ServiceError, validation_text
from .preprocess import decode_base64, holds_bool
from .schemas import V2InferRequest

INPUT_NAME = "image"
BYTES_INPUT = "image_bytes"  # encoded pictures, preprocessed like uploads
INPUT_SPECS = {"UINT8": ([28, 28], np.dtype("<u1")), "FP32": ([1, 28, 28], np.dtype("<f4"))}
OUTPUTS = {"probabilities": "FP32", "digit": "INT64", "digit_score": "FP32", "is_digit": "BOOL"}
HEADER_LENGTH = "inference-header-content-length"


class V2Error(ServiceError):
    status_code = 400


@dataclass
class ParsedRequest:
    images: np.ndarray | None  # (N, 28, 28) float32 0..1 (input ``image``)
    id: str | None
    outputs: list[tuple[str, bool]]  # (name, binary)
    encoded: list[bytes] | None = None  # the pictures still to preprocess (input ``image_bytes``)


def parse_request(body: bytes, header_length: str | None, max_images: int) -> ParsedRequest:
    """A REST body: JSON, or a JSON header followed by binary tensors (Triton's binary extension)."""
    header, binary = _split(body, header_length)
    try:
        obj = json.loads(header)
    except (ValueError, UnicodeDecodeError) as exc:
        raise V2Error(f"request is not valid JSON: {exc}") from None
    except RecursionError:
        raise V2Error("request is not valid JSON: nested too deeply") from None
    if isinstance(obj, dict) and isinstance(obj.get("inputs"), list):
        check_one_input(len(obj["inputs"]))
    try:
        req = V2InferRequest.model_validate(obj)
    except ValidationError as exc:
        text = validation_text(exc.errors(include_url=False), most=3)  # not one per wrong item
        raise V2Error(f"invalid inference request: {text}") from None
    tensor = req.inputs[0]
    params = tensor.parameters or {}
    raw = None
    if "binary_data_size" in params:
        size = params["binary_data_size"]
        if header_length is None:
            raise V2Error("binary_data_size given without the Inference-Header-Content-Length header")
        if not isinstance(size, int) or isinstance(size, bool) or size != len(binary):
            raise V2Error(f"binary_data_size {size!r} is not the {len(binary)} bytes after the header")
        raw = binary
    elif binary:
        raise V2Error("binary data follows the JSON header but no input declares binary_data_size")
    images, encoded = parse_tensor(
        Tensor(tensor.name, tensor.datatype, tensor.shape, raw=raw, values=tensor.data), max_images
    )
    default_binary = _flag(req.parameters, "binary_data_output", False)
    if not req.outputs:
        outputs = [(name, default_binary) for name in OUTPUTS]
    else:
        outputs = [(out.name, _flag(out.parameters, "binary_data", default_binary)) for out in req.outputs]
    _check_names(name for name, _ in outputs)
    return ParsedRequest(images=images, id=req.id, outputs=outputs, encoded=encoded)


@dataclass(frozen=True, slots=True)
class Tensor:
    """One input tensor, whichever wire it came on: its elements either ``raw`` (little-endian bytes,
    row-major; BYTES: each element a 4-byte little-endian length, then its bytes) or ``values`` (JSON
    data, flat or nested; gRPC's typed contents; BYTES: base64 strings from JSON, bytes from gRPC)."""

    name: str
    datatype: str
    shape: list[int]
    raw: bytes | None = None
    values: Sequence[Any] | None = None


def check_one_input(count: int) -> None:
    """A request carries one input tensor, either of the model's two (a generic load generator that
    fills every input the metadata lists sends both: perf_analyzer needs --input-data naming one)."""
    if count != 1:
        raise V2Error(
            f"the request has {count} inputs: send exactly one, '{INPUT_NAME}' (UINT8 or FP32 pixels) or "
            f"'{BYTES_INPUT}' (BYTES: encoded pictures)"
        )


def parse_tensor(tensor: Tensor, max_images: int) -> tuple[np.ndarray | None, list[bytes] | None]:
    """-> (images (N, 28, 28) float32 0..1, None) for ``image``, (None, encoded pictures) for
    ``image_bytes``; V2Error (400) or PayloadTooLarge (413) saying what is wrong."""
    if tensor.name == BYTES_INPUT:
        return None, _bytes_tensor(tensor, max_images)
    if tensor.name != INPUT_NAME:
        raise V2Error(
            f"unknown input '{tensor.name}': this model takes '{INPUT_NAME}' (UINT8 or FP32 pixels) or "
            f"'{BYTES_INPUT}' (BYTES: encoded pictures)"
        )
    spec = INPUT_SPECS.get(tensor.datatype)
    if spec is None:
        raise V2Error(f"input '{INPUT_NAME}' datatype {tensor.datatype} is not supported: use UINT8 or FP32")
    tail, dtype = spec
    shape = list(tensor.shape)
    if len(shape) != len(tail) + 1 or shape[1:] != tail:
        want = "[N,28,28]" if tensor.datatype == "UINT8" else "[N,1,28,28]"
        raise V2Error(f"input '{INPUT_NAME}' {tensor.datatype} must have shape {want}, got {shape}")
    n = _batch_size(INPUT_NAME, shape[0], max_images)
    count = n * 28 * 28
    if tensor.raw is not None:
        arr = _raw_tensor(tensor.raw, count, dtype)
    else:
        arr = _value_tensor(tensor.values, count, tensor.datatype)
    if tensor.datatype == "FP32":  # the same check however the values came (JSON, binary, gRPC)
        _check_fp32(arr)
    images = arr.reshape(n, 28, 28).astype(np.float32)
    if tensor.datatype == "UINT8":
        images /= 255.0
    else:
        np.clip(images, 0.0, 1.0, out=images)  # tolerate rounding just outside 0..1
    return images, None


def _batch_size(name: str, n: int, max_images: int) -> int:
    if n < 1:
        raise V2Error(f"input '{name}' has batch size {n}: need at least 1")
    if n > max_images:
        raise PayloadTooLarge(f"batch of {n} images: at most {max_images} per request")
    return n


def _split(body: bytes, header_length: str | None) -> tuple[bytes, bytes]:
    if header_length is None:
        return body, b""
    try:
        n = int(header_length)
    except ValueError:
        raise V2Error(f"Inference-Header-Content-Length is not a number: {header_length!r}") from None
    if not 0 < n <= len(body):
        raise V2Error(f"Inference-Header-Content-Length {n} does not fit a body of {len(body)} bytes")
    return body[:n], body[n:]


def _raw_tensor(raw: bytes, count: int, dtype: np.dtype) -> np.ndarray:
    if len(raw) != count * dtype.itemsize:
        raise V2Error(
            f"input '{INPUT_NAME}' has {len(raw)} bytes of binary data (binary_data_size, or its "
            f"raw_input_contents over gRPC) where its shape needs {count * dtype.itemsize}"
        )
    return np.frombuffer(raw, dtype=dtype)


def _bytes_tensor(tensor: Tensor, max_images: int) -> list[bytes]:
    """BYTES [N] (or [N, 1]) -> N encoded pictures: base64 strings (a data: URL prefix allowed, as for
    /v1) or bytes as values, or Triton's length-prefixed raw layout."""
    if tensor.datatype != "BYTES":
        raise V2Error(f"input '{BYTES_INPUT}' must be BYTES (encoded pictures), got {tensor.datatype}")
    shape = list(tensor.shape)
    if len(shape) not in (1, 2) or shape[1:] not in ([], [1]):
        raise V2Error(f"input '{BYTES_INPUT}' must have shape [N] or [N,1], got {shape}")
    n = _batch_size(BYTES_INPUT, shape[0], max_images)
    items = _length_prefixed(tensor.raw) if tensor.raw is not None else _value_items(tensor.values)
    if len(items) != n:
        raise V2Error(f"input '{BYTES_INPUT}' has {len(items)} elements; its shape needs {n}")
    return items


def _length_prefixed(blob: bytes) -> list[bytes]:
    items, at = [], 0
    while at < len(blob):
        if at + 4 > len(blob):
            raise V2Error(f"input '{BYTES_INPUT}': binary data ends inside an element's 4-byte length")
        size = int.from_bytes(blob[at : at + 4], "little")
        if at + 4 + size > len(blob):
            raise V2Error(f"input '{BYTES_INPUT}': element {len(items)} claims {size} bytes past the end")
        items.append(blob[at + 4 : at + 4 + size])
        at += 4 + size
    return items


def _value_items(data: Sequence[Any] | None) -> list[bytes]:
    if data is None:
        raise V2Error(f"input '{BYTES_INPUT}' has no data")
    flat = [x for item in data for x in (item if isinstance(item, list) else [item])]  # [N] or [N,1]
    if all(isinstance(x, bytes) for x in flat):
        return flat  # gRPC's bytes_contents: the pictures themselves
    return _base64_items(flat)


def _base64_items(flat: list[Any]) -> list[bytes]:
    if not all(isinstance(x, str) for x in flat):
        raise V2Error(f"input '{BYTES_INPUT}' data must be base64 strings, one encoded picture each")
    out = []
    for i, text in enumerate(flat):
        try:
            out.append(decode_base64(text))
        except ServiceError as exc:
            raise V2Error(f"input '{BYTES_INPUT}' element {i}: {exc.message}") from None
    return out


def _value_tensor(data: Sequence[Any] | None, count: int, datatype: str) -> np.ndarray:
    if data is None:
        raise V2Error(f"input '{INPUT_NAME}' has no data")
    try:  # numbers only: a string or a bool is not one, and an int past float64 comes back as objects
        arr = np.asarray(data)
    except (ValueError, TypeError):
        arr = np.empty(0, dtype=object)
    if arr.dtype.kind not in "iuf" or holds_bool(data):
        raise V2Error(f"input '{INPUT_NAME}' data must be numbers (flat, or nested to the shape)")
    arr = arr.astype(np.float64, copy=False).ravel()
    if arr.size != count:
        raise V2Error(f"input '{INPUT_NAME}' has {arr.size} values; its shape needs {count}")
    if datatype == "UINT8" and not (
        np.isfinite(arr).all() and arr.min() >= 0 and arr.max() <= 255 and np.array_equal(arr, np.round(arr))
    ):
        raise V2Error("UINT8 data must be whole numbers 0..255")
    return arr


def _check_fp32(arr: np.ndarray) -> None:
    if not np.isfinite(arr).all():
        raise V2Error(f"input '{INPUT_NAME}' data must be finite numbers")
    if arr.min() < -1e-3 or arr.max() > 1 + 1e-3:
        raise V2Error("FP32 data must be in 0..1 (white digit on black)")


def requested_outputs(names: Sequence[str]) -> list[str]:
    """The outputs a request names (all when it names none), each checked to exist."""
    _check_names(names)
    return list(names) or list(OUTPUTS)


def _flag(parameters: dict[str, Any] | None, key: str, default: bool) -> bool:
    """A boolean request parameter; a string such as "false" is refused rather than taken as true."""
    value = (parameters or {}).get(key, default)
    if not isinstance(value, bool):
        raise V2Error(f"parameter '{key}' must be true or false, not {json.dumps(value)[:40]}")
    return value


def _check_names(names: Iterable[str]) -> None:
    for name in names:
        if name not in OUTPUTS:
            raise V2Error(f"unknown output '{name}': outputs are {', '.join(OUTPUTS)}")


def output_tensors(
    probabilities: np.ndarray, scores: np.ndarray, threshold: float | None
) -> dict[str, np.ndarray]:  # fmt: skip
    """Every output, little-endian as the protocol sends them raw. ``is_digit`` is true for every image
    when the model has no digit statistics."""
    n = len(probabilities)
    return {
        "probabilities": probabilities.astype("<f4"),
        "digit": probabilities.argmax(axis=1).astype("<i8"),
        "digit_score": scores.astype("<f4"),
        "is_digit": (scores >= threshold if threshold is not None else np.ones(n, dtype=bool)).astype(bool),
    }


def encode_response(
    model: str, parsed: ParsedRequest, tensors: dict[str, np.ndarray]
) -> tuple[bytes, dict[str, str]]:  # fmt: skip
    """``output_tensors`` -> (body, headers). JSON only, or JSON header + binary tensors (Triton's
    extension)."""
    outputs, blobs = [], []
    for name, binary in parsed.outputs:
        arr = tensors[name]
        entry: dict[str, Any] = {
            "name": name,
            "datatype": OUTPUTS[name],
            "shape": list(arr.shape),
        }
        if binary:
            blob = arr.tobytes()
            entry["parameters"] = {"binary_data_size": len(blob)}
            blobs.append(blob)
        else:
            entry["data"] = arr.ravel().tolist()  # BOOL: JSON true/false
        outputs.append(entry)
    doc: dict[str, Any] = {"model_name": model, "model_version": "1", "outputs": outputs}
    if parsed.id is not None:
        doc["id"] = parsed.id
    header = json.dumps(doc).encode()
    if not blobs:
        return header, {"content-type": "application/json"}
    headers = {
        "content-type": "application/octet-stream",
        "Inference-Header-Content-Length": str(len(header)),
    }
    return header + b"".join(blobs), headers
