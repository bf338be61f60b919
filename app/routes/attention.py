"""ViT attention maps: CLS attention per layer and head, head means, rollout, or a PNG overlay."""

from __future__ import annotations

from typing import Literal

import numpy as np
from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, Response

from ..deps import ArrivalDep, RuntimeDep, ServingModelDep
from ..errors import InvalidInput, ServiceError
from ..hop import Op
from ..inputs import SINGLE_BODY
from ..openapi import errors
from ..overlay import overlay_png
from ..pipeline import infer, read_images
from ..reading import number_hint
from ..schemas import AttentionResponse

router = APIRouter(prefix="/v1/models", tags=["attention"])

RESPONSES = {
    **errors(400, 404, 413, 415, 422, 503, 504),
    200: {"content": {"image/png": {"schema": {"type": "string", "format": "binary"}}},
          "description": "JSON, or with ?format=png a heat-map overlay"},
}  # fmt: skip


@router.post(
    "/{name}/attention", response_model=AttentionResponse, responses=RESPONSES, openapi_extra=SINGLE_BODY
)
async def attention(
    request: Request,
    served: ServingModelDep,
    runtime: RuntimeDep,
    started: ArrivalDep,
    format: Literal["json", "png"] = Query("json", description="png: a heat-map overlay instead of JSON"),
    layer: int | None = Query(None, ge=0, description="png: this layer's head mean instead of the rollout"),
    head: int | None = Query(None, ge=0, description="png, with layer: this head only"),
    scale: int = Query(8, ge=1, le=32, description="png: output side is 28*scale pixels"),
) -> Response:
    """Predict one image and return the ViT's attention maps and rollout."""
    if served.attention is None:
        raise ServiceError(
            f"model '{served.name}' ({served.card.arch}) has no attention maps; use a ViT model", 400
        )
    cfg = served.card.architecture
    layers, heads = served.attention["layers"], served.attention["heads"]
    if head is not None and layer is None:
        raise InvalidInput("`head` needs `layer`")
    if layer is not None and layer >= layers:
        raise InvalidInput(f"layer {layer} is out of range: the model has {layers} layers (0..{layers - 1})")
    if head is not None and head >= heads:
        raise InvalidInput(f"head {head} is out of range: the model has {heads} heads (0..{heads - 1})")

    payload, images = await read_images(request, runtime)
    answer = await infer(request, runtime, served, images, started, Op.ATTENTION)
    out = answer.prediction()
    maps = split_attention(answer.outputs[0], served.attention)
    if format == "png":
        if layer is None:
            heat = maps["rollout"]
        elif head is None:
            heat = maps["attention_mean"][layer]
        else:
            heat = maps["attention"][layer][head]
        png = await runtime.run_cpu(overlay_png, images[0], heat, scale)
        headers = {"X-Digit": str(out["digit"]), "X-Confidence": f"{out['confidence']:.6f}"}
        return Response(png, media_type="image/png", headers=headers)
    hint = await number_hint(request, runtime, served, payload, answer)
    return JSONResponse(
        {
            "model": served.name,
            **out,
            **({} if hint is None else {"hint": hint}),
            **{key: value.tolist() for key, value in maps.items()},
            "grid_size": int(cfg["image_size"]) // int(cfg["patch_size"]),
            "patch_size": int(cfg["patch_size"]),
            "layers": layers,
            "heads": heads,
            "input": images[0].tolist(),
            "timing": answer.timing(),
        }
    )


def split_attention(row: np.ndarray, a: dict[str, int]) -> dict[str, np.ndarray]:
    """An attention output row (see engine.models.AttentionLayout) -> the response's arrays (views)."""
    layers, heads, n = a["layers"], a["heads"], a["patches"]
    at = a["classes"] + 1
    parts = {}
    for key, shape in (("attention", (layers, heads, n)), ("cls_attention", (layers, heads)),
                       ("attention_mean", (layers, n)), ("rollout", (n,))):  # fmt: skip
        size = int(np.prod(shape))
        parts[key] = row[at : at + size].reshape(shape)
        at += size
    return parts
