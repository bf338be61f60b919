"""What the image runs, run here: its healthcheck command, its torch-index choice, and its CMD on the
files its COPY lines put in the image, against the real app and the shipped checkpoints."""

from __future__ import annotations

import http.server
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from deployfiles import (
    DOCKERFILE,
    drain_budget_s,
    health_url,
    healthcheck_argv,
    materialize,
    parse_dockerfile,
)

from testkit.ports import free_port


class _Health(http.server.BaseHTTPRequestHandler):
    status = 200

    def do_GET(self):  # noqa: N802 - http.server's name
        body = json.dumps({"ready": self.status == 200}).encode()
        self.send_response(self.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.mark.parametrize(("status", "healthy"), [(200, True), (503, False), (None, False)])
def test_healthcheck_command_exit_status(runtime, status, healthy):
    """The HEALTHCHECK command exits 0 on 200 and non-zero on 503 or when nothing listens."""
    argv = healthcheck_argv(runtime.last("HEALTHCHECK"))
    assert argv[:2] == ["python", "-c"], argv
    port, _ = health_url(argv)
    handler = type("Health", (_Health,), {"status": status or 200})
    server = http.server.HTTPServer(("127.0.0.1", 0), handler)
    stub_port = server.server_address[1]
    if status is None:
        server.server_close()  # the port is now (almost certainly) closed: connection refused
    else:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    code = argv[2].replace(f"127.0.0.1:{port}", f"127.0.0.1:{stub_port}")
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=30)
    finally:
        if status is not None:
            server.shutdown()
            server.server_close()
    assert (done.returncode == 0) is healthy, done.stderr.decode()[-500:]


def _torch_index(variant: str) -> subprocess.CompletedProcess:
    """Run the Dockerfile's TORCH_VARIANT -> wheel index `case` under /bin/sh, as the build would."""
    text = next(
        i.args for s in parse_dockerfile(DOCKERFILE) for i in s.all("RUN") if "TORCH_VARIANT" in i.args
    )
    case = re.search(r"case .*?esac", text, re.S)
    assert case, 'expected a `case "$TORCH_VARIANT" in ... esac` choosing the wheel index'
    script = case.group(0) + '\necho "$index"'
    return subprocess.run(
        ["sh", "-c", script], env={"TORCH_VARIANT": variant, "PATH": os.environ["PATH"]}, capture_output=True
    )


@pytest.mark.parametrize(
    ("variant", "index"),
    [
        ("cuda", "https://pypi.org/simple"),
        ("cpu", "https://download.pytorch.org/whl/cpu"),
        ("cu128", "https://download.pytorch.org/whl/cu128"),
    ],
)
def test_torch_variant_selects_the_wheel_index(variant, index):
    done = _torch_index(variant)
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().strip() == index


def test_unknown_torch_variant_fails_the_build():
    assert _torch_index("gpu").returncode != 0


def test_image_command_serves_turns_healthy_and_drains(
    runtime, serve_argv, exposed_port, app_env, shipped_store, tmp_path
):
    """CMD + HEALTHCHECK + ENV of the runtime stage, run on the files its COPY lines put in the image."""
    workdir = materialize(runtime, tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in app_env}
    for key, value in runtime.env().items():
        if key in app_env:
            env[key] = str(tmp_path / value.lstrip("/")) if value.startswith("/") else value
    assert any(Path(env["MODEL_STORE_DIR"]).glob("*/card.json")), "COPY put no checkpoints in MODEL_STORE_DIR"
    # The image's code, not the checkout's, must be what gets imported.
    where = subprocess.run(
        [
            sys.executable,
            "-c",
            "import app.main, model_store; print(app.main.__file__, model_store.__file__)",
        ],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert where.returncode == 0, f"the image's files do not import:\n{where.stderr[-2000:]}"
    assert all(p.startswith(str(workdir)) for p in where.stdout.split()), where.stdout

    port = free_port()
    assert serve_argv[0] == "python", serve_argv
    argv = [sys.executable, *serve_argv[1:]]
    env.update(HOST="127.0.0.1", PORT=str(port), GRPC_PORT=str(free_port()))  # as the container's settings
    check = healthcheck_argv(runtime.last("HEALTHCHECK"))
    check[2] = check[2].replace(f"127.0.0.1:{exposed_port}", f"127.0.0.1:{port}")
    log = tmp_path / "server.log"
    with log.open("wb") as out:
        server = subprocess.Popen(argv, cwd=workdir, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        # Startup (model loading + warm-up) may take a while on a slow or busy CPU; once the engine
        # reports its models loaded (or, in one process, the app reports itself ready), the healthcheck
        # must agree within seconds. A worker's "Application startup complete" comes before that.
        deadline = time.monotonic() + 180
        while True:
            assert server.poll() is None, f"the server exited:\n{log.read_text()[-3000:]}"
            probe = subprocess.run([sys.executable, *check[1:]], env=env, capture_output=True, timeout=30)
            if probe.returncode == 0:
                break
            if re.search(r"engine: .*, loaded in |INFO app\.runtime: ready in ", log.read_text()):
                deadline = min(deadline, time.monotonic() + 10)
            assert time.monotonic() < deadline, (
                f"never healthy:\n{probe.stderr.decode()[-1500:]}\n{log.read_text()[-3000:]}"
            )
            time.sleep(0.5)
        server.send_signal(signal.SIGTERM)
        code = server.wait(timeout=drain_budget_s(app_env) + 10)
        # uvicorn re-raises the signal once it has shut down cleanly: -SIGTERM (docker shows 143; as
        # PID 1 in a container the re-raised signal is ignored and the exit status is 0).
        assert code in (0, -signal.SIGTERM), f"exit {code} on SIGTERM:\n{log.read_text()[-3000:]}"
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
