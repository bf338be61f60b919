"""Latency at one client of several servers at once, request by request in turn.

On a shared, noisy machine the latency of one server drifts by milliseconds from one second to the
next, so two servers measured in separate runs (even alternating 1-s runs) differ by that drift more
than by what sets them apart. Here one client sends a request to A, then to B, then to B, then to A, ...
on keep-alive connections: both see the same machine within a few milliseconds, and the paired
per-request differences isolate the servers' own difference.
"""

from __future__ import annotations

import socket
import statistics
import time

from .loadgen import Target


class _Connection:
    """A blocking keep-alive HTTP/1.1 connection that sends one fixed request and reads the answer."""

    def __init__(self, port: int, target: Target) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)  # a stuck server fails
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.request = target.wire("127.0.0.1", port)
        self.buf = b""

    def round_trip(self) -> float:
        """Seconds from sending the request to the last byte of a 200 answer."""
        t0 = time.perf_counter()
        self.sock.sendall(self.request)
        while b"\r\n\r\n" not in self.buf:
            self.buf += self._recv()
        head, _, self.buf = self.buf.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        fields = (line.partition(":") for line in lines[1:])
        length = next((int(v) for k, _, v in fields if k.strip().lower() == "content-length"), None)
        if length is None:
            raise RuntimeError(f"no Content-Length in the answer to a benchmark request: {lines[0]!r}")
        while len(self.buf) < length:
            self.buf += self._recv()
        self.buf = self.buf[length:]
        elapsed = time.perf_counter() - t0
        if not lines[0].startswith("HTTP/1.1 200"):
            raise RuntimeError(f"expected 200, got {lines[0]!r}")
        return elapsed

    def _recv(self) -> bytes:
        data = self.sock.recv(1 << 16)
        if not data:
            raise ConnectionError("the server closed the connection")
        return data

    def close(self) -> None:
        self.sock.close()


def alternating_latency(ports: dict[str, int], target: Target, requests: int, warmup: int = 100) -> dict:
    """``requests`` measured round trips per server, taken in turn (ABBA order). Returns per label the
    round trips in ms and their median, and for two servers the median paired difference (2nd - 1st)."""
    labels = list(ports)
    conns: dict[str, _Connection] = {}
    times: dict[str, list[float]] = {label: [] for label in labels}
    try:
        for label, port in ports.items():
            conns[label] = _Connection(port, target)
        for i in range(warmup + requests):
            for label in labels if i % 2 == 0 else labels[::-1]:
                ms = conns[label].round_trip() * 1e3
                if i >= warmup:
                    times[label].append(ms)
    finally:
        for conn in conns.values():
            conn.close()
    out: dict = {label: {"p50_ms": round(statistics.median(t), 3), "ms": t} for label, t in times.items()}
    if len(labels) == 2:
        first, second = (times[label] for label in labels)
        diffs = [b - a for a, b in zip(first, second, strict=True)]
        out["median_paired_diff_ms"] = round(statistics.median(diffs), 3)
    return out
