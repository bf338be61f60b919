"""Startup, readiness, draining, SIGTERM, metrics, the page and the OpenAPI document."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import threading

import pytest
import torch
from fastapi.testclient import TestClient

from app.cpus import available_cpus
from app.main import create_app
from app.settings import Settings

from .conftest import CNN, VIT, make_settings, running

PIXELS = {"pixels": [[0] * 10 + [255] * 8 + [0] * 10] * 28}


def test_creating_the_app_loads_nothing_and_it_is_not_ready_before_the_lifespan(test_store):
    app = create_app(make_settings(test_store))
    assert app.state.runtime.client is None and not app.state.runtime.models
    client = TestClient(app)  # no context manager: the lifespan does not run
    r = client.get("/v2/health/ready")
    assert r.status_code == 503 and r.json()["ready"] is False
    health = client.get("/health").json()
    assert {k: v for k, v in health.items() if k != "worker_pid"} == {
        "status": "starting",
        "ready": False,
        "device": "cpu",
        "models": [],
    }
    assert client.get("/v2/health/live").json() == {"live": True}
    r = client.post(f"/v1/models/{VIT}/predict", json=PIXELS)
    assert r.status_code == 503 and r.headers["retry-after"] and "starting" in r.json()["detail"]
    assert client.get("/v1/models").status_code == 503


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only fallback")
def test_startup_on_a_cpu_only_machine(test_store):
    for device in ("auto", "cpu"):
        with TestClient(create_app(make_settings(test_store, device=device))) as c:
            health = c.get("/health").json()
            assert health | {"worker_pid": 0} == {
                "status": "ok",
                "ready": True,
                "device": "cpu",
                "models": [CNN, VIT],
                "worker_pid": 0,
            }
            assert c.get(f"/v1/models/{VIT}").json()["device"] == "cpu"
            assert c.post(f"/v1/models/{VIT}/predict", json=PIXELS).status_code == 200
    with pytest.raises(RuntimeError, match="CUDA is not available"):
        with TestClient(create_app(make_settings(test_store, device="cuda"))):
            pass


def test_the_lifespan_can_run_again_after_a_shutdown(test_store):
    """ASGI test clients (and schemathesis) start and stop the lifespan once per session: the second
    start must be ready again, not stuck 'shutting down'."""
    app = create_app(make_settings(test_store))
    for _ in range(2):
        with TestClient(app) as c:
            assert c.get("/v2/health/ready").status_code == 200
            digit = {"pixels": [[0] * 28] * 27 + [[255] * 28]}
            assert c.post(f"/v1/models/{CNN}/predict", json=digit).status_code == 200


def test_an_empty_store_serves_no_models_and_is_never_ready(tmp_path):
    with TestClient(create_app(make_settings(tmp_path))) as c:
        assert c.get("/health").json()["models"] == []
        r = c.get("/v2/health/ready")
        assert r.status_code == 503 and "holds no models" in r.json()["reason"]
        assert c.get("/v1/models").json() == {"models": []}
        assert c.post("/v1/models/vit-mnist/predict", json=PIXELS).status_code == 404


def test_draining_refuses_inference_but_still_describes(make_client):
    c = make_client()
    runtime = c.app.state.runtime
    runtime.draining = True
    assert c.get("/v2/health/ready").status_code == 503
    assert c.get("/health").json()["status"] == "draining"
    r = c.post(f"/v1/models/{VIT}/predict", json=PIXELS)
    assert r.status_code == 503 and "shutting down" in r.json()["detail"] and r.headers["retry-after"]
    r = c.post(f"/v2/models/{VIT}/infer", json={})
    assert r.status_code == 503 and "shutting down" in r.json()["error"]
    assert c.get(f"/v2/models/{VIT}/ready").status_code == 503
    assert c.get(f"/v1/models/{VIT}").status_code == 200
    runtime.draining = False


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(), reason="needs the main thread")
def test_sigterm_turns_readiness_off_first_then_reaches_the_server(test_store):
    """Under uvicorn the lifespan finds uvicorn's SIGTERM handler; ours runs first, then calls it."""
    received = []
    previous = signal.getsignal(signal.SIGTERM)
    app = create_app(make_settings(test_store))

    async def main() -> None:
        reached_server = asyncio.Event()

        def server_handler(signum: int, frame: object) -> None:  # stands in for uvicorn's handler
            received.append(signum)
            reached_server.set()  # handlers run on the main thread, which is this loop's

        signal.signal(signal.SIGTERM, server_handler)
        async with running(app) as c:
            assert (await c.get("/v2/health/ready")).status_code == 200
            os.kill(os.getpid(), signal.SIGTERM)
            await asyncio.wait_for(reached_server.wait(), 10)
            assert received == [signal.SIGTERM]  # the server's handler still runs, once
            assert (await c.get("/v2/health/ready")).status_code == 503
            assert (await c.post(f"/v1/models/{VIT}/predict", json=PIXELS)).status_code == 503

    try:
        asyncio.run(main())
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_metrics_have_the_contract_names_per_app(test_store):
    apps = [create_app(make_settings(test_store)), create_app(make_settings(test_store))]  # no collisions
    with TestClient(apps[0]) as c:
        assert c.post(f"/v1/models/{VIT}/predict", json=PIXELS).status_code == 200
        assert c.post("/v1/models/nope/predict", json=PIXELS).status_code == 404
        text = c.get("/metrics").text
    for line in (
        'vit_digits_requests_total{method="POST",route="/v1/models/{name}/predict",status="200"} 1.0',
        'vit_digits_requests_total{method="POST",route="/v1/models/{name}/predict",status="404"} 1.0',
        f'vit_digits_queue_seconds_count{{model="{VIT}"}} 1.0',
        f'vit_digits_compute_seconds_count{{model="{VIT}"}} 1.0',
        f'vit_digits_batch_size_count{{model="{VIT}"}} 1.0',
        f'vit_digits_pending_requests{{model="{VIT}"}} 0.0',
        f'vit_digits_inference_count_total{{model="{VIT}"}} 1.0',
        f'vit_digits_execution_count_total{{model="{VIT}"}} 1.0',
        'vit_digits_request_seconds_count{route="/v1/models/{name}/predict"}',
        "vit_digits_request_body_bytes 0.0",  # every body answered: nothing held
        'vit_digits_lanes_busy{device="cpu"} 0.0',
    ):
        assert line in text, line
    lanes = Settings(cpu_lanes="auto").lane_count(available_cpus(), 1)  # the app's TORCH_THREADS is 1
    assert f'vit_digits_lanes{{device="cpu"}} {float(lanes)}' in text
    with TestClient(apps[1]) as c:
        assert 'route="/v1/models/{name}/predict"' not in c.get("/metrics").text  # its own registry
        zipped = c.get("/metrics", headers={"Accept-Encoding": "gzip"})  # as Prometheus scrapes
        plain = c.get("/metrics", headers={"Accept-Encoding": "identity"})
    assert zipped.headers["content-encoding"] == "gzip" and "content-encoding" not in plain.headers
    names = [line.split("{")[0] for line in plain.text.splitlines()]  # the same text, a fraction of the bytes
    assert [line.split("{")[0] for line in zipped.text.splitlines()] == names
    assert zipped.num_bytes_downloaded < plain.num_bytes_downloaded / 3


def test_page_static_noop_and_cors(make_client):
    c = make_client(cors_origins="http://example.org")
    r = c.get("/")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    # the page may run its own files only (the browser tests run it under this policy)
    csp = dict(part.strip().split(" ", 1) for part in r.headers["content-security-policy"].split(";"))
    assert csp["script-src"] == csp["style-src"] == "'self'"
    assert csp["frame-ancestors"] == csp["object-src"] == "'none'"
    assert r.headers["x-content-type-options"] == "nosniff" and r.headers["x-frame-options"] == "DENY"
    script = c.get("/static/app.js")
    assert script.headers["content-type"].startswith("text/javascript")
    assert script.headers["x-content-type-options"] == "nosniff"
    assert c.get("/static/does-not-exist.js").status_code == 404
    assert c.get("/v1/noop").json() == {"ok": True}
    assert c.post("/v1/noop", content=b"x").json() == {"ok": True}
    r = c.get("/health", headers={"Origin": "http://example.org"})
    assert r.headers["access-control-allow-origin"] == "http://example.org"
    r = c.get("/health", headers={"Origin": "http://evil.example"})
    assert "access-control-allow-origin" not in r.headers


def test_openapi_documents_typed_schemas(client):
    doc = client.get("/openapi.json").json()
    schemas = doc["components"]["schemas"]
    expected = (
        "ImageJSON PixelsJSON BatchImagesJSON BatchPixelsJSON V2InferRequest V2InferInput PredictResponse"
    )
    for name in [*expected.split(), "BatchResponse", "AttentionResponse", "ModelInfo", "V2InferResponse"]:
        assert name in schemas, name
    predict = doc["paths"]["/v1/models/{name}/predict"]["post"]
    assert set(predict["requestBody"]["content"]) == {"multipart/form-data", "image/*", "application/json"}
    assert predict["summary"] == "Classify one digit image."
    ok = predict["responses"]["200"]["content"]["application/json"]["schema"]
    assert ok == {"$ref": "#/components/schemas/PredictResponse"}
    assert {"413", "415", "422", "503", "504"} <= set(predict["responses"])
    infer = doc["paths"]["/v2/models/{name}/infer"]["post"]
    assert infer["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("/V2InferRequest")
    # Swagger UI comes from this server, not a CDN (the browser tests render it offline)
    assets = re.findall(r'(?:src|href)="([^"]+)"', client.get("/docs").text)
    assert assets and all(a.startswith("/docs-assets/") for a in assets), assets
    for asset in assets:
        assert client.get(asset).status_code == 200, asset


def _connect_and_listen(engine, states: list[dict]):  # type: ignore[no-untyped-def]
    """An EngineClient on the engine's socket that records every STATE it hears."""
    from app.hop import EngineClient, Kind

    client = EngineClient(engine.socket_path)
    hear = client._on_message

    def on_message(kind: int, payload: bytes) -> None:
        hear(kind, payload)
        if kind == Kind.STATE:
            states.append(dict(client.state))

    client._on_message = on_message  # type: ignore[method-assign]
    client.start()
    return client


def test_a_worker_hears_the_readiness_its_own_arrival_makes(test_store) -> None:  # type: ignore[no-untyped-def]
    """The engine's first STATE to a worker already counts that worker: the only worker of an engine
    whose models are loaded hears "ready" first, not the "0 of 1 workers are up" of a moment before."""
    from app.metrics import Metrics
    from app.runtime import EmbeddedEngine

    async def main() -> list[dict]:
        engine = EmbeddedEngine(make_settings(test_store), Metrics())
        engine.start()
        states: list[dict] = []
        client = _connect_and_listen(engine, states)
        await engine.engine_ready(client)
        await asyncio.sleep(0.2)  # any later STATE arrives meanwhile
        await client.close()
        await engine.stop(0.0)
        return states

    states = asyncio.run(main())
    assert states and states[0] == {"ready": True, "reason": "ok"}
    assert all(s["ready"] for s in states)


def test_a_worker_connecting_while_the_engine_drains_does_not_make_it_ready(test_store) -> None:  # type: ignore[no-untyped-def]
    from app.metrics import Metrics
    from app.runtime import EmbeddedEngine

    async def main() -> tuple[list[dict], list[dict]]:
        engine = EmbeddedEngine(make_settings(test_store), Metrics())
        engine.start()
        first_states: list[dict] = []
        first = _connect_and_listen(engine, first_states)
        await engine.engine_ready(first)
        drain = asyncio.run_coroutine_threadsafe(engine.engine.drain(1.0), engine.loop)
        assert await asyncio.wrap_future(drain)
        late_states: list[dict] = []
        late = _connect_and_listen(engine, late_states)  # e.g. a worker restarted during shutdown
        await asyncio.wait_for(late.state_known.wait(), 10)
        await asyncio.sleep(0.2)
        for client in (first, late):
            await client.close()
        await engine.stop(0.0)
        return first_states, late_states

    first_states, late_states = asyncio.run(main())
    assert first_states[-1]["ready"] is False and "shutting down" in first_states[-1]["reason"]
    assert late_states and not any(s["ready"] for s in late_states)


def test_readiness_waits_for_every_worker_once_and_survives_a_replaced_one(test_store, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Two workers expected: one connected is "1 of 2 workers are up"; both, ready. A worker that dies and
    is replaced (a new pid) does not take readiness away, and the one that replaces it hears "ready"."""
    import contextvars

    from app.metrics import Metrics
    from app.runtime import EmbeddedEngine

    pid = contextvars.ContextVar[int | None](
        "pid", default=None
    )  # each client's handshake thread sees its own
    real_getpid = os.getpid
    monkeypatch.setattr(os, "getpid", lambda: pid.get() or real_getpid())

    def connect(engine, states: list[dict], as_pid: int):  # type: ignore[no-untyped-def]
        token = pid.set(as_pid)
        try:
            return _connect_and_listen(engine, states)
        finally:
            pid.reset(token)

    async def main() -> tuple[list[dict], list[dict], list[dict], object]:
        engine = EmbeddedEngine(make_settings(test_store), Metrics())
        engine.engine.expected_workers = 2
        engine.start()
        first_states: list[dict] = []
        first = connect(engine, first_states, 100001)
        await engine.engine_ready(first)
        second_states: list[dict] = []
        second = connect(engine, second_states, 100002)
        await asyncio.wait_for(second.state_known.wait(), 10)
        await asyncio.sleep(0.2)
        await first.close()  # dies ...
        replacement_states: list[dict] = []
        replacement = connect(engine, replacement_states, 100003)  # ... and is replaced
        await asyncio.wait_for(replacement.state_known.wait(), 10)
        await asyncio.sleep(0.2)
        starting = engine.engine.starting_pids
        for client in (second, replacement):
            await client.close()
        await engine.stop(0.0)
        return first_states, second_states, replacement_states, starting

    first_states, second_states, replacement_states, starting = asyncio.run(main())
    assert first_states[0] == {"ready": False, "reason": "1 of 2 workers are up"}
    assert first_states[-1]["ready"] and second_states[0]["ready"]
    assert replacement_states and all(s["ready"] for s in replacement_states)
    assert all(s["ready"] for s in second_states)
    assert starting is None  # nothing more is counted once every worker has connected once
