"""Pictures for requests: arrays encoded by Pillow, and hand-made PNGs for what Pillow will not write
(a header that lies about the size, chunks that inflate to gigabytes)."""

from __future__ import annotations

import io
import struct
import zlib

import numpy as np
from PIL import Image


def png_bytes(
    image: np.ndarray | Image.Image, mode: str | None = None, fmt: str = "PNG", **save: object
) -> bytes:
    """Encode an array or a Pillow image as PNG, or as ``fmt``. A float array is taken as 0-255 grays."""
    if not isinstance(image, Image.Image):
        array = image.astype(np.uint8) if image.dtype.kind == "f" else image
        image = Image.fromarray(array, mode)
    buf = io.BytesIO()
    image.save(buf, fmt, **save)
    return buf.getvalue()


def png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def gray_png(width: int, height: int, idat: bytes, extra: bytes = b"") -> bytes:
    """An 8-bit grayscale PNG declaring width x height, with `idat` as its (compressed) pixel data and
    `extra` chunks between the header and the data. Nothing checks that the two agree."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    signature = b"\x89PNG\r\n\x1a\n"
    return signature + png_chunk(b"IHDR", ihdr) + extra + png_chunk(b"IDAT", idat) + png_chunk(b"IEND", b"")


def png_declaring(width: int, height: int) -> bytes:
    """A tiny PNG whose header declares width x height (the pixel data is never reached)."""
    return gray_png(width, height, zlib.compress(b"\0" * 64))


def drawn_seven(n: int) -> np.ndarray:
    """(n, 28, 28) uint8 copies of a thick '7' in a 20 px box, its centre of mass at the image centre
    like MNIST's: a stand-in where MNIST is not on the machine."""
    seven = np.zeros((28, 28), dtype=np.uint8)
    seven[6:9, 7:21] = 255  # top bar
    for r in range(9, 23):
        c = 20 - (r - 9) // 2
        seven[r, c - 1 : c + 2] = 255  # diagonal stroke
    idx = np.arange(28)
    mass = seven.astype(np.float64)
    dy = int(round(14 - (mass.sum(axis=1) @ idx) / mass.sum()))
    dx = int(round(14 - (mass.sum(axis=0) @ idx) / mass.sum()))
    return np.repeat(np.roll(seven, (dy, dx), axis=(0, 1))[None], n, axis=0)
