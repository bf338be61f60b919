"""Request bodies sent with a Content-Encoding (tritonclient's ``request_compression_algorithm``, any
client that gzips what it uploads): undone here, for every route, never past the body limit."""

from __future__ import annotations

import zlib

from .errors import PayloadTooLarge, ServiceError, UnsupportedMediaType

_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}


def is_encoded(encoding: str | None) -> bool:
    return bool(encoding) and encoding.strip().lower() != "identity"


def decompress(body: bytes, encoding: str | None, limit: int) -> bytes:
    """Undo Content-Encoding gzip/deflate, never inflating past ``limit`` bytes."""
    if not is_encoded(encoding):
        return body
    assert encoding is not None
    wbits = _WBITS.get(encoding.strip().lower())
    if wbits is None:
        raise UnsupportedMediaType(f"Content-Encoding {encoding!r} is not supported (gzip, deflate)")
    inflater = zlib.decompressobj(wbits)
    try:
        out = inflater.decompress(body, limit + 1)
    except zlib.error as exc:
        raise ServiceError(f"body is not valid {encoding} data: {exc}") from None
    if len(out) > limit:
        raise PayloadTooLarge(f"decompressed body exceeds the limit of {limit} bytes")
    if not inflater.eof:  # the stream stopped before its end: what came out is part of the body
        raise ServiceError(f"body is not valid {encoding} data: the stream is truncated")
    return out
