"""Helpers for tests that send pictures: encode arrays, forge headers (shared by model_store and app)."""

from __future__ import annotations

import io
import struct
import zlib

import numpy as np
from PIL import Image


def png_bytes(
    image: np.ndarray | Image.Image, mode: str | None = None, fmt: str = "PNG", **save: object
) -> bytes:
    """Encode an array (or a Pillow image) as PNG, or as ``fmt``."""
    img = image if isinstance(image, Image.Image) else Image.fromarray(image, mode)
    buf = io.BytesIO()
    img.save(buf, fmt, **save)
    return buf.getvalue()


def png_declaring(width: int, height: int) -> bytes:
    """A tiny PNG whose header declares width x height (the pixel data is never reached)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(b"\0" * 64))
        + chunk(b"IEND", b"")
    )
