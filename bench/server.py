"""Start the real service (uvicorn, one worker) on 127.0.0.1 in a subprocess; scrape its /metrics."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

REPO_ROOT = Path(__file__).resolve().parent.parent
_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def parse_metrics(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Prometheus text -> {(sample name, sorted labels): value}."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if not m:
            continue
        labels = tuple(sorted(_LABEL.findall(m.group(2) or "")))
        try:
            out[(m.group(1), labels)] = float(m.group(3))
        except ValueError:
            continue
    return out


def metric(samples: dict, name: str, **labels: str) -> float:
    """Sum of the samples called name (or name_total: prometheus_client suffixes counters) whose labels
    include the given ones (0.0 when absent)."""
    want = set(labels.items())
    names = {name, name + "_total"}
    return sum(v for (n, lab), v in samples.items() if n in names and want <= set(lab))


def rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError):
        pass
    return None


class Server:
    """uvicorn app.main:app on 127.0.0.1:<free port>; use as a context manager."""

    def __init__(
        self,
        env: dict[str, str] | None = None,
        access_log: bool = False,
        log_file: Path | None = None,
        app: str = "app.main:app",
    ):
        self.app = app
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.env = {**os.environ, "LOG_LEVEL": "warning", **(env or {})}
        self.access_log = access_log
        self.log_file = log_file
        self.proc: subprocess.Popen | None = None
        self.spawned_at = 0.0
        self._log = None

    def command(self) -> list[str]:
        cmd = [sys.executable, "-m", "uvicorn", self.app, "--host", "127.0.0.1"]
        cmd += ["--port", str(self.port), "--workers", "1", "--log-level", "warning"]
        if not self.access_log:
            cmd.append("--no-access-log")
        return cmd

    def start(self) -> Server:
        if self.log_file is not None:
            self._log = open(self.log_file, "a+b")
        else:
            self._log = tempfile.TemporaryFile()
        self.spawned_at = time.perf_counter()
        self.proc = subprocess.Popen(
            self.command(), cwd=REPO_ROOT, env=self.env, stdout=self._log, stderr=subprocess.STDOUT
        )
        return self

    def log_tail(self, n: int = 4000) -> str:
        if self._log is None:
            return ""
        self._log.flush()
        self._log.seek(0)
        return self._log.read()[-n:].decode("utf-8", "replace")

    def wait_ready(self, timeout: float = 120.0, poll: float = 0.01) -> float:
        """Seconds from spawn to the first 200 from /v2/health/ready."""
        deadline = time.perf_counter() + timeout
        with httpx.Client(base_url=self.base_url, timeout=1.0) as client:
            while time.perf_counter() < deadline:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"server exited with {self.proc.returncode}:\n{self.log_tail()}")
                try:
                    if client.get("/v2/health/ready").status_code == 200:
                        return time.perf_counter() - self.spawned_at
                except httpx.HTTPError:
                    pass
                time.sleep(poll)
        raise TimeoutError(f"server not ready after {timeout}s:\n{self.log_tail()}")

    def metrics(self) -> dict:
        r = httpx.get(self.base_url + "/metrics", timeout=10)
        r.raise_for_status()
        return parse_metrics(r.text)

    def rss_mb(self) -> float | None:
        return rss_mb(self.proc.pid) if self.proc else None

    def stop(self, timeout: float = 15.0) -> int | None:
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self._log is not None:
            self._log.close()
            self._log = None
        return self.proc.returncode

    def __enter__(self) -> Server:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
