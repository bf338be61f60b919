"""Helpers for the hardening tests: random-init model stores, a real uvicorn server process, digits,
Prometheus parsing. Imported by conftest.py and the test modules (the folder is put on sys.path)."""

from __future__ import annotations

import io
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[2]
MNIST_IMAGES = "MNIST/raw/t10k-images-idx3-ubyte"


# ------------------------------------------------------------------------------------------- models


def make_store(root: Path, presets: dict[str, str]) -> Path:
    """A model store with {model name: preset} at random init (seeded): same compute as trained ones."""
    from model_store import save_untrained

    for name, preset in presets.items():
        save_untrained(preset, root / name, name=name, note="random init for hardening tests")
    return root


# ------------------------------------------------------------------------------------------- digits


def _find_mnist() -> Path | None:
    for root in (os.environ.get("DATA_ROOT"), REPO_ROOT.parent / "shared" / "data", REPO_ROOT / "data"):
        if root and (Path(root) / MNIST_IMAGES).is_file():
            return Path(root) / MNIST_IMAGES
    return None


def load_digits(n: int = 16) -> np.ndarray:
    """(n, 28, 28) uint8 white-on-black: MNIST test digits, or a drawn '7' when MNIST is absent."""
    path = _find_mnist()
    if path is not None:
        data = path.read_bytes()[16 : 16 + n * 784]
        return np.frombuffer(data, dtype=np.uint8).reshape(n, 28, 28).copy()
    out = np.zeros((n, 28, 28), dtype=np.uint8)
    out[:, 6:9, 7:21] = 255
    for r in range(9, 23):
        c = 20 - (r - 9) // 2
        out[:, r, c - 1 : c + 2] = 255
    return out


def png_bytes(gray: np.ndarray) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.asarray(gray, dtype=np.uint8), mode="L").save(buf, format="PNG")
    return buf.getvalue()


# ------------------------------------------------------------------------------------------- servers


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def parse_metrics(text: str) -> dict[tuple[str, frozenset], float]:
    out = {}
    for line in text.splitlines():
        m = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)", line)
        if not m or line.startswith("#"):
            continue
        labels = frozenset(re.findall(r'([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
        try:
            out[(m.group(1), labels)] = float(m.group(3))
        except ValueError:
            pass
    return out


def metric_sum(samples: dict, name: str, **labels: str) -> float:
    """Sum of the samples `name` (or `name_total`: prometheus_client suffixes counters) whose labels
    include `labels`."""
    want = set(labels.items())
    names = {name, name + "_total"}
    return sum(v for (n, lab), v in samples.items() if n in names and want <= lab)


class ServerProcess:
    """`uvicorn app.main:app` (one worker) on 127.0.0.1:<free port> with the given settings."""

    def __init__(self, env: dict[str, str], log_path: Path):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        self.env = {**os.environ, "LOG_LEVEL": "warning", "WARMUP": "true", **env}
        self.proc: subprocess.Popen | None = None

    def start(self, ready_timeout: float = 90.0) -> ServerProcess:
        cmd = [
            sys.executable,
            "-m",
            "uvicorn",
            "app.main:app",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
        ]
        cmd += ["--workers", "1", "--no-access-log"]
        self._log = open(self.log_path, "wb")  # noqa: SIM115 (closed in stop)
        self.proc = subprocess.Popen(
            cmd, cwd=REPO_ROOT, env=self.env, stdout=self._log, stderr=subprocess.STDOUT
        )
        deadline = time.monotonic() + ready_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}:\n{self.log()}")
            try:
                if httpx.get(self.url + "/v2/health/ready", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"server not ready within {ready_timeout}s:\n{self.log()}")

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-6000:]
        except OSError:
            return ""

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def metrics(self) -> dict:
        r = httpx.get(self.url + "/metrics", timeout=10)
        assert r.status_code == 200
        return parse_metrics(r.text)

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def terminate(self) -> None:
        self.proc.send_signal(signal.SIGTERM)

    def wait(self, timeout: float) -> int:
        return self.proc.wait(timeout)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        if getattr(self, "_log", None):
            self._log.close()


# ------------------------------------------------------------------------------------------- raw HTTP


class Answer:
    """One HTTP answer read off a raw connection."""

    def __init__(self, status: int, headers: dict[str, str], body: bytes):
        self.status, self.headers, self.body = status, headers, body

    def json(self):
        import json

        return json.loads(self.body)


def wire_request(method: str, path: str, body: bytes = b"", content_type: str | None = None) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", "Connection: close"]
    if content_type:
        lines.append(f"Content-Type: {content_type}")
    if body or method == "POST":
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


async def read_answer(reader) -> Answer:
    """Read one response (Content-Length or until EOF) from an asyncio StreamReader."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
    if "content-length" in headers:
        body = await reader.readexactly(int(headers["content-length"]))
    else:
        body = await reader.read()
    return Answer(status, headers, body)


async def send_request(port: int, payload: bytes, timeout: float) -> Answer:
    """One request on a fresh connection; raises on connection errors or timeout."""
    import asyncio

    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(payload)
        await writer.drain()
        return await asyncio.wait_for(read_answer(reader), timeout)
    finally:
        writer.close()
