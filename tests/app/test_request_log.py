"""Request IDs on every response, the access log that names them, and JSON log lines from every process."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import sys

import httpx
import pytest
from fastapi.testclient import TestClient

from app.access import ERROR_LINES_PER_S, RequestIdMiddleware
from app.logs import JsonFormatter
from app.main import create_app
from testkit.server import ServiceProcess

from .conftest import VIT, make_settings, png_bytes

PREDICT = f"/v1/models/{VIT}/predict"
NEW_ID = re.compile(r"[0-9a-f]{16}")


def access_lines(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "app.access"]


def test_every_response_carries_a_request_id_the_clients_own_when_sane(client, digits) -> None:  # type: ignore[no-untyped-def]
    png = png_bytes(digits[0][0])
    answers = [
        client.post(PREDICT, files={"file": ("d.png", png, "image/png")}),  # 200
        client.post("/v1/models/nope/predict", files={"file": ("d.png", png, "image/png")}),  # 404
        client.post(PREDICT, content=b"x" * 64, headers={"content-length": str(1 << 30)}),  # 413, middleware
        client.get("/no/such/route"),  # 404 from the router
        client.get("/v2/health/ready"),
    ]
    assert [r.status_code for r in answers] == [200, 404, 413, 404, 200]
    ids = [r.headers["x-request-id"] for r in answers]
    assert all(NEW_ID.fullmatch(i) for i in ids), ids
    assert len(set(ids)) == len(ids)
    # a proxy's or tracer's ID is kept; one that could break a log line or a header is replaced
    assert (
        client.get("/v2/health/live", headers={"X-Request-ID": "edge-7f3a:42"}).headers["x-request-id"]
        == "edge-7f3a:42"
    )
    for bad in (b"two words", b"x" * 129, "ünïcode".encode(), b"", b"a\tb"):
        got = client.get("/v2/health/live", headers={"X-Request-ID": bad}).headers["x-request-id"]
        assert NEW_ID.fullmatch(got), (bad, got)


def test_the_access_log_writes_errors_by_default_and_every_request_when_asked(
    test_store, digits, caplog: pytest.LogCaptureFixture
) -> None:  # type: ignore[no-untyped-def]
    png = png_bytes(digits[0][0])
    caplog.set_level(logging.INFO, logger="app.access")
    for setting, logged in (("errors", [404]), ("all", [200, 404]), ("off", [])):
        caplog.clear()
        with TestClient(create_app(make_settings(test_store, access_log=setting))) as c:
            ok = c.post(PREDICT, files={"file": ("d.png", png, "image/png")})
            missing = c.post("/v1/models/nope/predict", files={"file": ("d.png", png, "image/png")})
        lines = access_lines(caplog)
        assert [r.status for r in lines] == logged, setting  # type: ignore[attr-defined]
        by_status = {r.status: r for r in lines}  # type: ignore[attr-defined]
        for status, answer in ((200, ok), (404, missing)):
            if status in by_status:
                line = by_status[status]
                assert line.request_id == answer.headers["x-request-id"]  # type: ignore[attr-defined]
                assert (line.method, line.path) == ("POST", answer.request.url.path)  # type: ignore[attr-defined]
                assert line.duration_ms > 0  # type: ignore[attr-defined]
                assert f"{status}" in line.getMessage() and line.request_id in line.getMessage()  # type: ignore[attr-defined]


def test_an_overload_of_errors_is_written_up_to_a_cap_a_second_and_counted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Thousands of 503s a second under overload: ERROR_LINES_PER_S lines a second, then one line
    saying how many were left out."""
    now = [100.2]

    async def unavailable(scope, receive, send) -> None:  # type: ignore[no-untyped-def]
        await send({"type": "http.response.start", "status": 503, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    async def sent(message) -> None:  # type: ignore[no-untyped-def]
        pass

    middleware = RequestIdMiddleware(unavailable, "errors", clock=lambda: now[0])
    scope = {"type": "http", "method": "POST", "path": "/v1/models/m/predict", "headers": [], "client": None}

    async def requests(n: int) -> None:
        for _ in range(n):
            await middleware(dict(scope), None, sent)

    caplog.set_level(logging.INFO, logger="app.access")
    asyncio.run(requests(ERROR_LINES_PER_S + 30))
    assert len(access_lines(caplog)) == ERROR_LINES_PER_S
    now[0] = 101.0  # the next second: the tally, then its own line
    asyncio.run(requests(1))
    lines = access_lines(caplog)
    assert len(lines) == ERROR_LINES_PER_S + 2
    assert lines[-2].left_out == 30 and "30 error lines" in lines[-2].getMessage()  # type: ignore[attr-defined]
    assert lines[-1].status == 503  # type: ignore[attr-defined]


def test_an_unexpected_error_is_a_json_500_whose_id_is_in_the_log(
    test_store, caplog: pytest.LogCaptureFixture
) -> None:  # type: ignore[no-untyped-def]
    app = create_app(make_settings(test_store))

    async def broken() -> None:
        raise RuntimeError("a bug")

    app.add_api_route("/broken", broken)
    caplog.set_level(logging.INFO)
    with TestClient(app, raise_server_exceptions=False) as c:
        r = c.get("/broken", headers={"X-Request-ID": "trace-500"})
    assert r.status_code == 500
    assert r.json() == {"detail": "internal server error"}
    assert r.headers["x-request-id"] == "trace-500"
    errors = [rec for rec in caplog.records if rec.name == "app.errors"]
    assert errors and "trace-500" in errors[0].getMessage() and errors[0].exc_info
    (line,) = access_lines(caplog)
    assert (line.status, line.levelno, line.request_id) == (500, logging.WARNING, "trace-500")  # type: ignore[attr-defined]


def test_json_lines_carry_the_records_fields_and_its_traceback() -> None:
    try:
        raise ValueError("boom")
    except ValueError:
        exc_info = sys.exc_info()
    record = logging.LogRecord("app.x", logging.ERROR, __file__, 1, "failed %s", ("here",), exc_info)
    record.request_id, record.status = "abc", 500
    line = json.loads(JsonFormatter().format(record))
    assert line["message"] == "failed here" and line["level"] == "ERROR" and line["logger"] == "app.x"
    assert (line["request_id"], line["status"]) == ("abc", 500)
    assert "ValueError: boom" in line["exception"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00", line["time"])


def test_with_log_format_json_every_process_writes_json_lines(test_store, tmp_path) -> None:  # type: ignore[no-untyped-def]
    env = {"MODEL_STORE_DIR": str(test_store), "DEVICE": "cpu", "LOG_FORMAT": "json", "LOG_LEVEL": "info"}
    log_path = tmp_path / "service.log"
    with ServiceProcess(env, workers=2, log_path=log_path) as svc:
        r = httpx.post(
            f"{svc.url}/v1/models/nope/predict",
            content=b"x",
            headers={"X-Request-ID": "json-404"},
            timeout=30,
        )
        assert r.status_code == 404
    text = log_path.read_text()
    lines = [json.loads(line) for line in text.splitlines() if line.strip()]  # raises on a non-JSON line
    loggers = {line["logger"] for line in lines}
    assert {"app.supervisor", "app.engine.server", "uvicorn.error", "app.access"} <= loggers, loggers
    assert len({line["pid"] for line in lines}) >= 4  # supervisor, engine, two workers
    (access,) = [
        line for line in lines if line["logger"] == "app.access" and line["status"] != 503
    ]  # not ready yet
    assert (access["request_id"], access["status"], access["path"]) == (
        "json-404",
        404,
        "/v1/models/nope/predict",
    )
