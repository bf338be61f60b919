"""Request payloads: a real MNIST test digit (or a drawn stand-in when MNIST is absent) as PNG / pixels.

PNG encoding is done here with zlib, so the load generator needs no imaging library.
"""

from __future__ import annotations

import base64
import gzip
import os
import struct
import zlib
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parent.parent
IMAGES_FILE = "t10k-images-idx3-ubyte"


def find_mnist_images() -> Path | None:
    """The MNIST test images (raw or .gz) under DATA_ROOT, ../shared/data or data/."""
    roots = [os.environ.get("DATA_ROOT"), REPO_ROOT.parent / "shared" / "data", REPO_ROOT / "data"]
    for root in roots:
        if not root:
            continue
        for name in (IMAGES_FILE, IMAGES_FILE + ".gz"):
            path = Path(root) / "MNIST" / "raw" / name
            if path.is_file():
                return path
    return None


def read_idx_images(path: Path, limit: int) -> np.ndarray:
    """(N, 28, 28) uint8 from an IDX3 file (gzipped or not)."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:
        magic, n, rows, cols = struct.unpack(">IIII", f.read(16))
        if magic != 2051:
            raise ValueError(f"{path}: not an IDX3 image file (magic {magic})")
        n = min(n, limit)
        data = f.read(n * rows * cols)
    return np.frombuffer(data, dtype=np.uint8).reshape(n, rows, cols)


def drawn_digits(n: int) -> np.ndarray:
    """Stand-in digits when MNIST is missing: a thick '7' in a 20 px box with its centre of mass at the
    image centre, like MNIST (so the service's preprocessing takes the same path as for real digits)."""
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


def load_digits(n: int = 256) -> tuple[np.ndarray, str]:
    """n digits (N, 28, 28) uint8 white-on-black, and where they came from."""
    path = find_mnist_images()
    if path is not None:
        return read_idx_images(path, n), f"MNIST test set ({path})"
    return drawn_digits(n), "synthetic digit (MNIST not found)"


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)


def encode_png(gray: np.ndarray) -> bytes:
    """8-bit grayscale PNG of a (H, W) uint8 array."""
    gray = np.ascontiguousarray(gray, dtype=np.uint8)
    h, w = gray.shape
    raw = b"".join(b"\x00" + gray[r].tobytes() for r in range(h))  # filter type 0 per row
    ihdr = struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _png_chunk(b"IHDR", ihdr)
        + _png_chunk(b"IDAT", zlib.compress(raw, 6))
        + _png_chunk(b"IEND", b"")
    )


def png_b64(gray: np.ndarray) -> str:
    return base64.b64encode(encode_png(gray)).decode("ascii")


def pixels_list(gray: np.ndarray) -> list[list[int]]:
    return gray.astype(int).tolist()
