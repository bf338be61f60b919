"""Request and response models: they document every body in /docs (OpenAPI)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, model_validator

from model_store.drawing import Drawing

# Every list a body may hold has a bound in the schema, checked before its items are: an item's error
# costs pydantic some hundreds of bytes, so a 20 MiB list of wrong items would cost gigabytes. For the
# same reason a row's numbers are checked by ``pixels_to_array`` (one error for all), not item by item.
Row = Annotated[
    list[Any],
    Field(max_length=28),
    WithJsonSchema({"type": "array", "items": {"type": "number"}, "maxItems": 28}),
]
Image28 = Annotated[list[Row], Field(max_length=28)]
MAX_LIST = 4096  # images one JSON batch may list (MAX_BATCH_IMAGES, at most this, answers 413 past its own)
MAX_STROKES = 256  # strokes one drawing may have ...
MAX_POINTS = 20_000  # ... and points in all (the page sends about one per 2 px of pen travel)
Coordinate = Annotated[float, Field(allow_inf_nan=False, ge=-1e6, le=1e6)]
Point = Annotated[list[Coordinate], Field(min_length=2, max_length=3)]
Stroke = Annotated[list[Point], Field(min_length=1, max_length=MAX_POINTS)]
Size = Annotated[float, Field(gt=0, le=1e6)]


class ErrorDetail(BaseModel):
    detail: str | list[dict[str, Any]] = Field(description="what was wrong")


class V2Error(BaseModel):
    error: str


# ---------------------------------------------------------------------------------------- health


class Health(BaseModel):
    status: Literal["ok", "starting", "draining"]
    ready: bool
    device: str
    models: list[str]
    worker_pid: int = Field(description="the front-end process that answered")


class Live(BaseModel):
    live: bool


class Ready(BaseModel):
    ready: bool
    reason: str | None = Field(None, description="why not, when not ready")


class Noop(BaseModel):
    ok: bool


# ---------------------------------------------------------------------------------------- models


class PreprocessingInfo(BaseModel):
    image_size: int
    mean: float
    std: float


class ModelInfo(BaseModel):
    name: str
    arch: Literal["vit", "cnn"]
    preset: str
    num_params: int
    labels: list[str]
    metrics: dict[str, float]
    architecture: dict[str, Any]
    preprocessing: PreprocessingInfo
    device: str
    supports_attention: bool
    dataset: dict[str, Any]
    training: dict[str, Any]
    weights_sha256: str
    created_at: str


class ModelList(BaseModel):
    models: list[ModelInfo]


# ------------------------------------------------------------------------------------ inference


class ImageJSON(BaseModel):
    """One image, base64 encoded (PNG, JPEG, WebP, BMP, GIF, TIFF, HEIC or AVIF; the standard or URL-safe
    alphabet, padded or not; may be a data: URL)."""

    model_config = ConfigDict(extra="forbid")
    image: str = Field(min_length=1, description="a non-empty base64 string")


class PixelsJSON(BaseModel):
    """28 rows of 28 numbers 0-255 (or 0..1: none above 1), white digit on black, used as-is."""

    model_config = ConfigDict(extra="forbid")
    pixels: list[Row] = Field(
        min_length=28, max_length=28, description="28 rows of 28 numbers 0-255 (or 0..1)"
    )


class StrokesJSON(BaseModel):
    """A drawing sent as its pen strokes, as a canvas app has them: each stroke the points the pen
    passed in order, in the canvas's pixels (x right, y down). Drawn as the demo page draws them; where
    digits were written into one another, ``/read`` parts them along their strokes."""

    model_config = ConfigDict(extra="forbid")
    strokes: list[Stroke] = Field(
        min_length=1, max_length=MAX_STROKES,
        description=f"1-{MAX_STROKES} strokes, each a list of [x, y] points (a third number, such as a "
        f"time or a pressure, is ignored); {MAX_POINTS} points in all at most",
    )  # fmt: skip
    width: Size | None = Field(None, description="the canvas's width in pixels (boxes are the canvas's)")
    height: Size | None = Field(None, description="the canvas's height in pixels")
    pen: Size | None = Field(
        None, description="the pen's width in pixels, at least 0.075 of the tallest stroke's height; "
        "default: as the page draws small writing, 0.15 of that height, at most 0.075 of the canvas's height",
    )  # fmt: skip

    @model_validator(mode="before")
    @classmethod
    def _few_enough_points(cls, data: Any) -> Any:
        """Counted before the points are validated, each of which costs a Python list."""
        strokes = data.get("strokes") if isinstance(data, dict) else None
        if isinstance(strokes, list) and len(strokes) <= MAX_STROKES:
            total = sum(len(s) for s in strokes if isinstance(s, list))
            if total > MAX_POINTS:
                raise ValueError(f"{total} points: at most {MAX_POINTS} in all")
        return data

    def drawing(self) -> Drawing:
        strokes = [np.asarray([p[:2] for p in s], dtype=np.float64) for s in self.strokes]
        return Drawing(strokes, self.width, self.height, self.pen)


class BatchImagesJSON(BaseModel):
    model_config = ConfigDict(extra="forbid")
    images: list[str] = Field(
        min_length=1, max_length=MAX_LIST, description="a non-empty list of base64 strings"
    )


class BatchPixelsJSON(BaseModel):
    model_config = ConfigDict(extra="forbid")
    pixels: list[Image28] = Field(
        min_length=1,
        max_length=MAX_LIST,
        description="a non-empty list of images, each 28 rows of 28 numbers 0-255",
    )


class Timing(BaseModel):
    queue_ms: float = Field(description="waiting in the batch queue")
    compute_ms: float = Field(description="the forward pass of the batch this image ran in")
    total_ms: float = Field(description="from request arrival to the answer, body reading included")
    batch_size: int = Field(description="images in that forward pass")


class Prediction(BaseModel):
    digit: int
    label: str
    confidence: float
    probabilities: list[float] = Field(min_length=10, max_length=10)
    is_digit: bool | None = Field(
        None, description="does the picture look like a digit at all (null: the model has no statistics)"
    )
    digit_score: float = Field(description="the score behind is_digit: higher looks more like a digit")


class NumberHint(BaseModel):
    number: str = Field(description="the picture read as a number, as /read reads it")
    route: str = Field(description="the route that reads numbers: /v1/models/{name}/read")
    message: str


class PredictResponse(Prediction):
    model: str
    timing: Timing
    hint: NumberHint | None = Field(
        None, description="only when the picture is not a digit but plainly a number of several digits"
    )
    input: Image28 | None = Field(None, description="with ?return_input=true: the 28x28 image the model saw")


class BatchResponse(BaseModel):
    model: str
    predictions: list[Prediction]
    timing: Timing


class AttentionResponse(Prediction):
    model: str
    grid_size: int
    patch_size: int
    layers: int
    heads: int
    attention: list[list[list[float]]] = Field(
        description="[layer][head][grid*grid]: CLS row over the patches"
    )
    cls_attention: list[list[float]] = Field(
        description="[layer][head]: the CLS->CLS entry; with the patch row it sums to 1"
    )
    attention_mean: list[list[float]] = Field(description="[layer][grid*grid]: head mean")
    rollout: list[float] = Field(description="[grid*grid] attention rollout, sums to 1")
    input: Image28
    timing: Timing
    hint: NumberHint | None = Field(
        None, description="only when the picture is not a digit but plainly a number of several digits"
    )


# -------------------------------------------------------------------------- Open Inference v2


class V2ServerMetadata(BaseModel):
    name: str
    version: str
    extensions: list[str]


class V2TensorMetadata(BaseModel):
    name: str
    datatype: str
    shape: list[int]


class V2ModelMetadata(BaseModel):
    name: str
    versions: list[str]
    platform: str
    inputs: list[V2TensorMetadata]
    outputs: list[V2TensorMetadata]


class V2ModelReady(BaseModel):
    name: str
    ready: bool


class V2ModelConfig(BaseModel):
    """Triton's ModelConfig (the model configuration extension), the fields this server fills."""

    name: str
    platform: str
    backend: str
    max_batch_size: int = Field(description="images one request may carry; dims leave this dimension out")
    input: list[dict[str, Any]]
    output: list[dict[str, Any]]
    dynamic_batching: dict[str, Any]
    instance_group: list[dict[str, Any]]


class V2RepositoryModel(BaseModel):
    """One model of Triton's repository index."""

    name: str
    version: str
    state: str = Field(description="READY, or UNAVAILABLE while the service is not ready")
    reason: str | None = Field(None, description="why not ready")


class V2RepositoryIndexRequest(BaseModel):
    ready: bool = Field(False, description="only the models ready for inference")


class V2ModelStatistics(BaseModel):
    """Triton's statistics extension: per model, counts and cumulative times in ns (``app.model_stats``)."""

    model_stats: list[dict[str, Any]]


class V2InferInput(BaseModel):
    name: str
    shape: list[int] = Field(max_length=8)
    datatype: str
    parameters: dict[str, Any] | None = None
    data: list[Any] | None = Field(None, description="flat or nested; absent with the binary extension")


class V2RequestedOutput(BaseModel):
    name: str
    parameters: dict[str, Any] | None = None


class V2InferRequest(BaseModel):
    id: str | None = None
    parameters: dict[str, Any] | None = None
    inputs: list[V2InferInput] = Field(min_length=1, max_length=1)
    outputs: list[V2RequestedOutput] | None = Field(None, max_length=16)


class V2InferOutput(BaseModel):
    name: str
    datatype: str
    shape: list[int]
    parameters: dict[str, Any] | None = None
    data: list[float] | list[int] | list[bool] | None = None  # is_digit is BOOL


class V2InferResponse(BaseModel):
    model_name: str
    model_version: str | None = None
    id: str | None = None
    outputs: list[V2InferOutput]


# ---------------------------------------------------------------------------------- whole numbers


class ReadDigit(Prediction):
    box: list[int] = Field(
        min_length=4, max_length=4, description="x0, y0, x1, y1 (exclusive) in the uploaded picture's pixels"
    )
    line: int = Field(description="line of writing, 0 at the top")
    is_digit: bool | None = Field(None, description="false when this mark does not look like a digit")
    input: Image28 | None = Field(None, description="with ?return_input=true: the 28x28 image the model saw")


class ReadMark(BaseModel):
    mark: Literal[".", ",", ":", "-"] = Field(description="a decimal point, a comma, a colon or a minus sign")
    box: list[int] = Field(
        min_length=4, max_length=4, description="x0, y0, x1, y1 (exclusive) in the uploaded picture's pixels"
    )
    line: int = Field(description="line of writing, 0 at the top")


class ReadResponse(BaseModel):
    model: str
    text: str = Field(
        description="the digits' labels in reading order with the marks written between them (lines joined "
        "by newlines): 12.5, 1,000, 12:30, -42"
    )
    confidence: float | None = Field(
        description="the probability that `text` is exactly right, every digit and mark: calibrated on "
        "numbers generated in code, and on letters, words, shapes and photos of things, where any text is "
        "wrong (docs/reading.md, How sure the reading is); low (under 0.5) when the text is more likely "
        "wrong, or the picture no number at all; null for a checkpoint without a digit score",
        ge=0.0,
        le=1.0,
    )
    digits: list[ReadDigit]
    marks: list[ReadMark] = Field(description="the punctuation in `text`, left to right")
    timing: Timing
