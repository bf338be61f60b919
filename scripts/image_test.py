"""Run the built runtime image for real, then the same through the compose file (`make image-test`).

What it checks, talking only HTTP, gRPC and signals to the container (so it stays right whatever the server
inside looks like):
1. `run`: the container reports healthy (the image's own HEALTHCHECK), a posted digit is predicted right
   by every served model, /v2 answers tritonclient (metadata + infer), gRPC answers tritonclient.grpc
   (infer, and Triton's configuration, statistics and repository index),
   /metrics has the pending gauge;
2. SIGTERM while requests are in flight: every accepted request is answered, requests sent during the
   drain are answered or refused (never cut), and the container exits 0/143 before the stop timeout;
3. `compose`: the same through docker-compose.cpu.yml (podman-compose or `docker compose`), stopped
   with `compose stop` while requests are in flight.

Cold start = `run` issued -> /v2/health/ready answers 200. The container runs with a read-only root
filesystem, a tmpfs /tmp and a 256 MiB /dev/shm, as on Kubernetes.

    .venv/bin/python scripts/image_test.py --image localhost/vit-digits:cuda [--engine podman]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DIGIT = REPO / "docs" / "examples" / "seven.png"
CONTAINER_PORT, CONTAINER_GRPC_PORT = 8000, 8001
STOP_TIMEOUT_S = 40  # docker-compose.yml's stop_grace_period; SIGKILL after it
# A long queue when SIGTERM arrives: one image per forward pass, a few big batch requests.
DRAIN_ENV = {
    "DEVICE": "cpu",
    "MAX_BATCH_SIZE": "1",
    "MAX_QUEUE_SIZE": "8192",
    "MAX_BATCH_IMAGES": "256",
    "MAX_BODY_BYTES": str(32 << 20),
    "REQUEST_TIMEOUT_S": "60",
}
IN_FLIGHT, IMAGES_PER_REQUEST = 6, 192


def log(msg: str) -> None:
    print(f"[image-test {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def sh(*argv: str, check: bool = True, env: dict | None = None, timeout: float = 300) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout)
    if check and done.returncode != 0:
        raise RuntimeError(
            f"{' '.join(argv)} -> {done.returncode}\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
        )
    return done.stdout.strip()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def http(method: str, url: str, body: bytes | None = None, ctype: str = "", timeout: float = 120):
    """(status, body); raises OSError when no HTTP answer came (refused, reset, cut)."""
    req = urllib.request.Request(
        url, data=body, method=method, headers={"Content-Type": ctype} if ctype else {}
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


class Engine:
    def __init__(self, name: str):
        self.name = name

    def health(self, container: str) -> str:
        # Rootful podman without systemd has no timer to run HEALTHCHECK: run it, as the timer would.
        if self.name == "podman":
            sh("podman", "healthcheck", "run", container, check=False)
        out = sh(self.name, "inspect", "--format", "{{json .State}}", container)
        state = json.loads(out)
        return (state.get("Health") or state.get("Healthcheck") or {}).get("Status", "none")

    def state(self, container: str) -> dict:
        return json.loads(sh(self.name, "inspect", "--format", "{{json .State}}", container))


def wait_ready(engine: Engine, container: str, base: str, started: float, timeout: float = 300) -> dict:
    """Seconds from start to ready (HTTP 200) and to healthy (the image's HEALTHCHECK)."""
    out: dict[str, float] = {}
    deadline = started + timeout
    while "healthy" not in out:
        if time.monotonic() > deadline:
            raise RuntimeError(f"not healthy after {timeout} s: {out}\n{sh(engine.name, 'logs', container)}")
        state = engine.state(container)
        if not state.get("Running"):
            raise RuntimeError(f"the container stopped: {state}\n{sh(engine.name, 'logs', container)}")
        if "ready" not in out:
            try:
                if http("GET", f"{base}/v2/health/ready", timeout=2)[0] == 200:
                    out["ready"] = time.monotonic() - started
            except OSError:
                pass
        if "ready" in out and engine.health(container) == "healthy":
            out["healthy"] = time.monotonic() - started
        time.sleep(0.1 if "ready" not in out else 0.5)
    return out


def check_serving(base: str, grpc_target: str) -> list[str]:
    models = json.loads(http("GET", f"{base}/health")[1])["models"]
    assert models, "no models served"
    png = DIGIT.read_bytes()
    pixels = None
    for name in models:
        status, body = http("POST", f"{base}/v1/models/{name}/predict?return_input=true", png, "image/png")
        assert status == 200, (status, body[:500])
        answer = json.loads(body)
        assert answer["digit"] == 7, f"{name} read {answer['digit']} in seven.png"
        pixels = answer["input"]
    log(f"POST seven.png -> 7 from {', '.join(models)}")

    import numpy as np
    import tritonclient.http as triton

    client = triton.InferenceServerClient(url=base.removeprefix("http://"))
    try:
        assert client.is_server_live() and client.is_server_ready()
        assert client.get_server_metadata()["name"]
        image = (np.asarray(pixels, dtype=np.float32) * 255).round().astype(np.uint8)[None]
        for name in models:
            assert client.is_model_ready(name)
            meta = client.get_model_metadata(name)
            assert {o["name"] for o in meta["outputs"]} >= {"probabilities", "digit"}, meta
            inp = triton.InferInput("image", list(image.shape), "UINT8")
            inp.set_data_from_numpy(image, binary_data=True)
            result = client.infer(name, [inp])
            assert result.as_numpy("digit").tolist() == [7], result.get_response()
            assert result.as_numpy("probabilities").shape == (1, 10)
    finally:
        client.close()
    log(f"tritonclient: /v2 live, ready, metadata and infer -> 7 for {len(models)} models")
    import tritonclient.grpc as triton_grpc

    client = triton_grpc.InferenceServerClient(grpc_target)
    try:
        assert client.is_server_ready()
        for name in models:
            inp = triton_grpc.InferInput("image_bytes", [1], "BYTES")
            inp.set_data_from_numpy(np.array([png], dtype=np.object_))
            assert client.infer(name, [inp]).as_numpy("digit").tolist() == [7]
            # Triton's extensions, as perf_analyzer reads them: the configuration, and statistics
            # that count the calls just made (REST and gRPC, whichever worker took them)
            assert client.get_model_config(name).config.max_batch_size > 0
            stats = client.get_inference_statistics(name).model_stats[0]
            assert stats.inference_stats.success.count >= 2, stats
        index = client.get_model_repository_index().models
        assert sorted(m.name for m in index) == sorted(models)
    finally:
        client.close()
    log(f"tritonclient.grpc on {grpc_target}: ready, seven.png -> 7, config, statistics and repository index "
        f"for {len(models)} models")  # fmt: skip
    metrics = http("GET", f"{base}/metrics")[1].decode()
    assert "vit_digits_pending_requests" in metrics, "no vit_digits_pending_requests on /metrics"
    return models


def pending(base: str) -> float:
    try:
        text = http("GET", f"{base}/metrics", timeout=5)[1].decode()
    except OSError:
        return -1
    return sum(
        float(line.split()[-1])
        for line in text.splitlines()
        if line.startswith("vit_digits_pending_requests{")
    )


def drain(base: str, model: str, stop) -> dict:
    """Requests in flight, then stop() (SIGTERM); returns what happened to every request."""
    png = DIGIT.read_bytes()
    pixels = json.loads(
        http("POST", f"{base}/v1/models/{model}/predict?return_input=true", png, "image/png")[1]
    )
    image = [[round(v * 255) for v in row] for row in pixels["input"]]
    body = json.dumps({"pixels": [image] * IMAGES_PER_REQUEST}).encode()
    url = f"{base}/v1/models/{model}/predict/batch"

    def accepted_request():
        status, answer = http("POST", url, body, "application/json")
        digits = {p["digit"] for p in json.loads(answer)["predictions"]} if status == 200 else None
        return status, digits, time.monotonic()

    late: list[str] = []
    one = json.dumps({"pixels": [image]}).encode()

    def late_requests():
        # New requests during the drain: answered (503 or 200) or refused at connect, never cut.
        while len(late) < 400:
            try:
                late.append(str(http("POST", url, one, "application/json", timeout=30)[0]))
            except urllib.error.URLError as err:
                if isinstance(err.reason, ConnectionRefusedError):
                    late.append("refused")
                    return
                late.append(f"cut: {err.reason!r}")
            except OSError as err:
                late.append(f"cut: {err!r}")
            time.sleep(0.05)

    with ThreadPoolExecutor(IN_FLIGHT + 1) as pool:
        futures = [pool.submit(accepted_request) for _ in range(IN_FLIGHT)]
        deadline = time.monotonic() + 30
        while pending(base) < IN_FLIGHT * IMAGES_PER_REQUEST / 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        queued = pending(base)
        late_future = pool.submit(late_requests)
        t_signal = time.monotonic()
        exit_info = stop()
        t_exit = time.monotonic() - t_signal
        results = []
        for f in futures:
            try:
                results.append(f.result(timeout=120))
            except OSError as err:
                results.append((f"cut: {err!r}", None, time.monotonic()))
        late_future.result(timeout=60)
    last_answer = max(t for *_, t in results) - t_signal
    return {
        "queued_at_signal": queued,
        "results": [r[:2] for r in results],
        "last_answer_s": last_answer,
        "late": late,
        "exit_s": t_exit,
        **exit_info,
    }


def check_drain(report: dict, what: str) -> None:
    statuses = [s for s, _ in report["results"]]
    late = report["late"]
    log(
        f"{what}: SIGTERM with {report['queued_at_signal']:.0f} images pending in {IN_FLIGHT} requests -> "
        f"answered {statuses.count(200)}/{IN_FLIGHT} (200), the last {report['last_answer_s']:.1f} s "
        f"after SIGTERM; exit {report['exit_code']} after "
        f"{report['exit_s']:.1f} s; requests sent during the drain: "
        + ", ".join(f"{k} x{late.count(k)}" for k in sorted(set(late)))
    )
    assert all(s == 200 for s in statuses), f"accepted requests not answered: {statuses}"
    assert all(d == {7} for _, d in report["results"]), "wrong digits while draining"
    assert not [x for x in late if x.startswith("cut")], f"requests cut during the drain: {late}"
    assert report["exit_code"] in (0, 143), f"exit code {report['exit_code']} (137 = SIGKILLed)"
    assert report["exit_s"] < STOP_TIMEOUT_S, f"took {report['exit_s']:.1f} s to exit"


def run_image(engine: Engine, image: str) -> dict:
    port, grpc_port, name = free_port(), free_port(), "vit-digits-image-test"
    sh(engine.name, "rm", "-f", name, check=False)
    env = [f"--env={k}={v}" for k, v in DRAIN_ENV.items()]
    started = time.monotonic()
    sh(engine.name, "run", "-d", "--name", name, "-p", f"127.0.0.1:{port}:{CONTAINER_PORT}",
       "-p", f"127.0.0.1:{grpc_port}:{CONTAINER_GRPC_PORT}", "--read-only", "--tmpfs", "/tmp",
       "--shm-size", "256m", f"--stop-timeout={STOP_TIMEOUT_S}", *env, image)  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        times = wait_ready(engine, name, base, started)
        log(f"run: ready {times['ready']:.1f} s after `run`, healthy at {times['healthy']:.1f} s")
        models = check_serving(base, f"127.0.0.1:{grpc_port}")

        def stop():
            sh(engine.name, "kill", "--signal", "TERM", name)
            code = sh(engine.name, "wait", name, timeout=STOP_TIMEOUT_S + 30)
            return {"exit_code": int(code.split()[-1])}

        return drain_report(engine, name, base, models[0], stop, times, "run")
    except BaseException:
        log("container log:\n" + sh(engine.name, "logs", name, check=False)[-4000:])
        raise
    finally:
        sh(engine.name, "rm", "-f", name, check=False)


def drain_report(engine: Engine, name: str, base: str, model: str, stop, times: dict, how: str) -> dict:
    """SIGTERM with requests in flight, checked; the numbers for docs/deploy.md (Seen running)."""
    report = drain(base, model, stop)
    check_drain(report, how)
    return {"cold_start_s": times["ready"], "healthy_s": times["healthy"], "drain": report}


def compose_command(engine: Engine) -> list[str]:
    found = shutil.which("podman-compose") or str(Path(sys.executable).parent / "podman-compose")
    if engine.name == "podman" and Path(found).is_file():
        return [found]
    return [engine.name, "compose"]


def run_compose(engine: Engine, image: str, compose_file: Path) -> dict:
    project, port, grpc_port = "vit-digits-image-test", free_port(), free_port()
    compose = [*compose_command(engine), "-f", str(compose_file), "-p", project]
    env = {
        **os.environ,
        **DRAIN_ENV,
        "API_IMAGE": image,
        "API_PORT": str(port),
        "GRPC_API_PORT": str(grpc_port),
    }
    sh(*compose, "down", "-v", env=env, check=False)
    started = time.monotonic()
    sh(*compose, "up", "-d", "--no-build", "api", env=env)
    base = f"http://127.0.0.1:{port}"
    name = sh(engine.name, "ps", "-a", "--filter", f"label=com.docker.compose.project={project}",
              "--filter", "label=com.docker.compose.service=api", "--format", "{{.Names}}")  # fmt: skip
    assert name and "\n" not in name, f"expected one api container, got {name!r}"
    try:
        times = wait_ready(engine, name, base, started)
        log(f"compose: ready {times['ready']:.1f} s after `compose up`, healthy at {times['healthy']:.1f} s")
        models = check_serving(base, f"127.0.0.1:{grpc_port}")

        def stop():
            sh(*compose, "stop", "api", env=env, timeout=STOP_TIMEOUT_S + 60)
            return {"exit_code": engine.state(name)["ExitCode"]}

        return drain_report(engine, name, base, models[0], stop, times, "compose")
    except BaseException:
        log("container log:\n" + sh(engine.name, "logs", name, check=False)[-4000:])
        raise
    finally:
        sh(*compose, "down", "-v", env=env, check=False)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--image", default="localhost/vit-digits:cuda", help="image to run (default: %(default)s)"
    )
    parser.add_argument(
        "--engine", default=os.environ.get("ENGINE", "podman"), help="podman or docker (default: %(default)s)"
    )
    parser.add_argument(
        "--compose-file", type=Path, default=REPO / "docker-compose.cpu.yml", help="(default: %(default)s)"
    )
    parser.add_argument("--no-compose", action="store_true", help="skip the compose part")
    args = parser.parse_args()

    engine = Engine(args.engine)
    size = int(sh(engine.name, "image", "inspect", "--format", "{{.Size}}", args.image))
    log(f"image {args.image}: {size / 1e9:.2f} GB")
    (info,) = json.loads(sh(engine.name, "image", "inspect", args.image))
    check = (info.get("Config") or {}).get("Healthcheck") or info.get("Healthcheck")  # docker / podman
    assert check and check.get("Test"), "the image has no HEALTHCHECK (podman: build with --format docker)"
    results = {"image": args.image, "size_bytes": size, "run": run_image(engine, args.image)}
    if not args.no_compose:
        results["compose"] = run_compose(engine, args.image, args.compose_file)
    summary = {
        part: {key: round(results[part][key], 2) for key in ("cold_start_s", "healthy_s")}
        | {
            "exit_s": round(results[part]["drain"]["exit_s"], 2),
            "exit_code": results[part]["drain"]["exit_code"],
        }
        for part in ("run", "compose")
        if part in results
    }
    log(f"PASS {args.image} ({size / 1e9:.2f} GB): {json.dumps(summary)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
