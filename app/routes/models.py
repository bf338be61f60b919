"""Model cards and predictions: /v1/models, /v1/models/{name}/predict and /predict/batch."""

from __future__ import annotations

import time

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from ..deps import ArrivalDep, ModelDep, RuntimeDep, ServingModelDep, path_and_flag, query_flag
from ..errors import Unavailable
from ..inputs import BATCH, BATCH_BODY, SINGLE_BODY
from ..openapi import errors
from ..pipeline import infer, read_images, serving
from ..reading import number_hint
from ..schemas import BatchResponse, ModelInfo, ModelList, PredictResponse

router = APIRouter(prefix="/v1/models", tags=["models"])

INFERENCE_ERRORS = errors(400, 404, 413, 415, 422, 503, 504)
RETURN_INPUT = "add the 28x28 preprocessed input the model saw"


@router.get("", response_model=ModelList, responses=errors(503))
async def list_models(runtime: RuntimeDep) -> JSONResponse:
    """List the served models with their cards."""
    if not runtime.catalogue_known:
        raise Unavailable(f"models are not loaded yet: {runtime.not_ready_reason}")
    return JSONResponse({"models": [m.info() for m in runtime.models.values()]})


@router.get("/{name}", response_model=ModelInfo, responses=errors(404, 503))
async def get_model(served: ModelDep) -> JSONResponse:
    """One model's card: architecture, parameters, accuracy, device."""
    return JSONResponse(served.info())


@router.post(
    "/{name}/predict",
    response_model=PredictResponse,
    responses=INFERENCE_ERRORS,
    openapi_extra={**SINGLE_BODY, **path_and_flag("return_input", RETURN_INPUT)},
)
async def predict(request: Request) -> JSONResponse:
    """Classify one digit image."""
    # The hot route takes no FastAPI parameters: see deps.serving.
    started = time.monotonic()
    runtime, served = serving(request)
    return_input = query_flag(request, "return_input")
    payload, images = await read_images(request, runtime)
    answer = await infer(request, runtime, served, images, started)
    hint = await number_hint(request, runtime, served, payload, answer)
    body = {"model": served.name, **answer.prediction(), "timing": answer.timing()}
    if hint is not None:
        body["hint"] = hint
    if return_input:
        body["input"] = images[0].tolist()
    return JSONResponse(body)


@router.post(
    "/{name}/predict/batch",
    response_model=BatchResponse,
    responses=INFERENCE_ERRORS,
    openapi_extra=BATCH_BODY,
)
async def predict_batch(
    request: Request, served: ServingModelDep, runtime: RuntimeDep, started: ArrivalDep
) -> JSONResponse:
    """Classify many digit images; answers in input order."""
    _, images = await read_images(request, runtime, BATCH)
    answer = await infer(request, runtime, served, images, started)
    predictions = [answer.prediction(i) for i in range(len(images))]
    return JSONResponse({"model": served.name, "predictions": predictions, "timing": answer.timing()})
