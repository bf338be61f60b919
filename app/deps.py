"""Route dependencies (as Annotated aliases) and hand-read query flags for the hot routes."""

from __future__ import annotations

import time
from typing import Annotated, Any

from fastapi import Depends, Request
from fastapi.exceptions import RequestValidationError

from .runtime import Runtime, ServedModel

# Dependencies are ``async def`` on purpose: FastAPI runs plain ``def`` ones in a thread pool,
# a thread hop (~0.1-0.2 ms) per dependency per request.


async def get_runtime(request: Request) -> Runtime:
    return request.app.state.runtime


RuntimeDep = Annotated[Runtime, Depends(get_runtime)]


async def get_model(name: str, runtime: RuntimeDep) -> ServedModel:
    """A loaded model for reading its card (works while draining)."""
    return runtime.model(name)


async def get_serving_model(name: str, runtime: RuntimeDep) -> ServedModel:
    """A loaded model that may take inference requests (503 while starting or draining)."""
    return runtime.model_for_inference(name)


ModelDep = Annotated[ServedModel, Depends(get_model)]
ServingModelDep = Annotated[ServedModel, Depends(get_serving_model)]


_TRUE = frozenset({"1", "on", "t", "true", "y", "yes"})  # pydantic's lax bool strings
_FALSE = frozenset({"0", "off", "f", "false", "n", "no"})


def query_flag(request: Request, name: str) -> bool:
    """A boolean query parameter (absent: False); anything else is a 422 like FastAPI's own."""
    if not request.scope.get("query_string"):
        return False
    value = request.query_params.get(name)
    if value is None:
        return False
    if value.lower() in _TRUE:
        return True
    if value.lower() in _FALSE:
        return False
    raise RequestValidationError(
        [{"type": "bool_parsing", "loc": ("query", name), "msg": "Input should be a valid boolean, "
          "unable to interpret input"}]
    )  # fmt: skip


def path_parameters(*names: str) -> dict[str, Any]:
    """``openapi_extra`` parameters for a route that reads its path parameters by hand."""
    return {
        "parameters": [
            {"name": n, "in": "path", "required": True, "schema": {"type": "string", "title": n.title()}}
            for n in names
        ]
    }


def path_and_flag(flag: str, description: str) -> dict[str, Any]:
    """``openapi_extra`` parameters for a route that reads ``name`` and one flag by hand."""
    extra = path_parameters("name")
    extra["parameters"].append(
        {"name": flag, "in": "query", "required": False, "description": description,
         "schema": {"type": "boolean", "default": False, "title": flag.replace("_", " ").title()}}
    )  # fmt: skip
    return extra


async def arrival() -> float:
    return time.monotonic()


ArrivalDep = Annotated[float, Depends(arrival)]
