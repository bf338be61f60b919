"""The app's view of ``model_store.preprocess``: the same functions, raising the app's HTTP errors.

The preprocessing lives in model_store because training must score models through exactly the
pipeline that serves them; model_store knows nothing of HTTP, so its ``ImageError`` subclasses are
translated here into the ServiceErrors the routes already answer with.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import ParamSpec, TypeVar

import numpy as np

from model_store import drawing as _drawing
from model_store import preprocess as _mp
from model_store import reading as _reading
from model_store.drawing import Drawing

from .errors import BadImage, InvalidInput, NoInk, PayloadTooLarge, ServiceError, UnsupportedMediaType

FORMAT_NAMES = _mp.FORMAT_NAMES
SUPPORTED_MEDIA_TYPES = _mp.SUPPORTED_MEDIA_TYPES
configure = _mp.configure

_ERRORS: dict[type[_mp.ImageError], type[ServiceError]] = {
    _mp.NotAnImage: BadImage,
    _mp.UnsupportedFormat: UnsupportedMediaType,
    _mp.ImageTooLarge: PayloadTooLarge,
    _mp.NoInk: NoInk,
    _mp.InvalidPixels: InvalidInput,
}


def http_error(exc: _mp.ImageError) -> ServiceError:
    """The HTTP error for a model_store image error: the nearest class in _ERRORS (a TooManyDigits is
    an ImageTooLarge, so 413), else 400."""
    status = next((_ERRORS[c] for c in type(exc).__mro__ if c in _ERRORS), BadImage)
    return status(str(exc))


P = ParamSpec("P")
R = TypeVar("R")


def _translated(fn: Callable[P, R]) -> Callable[P, R]:
    @wraps(fn)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except _mp.ImageError as exc:
            raise http_error(exc) from exc

    return call


decode_base64: Callable[[str], bytes] = _translated(_mp.decode_base64)
pixels_to_array: Callable[..., np.ndarray] = _translated(_mp.pixels_to_array)
preprocess_bytes: Callable[[bytes, int], np.ndarray] = _translated(_mp.preprocess_bytes)
preprocess_drawing: Callable[[Drawing], np.ndarray] = _translated(_drawing.preprocess_drawing)
candidates_bytes: Callable[..., _reading.Candidates] = _translated(_reading.candidates_bytes)
candidates_drawing: Callable[..., _reading.Candidates] = _translated(_reading.candidates_drawing)
holds_bool = _mp.holds_bool  # raises nothing: not translated

__all__ = [
    "FORMAT_NAMES",
    "SUPPORTED_MEDIA_TYPES",
    "configure",
    "decode_base64",
    "holds_bool",
    "http_error",
    "pixels_to_array",
    "preprocess_bytes",
]
