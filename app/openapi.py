"""OpenAPI helpers for routes that read their body by hand (several content types on one route)."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel

from .schemas import ErrorDetail, V2Error

_REF = "#/components/schemas/{model}"
_models: dict[str, type[BaseModel]] = {}


def ref(model: type[BaseModel]) -> dict[str, str]:
    """A $ref to ``model``; its schema is added to components when the document is built."""
    _models[model.__name__] = model
    return {"$ref": _REF.format(model=model.__name__)}


def request_body(content: dict[str, dict[str, Any]], description: str = "") -> dict[str, Any]:
    """``openapi_extra`` documenting a request body given as {media type: schema}."""
    body: dict[str, Any] = {
        "required": True,
        "content": {media: {"schema": schema} for media, schema in content.items()},
    }
    if description:
        body["description"] = description
    return {"requestBody": body}


def errors(*codes: int, v2: bool = False) -> dict[int | str, dict[str, Any]]:
    """``responses`` entries for error statuses, with the JSON error model."""
    model = V2Error if v2 else ErrorDetail
    return {code: {"model": model, "description": _REASONS.get(code, "error")} for code in codes}


_REASONS = {
    400: "bad input: not an image, corrupt data, wrong tensor shape or datatype",
    404: "unknown model",
    405: "never served here (Triton's model loading: the models come from the store at start)",
    413: "body, image or batch too large (decompression bombs included)",
    415: "unsupported content type or image format",
    422: "invalid fields, or no ink in the image",
    503: "starting, draining or overloaded: retry after Retry-After seconds",
    504: "not answered within the request timeout",
}


def install_openapi(app: FastAPI) -> None:
    """Build the document once, adding the schemas referenced by ``ref``."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        doc = get_openapi(
            title=app.title, version=app.version, description=app.description, routes=app.routes,
            tags=app.openapi_tags,
        )  # fmt: skip
        for operations in doc.get("paths", {}).values():
            for op in operations.values():  # one-line docstrings become the summaries
                text = op.get("description", "")
                if text and "\n" not in text.strip():
                    op["summary"] = op.pop("description").strip()
        schemas = doc.setdefault("components", {}).setdefault("schemas", {})
        for name, model in _models.items():
            schema = model.model_json_schema(ref_template=_REF)
            schemas.update(schema.pop("$defs", {}))
            schemas.setdefault(name, schema)
        app.openapi_schema = doc
        return doc

    app.openapi = openapi  # type: ignore[method-assign]
