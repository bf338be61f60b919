"""Fuzz the service's OpenAPI with schemathesis against a real server (uvicorn, one process) over a store
of small random-init models: no 5xx for any generated request, valid or not, and every answer matches
the content type and schema the OpenAPI declares for it.

The schema is built at import from the app's own OpenAPI document (creating the app loads nothing), not
from a fixture: schemathesis' lazy fixture loader (`schemathesis.pytest.from_fixture`) reads
`Node._nodeid`, which pytest 9 no longer has. The server is started once for every generated case.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

schemathesis = pytest.importorskip("schemathesis")

from hardening_support import make_store  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402
from schemathesis.checks import not_a_server_error  # noqa: E402
from schemathesis.config import SchemathesisConfig  # noqa: E402
from schemathesis.specs.openapi.checks import (  # noqa: E402
    content_type_conformance,
    response_schema_conformance,
)

from app.main import create_app  # noqa: E402
from app.settings import Settings  # noqa: E402
from testkit.server import ServiceProcess  # noqa: E402

LIMITS = {"MAX_BATCH_IMAGES": "8", "MAX_BODY_BYTES": str(512 * 1024), "MAX_IMAGE_PIXELS": "1000000"}


def _pin_model_names(openapi: dict, names: list[str]) -> dict:
    """A free-text `{name}` would make nearly every generated request a 404: fuzz the bodies of the
    models that exist (plus one unknown name) instead."""
    for item in openapi["paths"].values():
        for op in item.values():
            for param in op.get("parameters", []) if isinstance(op, dict) else []:
                if param.get("in") == "path" and param.get("name") == "name":
                    param["schema"] = {"type": "string", "enum": names}
    return openapi


schema = schemathesis.openapi.from_dict(
    _pin_model_names(create_app(Settings(log_level="warning")).openapi(), ["vit-mnist", "cnn-mnist", "nope"]),
    config=SchemathesisConfig.from_dict({"cache": {"enabled": False}}),  # no .schemathesis/ in the checkout
)


@pytest.fixture(scope="module")
def fuzz_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    models = {"vit-mnist": "vit-mnist-tiny", "cnn-mnist": "cnn-baseline"}
    store = make_store(Path(tmp_path_factory.mktemp("fuzz-store")), models)
    env = {"MODEL_STORE_DIR": str(store), "DEVICE": "cpu", "LOG_LEVEL": "warning", **LIMITS}
    with ServiceProcess(env, workers=None) as server:
        yield server.url


@schema.parametrize()
@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
def test_openapi_fuzz(case, fuzz_server):
    checks = [not_a_server_error, content_type_conformance, response_schema_conformance]
    case.call_and_validate(base_url=fuzz_server, checks=checks)


def _v2_tensor(pixels: list[int]) -> dict:
    return {"inputs": [{"name": "image", "datatype": "UINT8", "shape": [1, 28, 28], "data": pixels}]}


def _one_pixel_png() -> str:
    import base64
    import io

    from PIL import Image

    out = io.BytesIO()
    Image.new("L", (1, 1)).save(out, "PNG")
    return base64.b64encode(out.getvalue()).decode()


@pytest.mark.parametrize(
    ("path", "body", "status"),
    [
        ("/v2/models/{name}/infer", _v2_tensor([0] * 784), 200),  # every output, is_digit's booleans too
        ("/v2/models/{name}/infer", _v2_tensor([255] * 784), 200),
        (
            "/v2/models/{name}/infer",
            {
                "inputs": [
                    {"name": "image_bytes", "datatype": "BYTES", "shape": [1], "data": [_one_pixel_png()]}
                ]
            },
            422,
        ),  # fmt: skip
        ("/v2/models/{name}/versions/{version}/infer", _v2_tensor([0] * 784), 200),
    ],
)
def test_answers_to_well_formed_requests_match_the_openapi(fuzz_server, path, body, status):
    """What the fuzzing rarely reaches: requests a client really sends, answered as the document says
    (the body's schema for its status, which the document must list)."""
    params = {"name": "vit-mnist", "version": "1"} if "{version}" in path else {"name": "vit-mnist"}
    case = schema[path]["POST"].Case(path_parameters=params, body=body, media_type="application/json")
    response = case.call(base_url=fuzz_server)
    assert response.status_code == status, response.text
    documented = schema.raw_schema["paths"][path]["post"]["responses"]
    assert str(status) in documented, f"{status} is not among the documented answers {sorted(documented)}"
    case.validate_response(response, checks=[content_type_conformance, response_schema_conformance])
