"""The service in a subprocess on 127.0.0.1:<free port>, started, polled until ready and stopped with
SIGTERM the way a deployment would.

Two ways to run it: ``python -m app`` with WORKERS=N (supervisor, engine and N front-end workers: what
ships), or, with ``workers=None``, plain ``uvicorn app.main:app``, one process with the engine on a thread,
for callers that need a single process (its RSS, its exit code) or another ASGI app.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, TypeVar

import httpx

from .metrics import Samples, scrape
from .ports import free_port

REPO_ROOT = Path(__file__).resolve().parent.parent
READY_PATH = "/v2/health/ready"
T = TypeVar("T")


def wait_ready(
    url: str, timeout: float = 120.0, poll: float = 0.05, exited: Callable[[], str | None] = lambda: None
) -> None:
    """Poll `url`'s readiness until it answers 200; raise as soon as `exited()` gives a reason (the
    process is gone) or when `timeout` seconds pass."""
    deadline = time.monotonic() + timeout
    with httpx.Client(base_url=url, timeout=2.0) as client:
        while time.monotonic() < deadline:
            if (reason := exited()) is not None:
                raise RuntimeError(reason)
            try:
                if client.get(READY_PATH).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(poll)
    raise TimeoutError(f"{url} not ready after {timeout:.0f} s")


def wait_for(predicate: Callable[[], T], timeout: float, interval: float = 0.05) -> T | None:
    """Poll another process's state until ``predicate()`` is truthy (returned) or ``timeout`` seconds
    pass (its last value returned); the deadline only turns a hang into a failure."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(interval)


def tree_pids(pid: int) -> list[int]:
    """pid and all its descendants (from /proc/<pid>/task/*/children)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        for task in Path(f"/proc/{p}/task").glob("*"):
            try:
                todo += [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                pass
    return out


def child_commands(pid: int) -> dict[int, str]:
    """pid -> command line of each child of the process (the supervisor's engine and workers)."""
    out = {}
    for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
        try:
            out[int(child)] = Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except FileNotFoundError:
            continue
    return out


def tree_memory_mb(pid: int) -> dict[str, float]:
    """RSS and PSS summed over the process tree. RSS counts shared pages (torch's libraries, the hop's
    shared arenas) once per process; PSS splits them between the processes that share them."""
    rss = pss = 0
    pids = tree_pids(pid)
    for p in pids:
        try:
            for line in Path(f"/proc/{p}/smaps_rollup").read_text().splitlines():
                if line.startswith("Rss:"):
                    rss += int(line.split()[1])
                elif line.startswith("Pss:"):
                    pss += int(line.split()[1])
        except OSError:
            pass
    return {"rss_mb": round(rss / 1024, 1), "pss_mb": round(pss / 1024, 1), "processes": len(pids)}


class PeakMemory:
    """Samples a process tree's memory on a thread while a load runs; `.peak` is the sample with the
    highest PSS (memory under load is what the tree holds during the run, not after it drained)."""

    def __init__(self, pid: int, interval: float = 0.25) -> None:
        self.pid, self.interval = pid, interval
        self.peak: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while True:
            now = tree_memory_mb(self.pid)
            if now["pss_mb"] > self.peak.get("pss_mb", -1):
                self.peak = now
            if self._stop.wait(self.interval):
                return

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


class ServiceProcess:
    """Use as a context manager, or `start()` ... `stop()`. The output goes to `log_path` (else a
    temporary file) and is read back with `log()`."""

    def __init__(
        self,
        env: Mapping[str, str] | None = None,
        *,
        workers: int | None = 1,
        log_path: Path | None = None,
        app: str = "app.main:app",
        uvicorn_args: tuple[str, ...] = (),
        access_log: bool = False,
        cwd: Path = REPO_ROOT,
    ):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        # gRPC on a free port where grpc is installed (a lent GPU machine may lack it: then off);
        # GRPC_PORT in ``env`` wins ("0": off)
        self.grpc_port = free_port() if importlib.util.find_spec("grpc") is not None else 0
        self.env = {**os.environ, "GRPC_PORT": str(self.grpc_port), **(env or {})}
        self.grpc_target = f"127.0.0.1:{self.env['GRPC_PORT']}"
        self.workers = workers
        self.log_path = log_path
        self.app = app
        self.uvicorn_args = uvicorn_args
        self.access_log = access_log
        self.cwd = cwd  # another checkout (a git worktree) serves that checkout's code
        self.proc: subprocess.Popen | None = None
        self.spawned_at = 0.0
        self._log: IO[bytes] | None = None

    def command(self) -> list[str]:
        if self.workers is not None:
            return [sys.executable, "-m", "app"]
        cmd = [sys.executable, "-m", "uvicorn", self.app, "--host", "127.0.0.1", "--port", str(self.port)]
        return cmd + [
            "--workers",
            "1",
            *(() if self.access_log else ("--no-access-log",)),
            *self.uvicorn_args,
        ]

    def spawn(self) -> ServiceProcess:
        """Start the process without waiting for it to be ready."""
        env = dict(self.env)
        if self.workers is not None:  # python -m app reads where to listen from its settings
            env.update(HOST="127.0.0.1", PORT=str(self.port), WORKERS=str(self.workers))
        self._log = open(self.log_path, "w+b") if self.log_path else tempfile.TemporaryFile()  # noqa: SIM115
        self.spawned_at = time.perf_counter()
        self.proc = subprocess.Popen(
            self.command(), cwd=self.cwd, env=env, stdout=self._log, stderr=subprocess.STDOUT
        )
        return self

    def wait_ready(self, timeout: float = 120.0, poll: float = 0.05) -> float:
        """Seconds from spawn to the first 200 from the readiness route."""
        try:
            wait_ready(self.url, timeout, poll, self._exit_reason)
        except TimeoutError as exc:
            raise TimeoutError(f"{exc}:\n{self.log()}") from None
        return time.perf_counter() - self.spawned_at

    def start(self, timeout: float = 120.0) -> ServiceProcess:
        """Spawn and wait until ready; a process that never gets ready is stopped before the error."""
        self.spawn()
        try:
            self.wait_ready(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _exit_reason(self) -> str | None:
        if self.proc is None or self.proc.poll() is None:
            return None
        return f"the service exited with {self.proc.returncode}:\n{self.log()}"

    def log(self, tail: int = 8000) -> str:
        """The last `tail` characters of the process's output so far."""
        if self._log is None:
            return self.log_path.read_text(errors="replace")[-tail:] if self.log_path else ""
        # pread: the child shares this file's offset, so seeking it would move where the child writes
        fd = self._log.fileno()
        size = os.fstat(fd).st_size
        return os.pread(fd, tail * 4, max(0, size - tail * 4)).decode("utf-8", "replace")[-tail:]

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def metrics(self) -> Samples:
        return scrape(self.url)

    def memory_mb(self) -> dict[str, float] | None:
        """RSS and PSS of the whole service: the started process and every descendant (supervisor,
        engine, workers), or None when it is not running."""
        if self.proc is None or self.proc.poll() is not None:
            return None  # not started, or gone: no reading rather than zeros
        return tree_memory_mb(self.proc.pid)

    def rss_mb(self) -> float | None:
        """Resident memory of the whole process tree, in MB."""
        memory = self.memory_mb()
        return memory["rss_mb"] if memory else None

    def terminate(self) -> None:
        """SIGTERM, as an orchestrator sends it; the caller waits."""
        self.proc.send_signal(signal.SIGTERM)

    def wait(self, timeout: float) -> int:
        return self.proc.wait(timeout)

    def stop(self, timeout: float = 20.0) -> int | None:
        """SIGTERM and wait (SIGKILL after `timeout`); the exit code, None if never started."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self._log is not None and self.log_path is not None:  # keep reading the file after close
            self._log.close()
            self._log = None
        return self.proc.returncode

    def __enter__(self) -> ServiceProcess:
        return self if self.proc is not None else self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
