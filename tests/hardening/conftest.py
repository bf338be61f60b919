"""Hardening fixtures: stores of random-init models, real uvicorn servers on 127.0.0.1, test digits.

Every server here is a subprocess this suite starts and stops itself; nothing talks to anything but
127.0.0.1. Timeouts are generous upper bounds (CI boxes are shared and slow), never assertions about speed.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # for hardening_support (importlib mode)

from hardening_support import hardening_service, load_digits, make_store  # noqa: E402

from testkit.images import png_bytes  # noqa: E402
from testkit.server import ServiceProcess  # noqa: E402


@pytest.fixture(scope="session")
def tiny_store(tmp_path_factory) -> Path:
    """Small, fast models under the contract's names (for fuzzing and malformed-input tests)."""
    return make_store(
        tmp_path_factory.mktemp("tiny-store"), {"vit-mnist": "vit-mnist-tiny", "cnn-mnist": "cnn-baseline"}
    )


@pytest.fixture(scope="session")
def full_store(tmp_path_factory) -> Path:
    """The shipped architectures at random init: compute slow enough on CPU for requests to queue."""
    return make_store(
        tmp_path_factory.mktemp("full-store"), {"vit-mnist": "vit-mnist", "cnn-mnist": "cnn-mnist"}
    )


@pytest.fixture(scope="session")
def digits() -> np.ndarray:
    return load_digits(16)


@pytest.fixture(scope="session")
def digit_png(digits) -> bytes:
    return png_bytes(digits[0])


@pytest.fixture
def start_server(tmp_path):
    """Factory: start_server(store, **settings) -> a ready ServiceProcess, stopped after the test."""
    servers: list[ServiceProcess] = []

    def start(store: Path, **settings) -> ServiceProcess:
        env = {"MODEL_STORE_DIR": str(store), "DEVICE": "cpu"}
        env.update({k.upper(): str(v) for k, v in settings.items()})
        server = hardening_service(env, tmp_path / f"server{len(servers)}.log")
        servers.append(server)
        return server.start()

    yield start
    for server in servers:
        server.stop()
