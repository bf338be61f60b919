"""``python -m app``: the process layout of the service.

    supervisor ── binds the port, starts and restarts the others, turns SIGTERM into a drain
    ├── engine      (python -m app.engine)  one per device: models, one batcher per model
    └── worker × N  (python -m app.worker)  front end: HTTP, decoding, preprocessing, formatting

Workers share the listening socket (the kernel hands each connection to one of them) and reach the
engine through ``app.hop``. A dead worker is replaced while the others keep serving; a dead engine
is restarted and the workers reconnect (meanwhile they answer 503 at once). Metrics go to one
Prometheus multiprocess directory, so every worker's /metrics shows the whole service's totals.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

from pydantic import ValidationError

from .logs import configure_logging
from .settings import Settings, get_settings, settings_problems

log = logging.getLogger("app.supervisor")


# glibc's malloc serves blocks over its mmap threshold (128 KiB at first; a batch's activations are
# 0.4-2 MB) from fresh kernel pages and hands them back when freed, so forward passes keep faulting their
# activation memory in afresh, page by page. Kept in the heap instead (blocks up to 32 MiB, the most
# glibc allows; up to 128 MiB free before it trims), the pages are reused: on 2 cores the CNN's batch of
# 32 computes in 0.22 ms per image instead of 0.40 and the ViT's in 0.99 instead of 1.23 (in-process,
# one thread); served, alternated twice at 64 clients, PNG requests +3-8% (CNN) and +5-9% (ViT), /v2
# tensors +5-12%, for 10-15 MB more engine RSS. Only the engine: its blocks are activations of bounded
# size, while a worker decoding large photos would keep up to the trim threshold of freed heap for nothing.
ENGINE_MALLOC = {"MALLOC_MMAP_THRESHOLD_": str(32 << 20), "MALLOC_TRIM_THRESHOLD_": str(128 << 20)}


class Supervisor:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.workers_wanted = settings.workers_here()
        try:
            self.listener = socket.create_server((settings.host, settings.port), backlog=2048)
        except OSError as exc:
            raise OSError(f"PORT {settings.port} on {settings.host}: {exc.strerror}") from None
        self.listener.set_inheritable(True)
        if settings.grpc_port and _port_in_use(settings.host, settings.grpc_port):
            # the workers share it with SO_REUSEPORT, which would let them share it with a stranger too
            self.listener.close()
            raise OSError(
                f"GRPC_PORT {settings.grpc_port} on {settings.host} is in use (GRPC_PORT=0 turns gRPC off)"
            )
        self.dir = tempfile.mkdtemp(prefix="vit-digits-")
        self.socket_path = os.path.join(self.dir, "engine.sock")
        self.metrics_dir = os.path.join(self.dir, "metrics")
        os.makedirs(self.metrics_dir)
        self.env = {
            **os.environ,
            "ENGINE_SOCKET": self.socket_path,
            "PROMETHEUS_MULTIPROC_DIR": self.metrics_dir,
        }
        self.engine: subprocess.Popen | None = None
        self.workers: list[subprocess.Popen] = []
        self.stopping = False

    def _start_engine(self) -> subprocess.Popen:
        env = {**ENGINE_MALLOC, **self.env}  # the user's own MALLOC_* settings win
        cmd = [
            sys.executable,
            "-m",
            "app.engine",
            "--socket",
            self.socket_path,
            "--workers",
            str(self.workers_wanted),
        ]
        return subprocess.Popen(cmd, env=env)

    def _start_worker(self) -> subprocess.Popen:
        fd = self.listener.fileno()
        return subprocess.Popen(
            [sys.executable, "-m", "app.worker", "--fd", str(fd)], env=self.env, pass_fds=[fd]
        )

    def _reaped(self, proc: subprocess.Popen) -> None:
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(proc.pid, self.metrics_dir)  # its live gauges leave the sums

    def run(self) -> int:
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        log.info("starting the engine and %d workers on %s:%d", self.workers_wanted, self.settings.host,
                 self.settings.port)  # fmt: skip
        self.engine = self._start_engine()
        self.workers = [self._start_worker() for _ in range(self.workers_wanted)]
        try:
            while not self.stopping:
                time.sleep(0.05)
                self._replace_the_dead()
        finally:
            self._shutdown()
        return 0

    def _replace_the_dead(self) -> None:
        for i, worker in enumerate(self.workers):
            if worker.poll() is not None and not self.stopping:
                log.warning("worker %d exited with %s; starting another", worker.pid, worker.returncode)
                self._reaped(worker)
                self.workers[i] = self._start_worker()
        if self.engine is not None and self.engine.poll() is not None and not self.stopping:
            log.warning("engine %d exited with %s; restarting it", self.engine.pid, self.engine.returncode)
            self._reaped(self.engine)
            self.engine = self._start_engine()

    def _on_signal(self, signum: int, frame: object) -> None:
        self.stopping = True

    def _shutdown(self) -> None:
        """Workers first (they stop accepting and answer what they hold), then the engine."""
        self.listener.close()
        grace = self.settings.shutdown_grace_s + 5
        for worker in self.workers:
            _signal(worker, signal.SIGTERM)
        _wait_all(self.workers, grace)
        if self.engine is not None:
            _signal(self.engine, signal.SIGTERM)
            _wait_all([self.engine], grace)
        shutil.rmtree(self.dir, ignore_errors=True)
        log.info("stopped")


def _port_in_use(host: str, port: int) -> bool:
    """Whether another process holds the port (asked before the workers share it)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # our own last run's TIME_WAIT is fine
        try:
            probe.bind((host, port))
        except OSError:
            return True
    return False


def _signal(proc: subprocess.Popen, signum: int) -> None:
    if proc.poll() is None:
        proc.send_signal(signum)


def _wait_all(procs: list[subprocess.Popen], timeout_s: float) -> None:
    until = time.monotonic() + timeout_s
    for proc in procs:
        try:
            proc.wait(max(until - time.monotonic(), 0.01))
        except subprocess.TimeoutExpired:
            log.error("process %d did not stop within %.0f s; killing it", proc.pid, timeout_s)
            proc.kill()
            proc.wait()


def main() -> None:
    try:
        settings = get_settings()
    except ValidationError as exc:  # a misconfiguration: say which variable and why, not a traceback
        sys.exit(f"vit-digits: invalid settings: {settings_problems(exc)}")
    configure_logging(settings.log_level, settings.log_format)
    try:
        supervisor = Supervisor(settings)
    except OSError as exc:  # a port taken: say which, not a traceback
        sys.exit(f"vit-digits: cannot listen: {exc}")
    sys.exit(supervisor.run())
