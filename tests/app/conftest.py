"""Fixtures for the service tests: a tiny model store with random weights, apps and clients."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import numpy as np
import pytest
import torch
from fastapi import FastAPI
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from model_store import save_untrained
from testkit.digits import drawn_mnist_digits
from testkit.images import png_bytes  # noqa: F401  (re-exported for the app tests)
from testkit.metrics import total
from testkit.server import ServiceProcess

VIT = "vit-test"
CNN = "cnn-test"


def _save(preset: str, name: str, root: Path, seed: int) -> None:
    def spread_head(model: torch.nn.Module) -> None:  # the zero-init ViT head would predict uniformly
        if preset.startswith("vit"):
            torch.nn.init.normal_(model.head.weight, std=0.5)

    save_untrained(preset, root / name, name=name, seed=seed, init=spread_head)


@pytest.fixture(scope="session")
def test_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model store with an untrained small ViT and CNN (random but fixed weights)."""
    root = tmp_path_factory.mktemp("store")
    _save("vit-mnist-tiny", VIT, root, seed=1)
    _save("cnn-baseline", CNN, root, seed=2)
    return root


def make_settings(store: Path, **overrides: object) -> Settings:
    values: dict = {"model_store_dir": store, "device": "cpu", "torch_threads": 1, "log_level": "warning",
                    "grpc_port": 0}  # fmt: skip
    values.update(overrides)
    return Settings(**values)


@pytest.fixture(scope="session")
def client(test_store: Path) -> Iterator[TestClient]:
    """One app on the test store for the whole session (lifespan run: models loaded)."""
    with TestClient(create_app(make_settings(test_store))) as c:
        yield c


@pytest.fixture
def make_client(test_store: Path) -> Iterator[Callable[..., TestClient]]:
    """Build a client for an app with custom settings; closed (lifespan shutdown) at teardown."""
    clients: list[TestClient] = []

    def make(store: Path | None = None, **overrides: object) -> TestClient:
        c = TestClient(create_app(make_settings(store or test_store, **overrides)))
        c.__enter__()
        clients.append(c)
        return c

    yield make
    for c in clients:
        c.__exit__(None, None, None)


@asynccontextmanager
async def running(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    """Run the app's lifespan in the current event loop and give an async client on it."""
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test", timeout=60) as c:
            yield c


# ------------------------------------------------------------------------------------- images


@pytest.fixture(scope="session")
def digits() -> tuple[np.ndarray, np.ndarray]:
    """12 drawn digits (uint8 (12, 28, 28)) and their labels: no MNIST needed."""
    return drawn_mnist_digits(12)


# ------------------------------------------------------------------------------- real servers


@pytest.fixture
def start_server(tmp_path: Path, test_store: Path) -> Iterator[Callable[..., ServiceProcess]]:
    """Start ``uvicorn app.main:app`` (or, with ``workers``, ``python -m app``: supervisor, engine and
    that many workers) on a free loopback port; wait until /v2/health/ready. Stopped (SIGTERM) after
    the test."""
    servers: list[ServiceProcess] = []

    def start(
        store: Path | None = None, uvicorn_args: tuple[str, ...] = (), workers: int | None = None, **env: str
    ) -> ServiceProcess:
        env = {"MODEL_STORE_DIR": str(store or test_store), "DEVICE": "cpu", **env}
        if workers is not None:
            env.setdefault("TORCH_THREADS", "1")
        log_path = tmp_path / f"server-{len(servers)}.log"
        server = ServiceProcess(env, workers=workers, log_path=log_path, uvicorn_args=uvicorn_args)
        servers.append(server)
        return server.start()

    yield start
    for s in servers:
        s.stop(timeout=15)


def pictures_and_v1_answers(server: ServiceProcess, images: np.ndarray) -> tuple[list[bytes], list[dict]]:
    """Three PNGs a client would have (a digit, one light on dark, one enlarged 8x) and /v1 predict/batch's
    answers for them: what the other protocols must answer for the same files."""
    pictures = [
        png_bytes(images[0]),
        png_bytes(255 - images[1]),
        png_bytes(np.kron(images[2], np.ones((8, 8)))),
    ]
    files = [("files", (f"{i}.png", p, "image/png")) for i, p in enumerate(pictures)]
    v1 = httpx.post(f"{server.url}/v1/models/{VIT}/predict/batch", files=files, timeout=30).json()
    return pictures, v1["predictions"]


def queued_in_the_batcher(server: ServiceProcess, model: str, images: int, timeout: float = 30) -> float:
    """Wait until ``images`` images sent to ``model`` have all reached its batcher (queued or computed);
    how many are still queued then."""
    deadline = time.monotonic() + timeout
    while True:
        samples = server.metrics()
        pending = total(samples, "vit_digits_pending_requests", model=model)
        if pending + total(samples, "vit_digits_inference_count", model=model) >= images:
            return pending
        assert time.monotonic() < deadline, "the requests never reached the batcher"
        time.sleep(0.005)  # polling another process's /metrics: no event to wait on across processes


def engine_batcher(app: FastAPI, name: str, op: int = 0):  # type: ignore[no-untyped-def]
    """The embedded engine's batcher for a model (op 0: predict, 1: attention)."""
    runtime = app.state.runtime
    return runtime.embedded.engine.batchers[(runtime.models[name].index, op)]
