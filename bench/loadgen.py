"""Closed-loop HTTP load generator: N keep-alive connections, each sending its next request as soon as the
previous answer is in (like wrk), for a warm-up then a measured window.

The default client speaks HTTP/1.1 over asyncio streams with pre-built request bytes, so the generator costs
a fraction of what an httpx client costs per request; that matters when it shares a 2-core box with the
server. ``--client httpx`` uses httpx.AsyncClient instead. Run as a separate process (uvloop when installed)
by ``bench.served``: ``python -m bench.loadgen SPEC.json`` prints a JSON result.
"""

from __future__ import annotations

import asyncio
import base64
import json
import sys
import time
from dataclasses import asdict, dataclass, field


@dataclass
class Target:
    """One request, repeated: method, path, headers and body (base64 in JSON)."""

    method: str
    path: str
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""

    def to_json(self) -> dict:
        d = asdict(self)
        d["body"] = base64.b64encode(self.body).decode("ascii")
        return d

    @classmethod
    def from_json(cls, d: dict) -> Target:
        return cls(d["method"], d["path"], dict(d.get("headers", {})), base64.b64decode(d.get("body", "")))

    def wire(self, host: str, port: int) -> bytes:
        lines = [f"{self.method} {self.path} HTTP/1.1", f"Host: {host}:{port}", "Connection: keep-alive"]
        lines += [f"{k}: {v}" for k, v in self.headers.items()]
        if self.body or self.method in ("POST", "PUT", "PATCH"):
            lines.append(f"Content-Length: {len(self.body)}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + self.body


@dataclass
class Spec:
    host: str
    port: int
    target: Target
    concurrency: int
    warmup_s: float
    duration_s: float
    start_at: float = 0.0  # time.time() at which every process starts (keeps several processes in step)
    client: str = "raw"
    timeout_s: float = 30.0


class _Stats:
    def __init__(self) -> None:
        self.latencies: list[float] = []  # seconds, completions inside the window
        self.status: dict[str, int] = {}
        self.errors: dict[str, int] = {}
        self.sent = 0

    def add_error(self, exc: BaseException) -> None:
        key = type(exc).__name__
        self.errors[key] = self.errors.get(key, 0) + 1


async def _read_response(reader: asyncio.StreamReader) -> tuple[int, bool]:
    """Read one response; return (status, keep_alive). Handles Content-Length and chunked bodies."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    length, chunked, keep_alive = 0, False, True
    for line in lines[1:]:
        name, _, value = line.partition(":")
        name = name.strip().lower()
        if name == "content-length":
            length = int(value)
        elif name == "transfer-encoding" and "chunked" in value.lower():
            chunked = True
        elif name == "connection" and value.strip().lower() == "close":
            keep_alive = False
    if chunked:
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            await reader.readexactly(size + 2)
            if size == 0:
                break
    elif length:
        await reader.readexactly(length)
    return status, keep_alive


async def _raw_client(spec: Spec, payload: bytes, t_start: float, t_end: float, stats: _Stats) -> None:
    reader = writer = None
    try:
        while time.perf_counter() < t_end:
            try:
                if writer is None:
                    reader, writer = await asyncio.open_connection(spec.host, spec.port)
                t0 = time.perf_counter()
                writer.write(payload)
                stats.sent += 1
                status, keep_alive = await asyncio.wait_for(_read_response(reader), spec.timeout_s)
                t1 = time.perf_counter()
                if t_start <= t1 <= t_end:
                    stats.latencies.append(t1 - t0)
                    stats.status[str(status)] = stats.status.get(str(status), 0) + 1
                if not keep_alive:
                    writer.close()
                    reader = writer = None
            except (TimeoutError, OSError, asyncio.IncompleteReadError, ValueError) as exc:
                stats.add_error(exc)
                if writer is not None:
                    writer.close()
                reader = writer = None
                await asyncio.sleep(0.01)
    finally:
        if writer is not None:
            writer.close()


async def _httpx_client(spec: Spec, client, t_start: float, t_end: float, stats: _Stats) -> None:
    import httpx

    t = spec.target
    while time.perf_counter() < t_end:
        try:
            t0 = time.perf_counter()
            stats.sent += 1
            r = await client.request(t.method, t.path, headers=t.headers, content=t.body or None)
            t1 = time.perf_counter()
            if t_start <= t1 <= t_end:
                stats.latencies.append(t1 - t0)
                stats.status[str(r.status_code)] = stats.status.get(str(r.status_code), 0) + 1
        except httpx.HTTPError as exc:
            stats.add_error(exc)
            await asyncio.sleep(0.01)


async def run(spec: Spec) -> dict:
    if spec.start_at:
        await asyncio.sleep(max(0.0, spec.start_at - time.time()))
    now = time.perf_counter()
    t_start, t_end = now + spec.warmup_s, now + spec.warmup_s + spec.duration_s
    stats = _Stats()
    if spec.client == "httpx":
        import httpx

        limits = httpx.Limits(max_connections=spec.concurrency, max_keepalive_connections=spec.concurrency)
        async with httpx.AsyncClient(
            base_url=f"http://{spec.host}:{spec.port}", limits=limits, timeout=spec.timeout_s
        ) as client:
            tasks = [_httpx_client(spec, client, t_start, t_end, stats) for _ in range(spec.concurrency)]
            await asyncio.gather(*tasks)
    else:
        payload = spec.target.wire(spec.host, spec.port)
        tasks = [_raw_client(spec, payload, t_start, t_end, stats) for _ in range(spec.concurrency)]
        await asyncio.gather(*tasks)
    return {
        "latencies": stats.latencies,
        "status": stats.status,
        "errors": stats.errors,
        "sent": stats.sent,
        "window_s": spec.duration_s,
    }


def install_uvloop() -> str:
    try:
        import uvloop
    except ImportError:
        return "asyncio"
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    return "uvloop"


def main(argv: list[str]) -> int:
    raw = json.loads(open(argv[0]).read())
    raw["target"] = Target.from_json(raw["target"])
    loop = install_uvloop()
    result = asyncio.run(run(Spec(**raw)))
    result["loop"] = loop
    json.dump(result, sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
