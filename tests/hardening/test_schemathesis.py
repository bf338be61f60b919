"""Fuzz the service's OpenAPI with schemathesis, in process (ASGI; schemathesis runs the lifespan on the
first call) over a store of small random-init models: no 5xx for any generated request, valid or not, and
every answer matches the content type and schema the OpenAPI declares for it.

The schema is built at import, not from a fixture: schemathesis' lazy fixture loader
(`schemathesis.pytest.from_fixture`) reads `Node._nodeid`, which pytest 9 no longer has.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
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


def _build_app():
    store = Path(tempfile.mkdtemp(prefix="hardening-fuzz-store-"))
    atexit.register(shutil.rmtree, store, ignore_errors=True)
    make_store(store, {"vit-mnist": "vit-mnist-tiny", "cnn-mnist": "cnn-baseline"})
    return create_app(
        Settings(
            model_store_dir=store,
            device="cpu",
            max_batch_images=8,
            max_body_bytes=512 * 1024,
            max_image_pixels=1_000_000,
            log_level="warning",
        )
    )


def _pin_model_names(openapi: dict, names: list[str]) -> dict:
    """A free-text `{name}` would make nearly every generated request a 404: fuzz the bodies of the
    models that exist (plus one unknown name) instead."""
    for item in openapi["paths"].values():
        for op in item.values():
            for param in op.get("parameters", []) if isinstance(op, dict) else []:
                if param.get("in") == "path" and param.get("name") == "name":
                    param["schema"] = {"type": "string", "enum": names}
    return openapi


APP = _build_app()  # loads nothing yet: models load when schemathesis starts the lifespan
schema = schemathesis.openapi.from_dict(
    _pin_model_names(APP.openapi(), ["vit-mnist", "cnn-mnist", "nope"]),
    config=SchemathesisConfig.from_dict({"cache": {"enabled": False}}),  # no .schemathesis/ in the checkout
)
schema.app = APP


@schema.parametrize()
@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
def test_openapi_fuzz(case):
    case.call_and_validate(checks=[not_a_server_error, content_type_conformance, response_schema_conformance])
