"""The one inter-process hop: a front-end worker <-> the engine.

Why this shape: tensors never travel through the socket. Each worker connection gets a shared
memory arena, an anonymous ``memfd`` the engine creates and hands over the Unix socket with
SCM_RIGHTS (no name in /dev/shm, nothing left behind by a SIGKILL, no /dev/shm size limit in
containers). The arena is cut into slots. A request writes its preprocessed images into a free slot
and sends SUBMIT (26 bytes with its frame header); the engine reads the images straight from the
slot into its batch, writes the outputs into the same slot and answers DONE (20 bytes). Pickles
through pipes (multiprocessing queues) cost ~10x more per request and copy every tensor twice.

A slot belongs to the worker again only after its DONE, which the engine sends exactly once per
SUBMIT (also for a cancelled or expired request), so the engine never writes into a reused slot.

Wire format: every message is ``<IB`` (payload length, kind) and a payload; HELLO, WELCOME and
STATE carry JSON, SUBMIT/CANCEL/DONE fixed structs. ``time.monotonic()`` is system-wide on Linux,
so deadlines cross the hop as absolute times.
"""

from __future__ import annotations

import asyncio
import json
import mmap
import os
import socket
import struct
from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

import numpy as np

HEADER = struct.Struct("<IB")
SUBMIT = struct.Struct("<IHBIHd")  # request id, model index, op, slot, images, deadline
CANCEL = struct.Struct("<I")  # request id
DONE = struct.Struct("<IBHII")  # request id, status, batch size, queue µs, compute µs


class Kind(IntEnum):
    HELLO = 1  # worker -> engine: {"pid": ...}
    WELCOME = 2  # engine -> worker: catalogue + arena layout, with the arena's fd attached
    STATE = 3  # engine -> worker: {"ready": bool, "reason": str}
    SUBMIT = 4
    CANCEL = 5
    DONE = 6


class Op(IntEnum):
    PREDICT = 0
    ATTENTION = 1


class Status(IntEnum):
    OK = 0
    EXPIRED = 1  # deadline passed in the queue: 504
    OVERLOADED = 2  # queue full: 503 + Retry-After
    SHUTTING_DOWN = 3  # 503
    CANCELLED = 4  # the worker cancelled it; nobody is waiting
    FAILED = 5  # the model raised: 500
    UNKNOWN = 6  # no such model or op: 404


def event_loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop when installed (uvicorn[standard] brings it; the workers run on it too): its transports
    and callbacks cost less per SUBMIT and DONE than asyncio's own loop (0.1 ms less p50 at 1 client
    on 2 cores). None: asyncio's default loop."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def frame(kind: Kind, payload: bytes) -> bytes:
    return HEADER.pack(len(payload), kind) + payload


def frame_json(kind: Kind, obj: Any) -> bytes:
    return frame(kind, json.dumps(obj).encode())


def submit_message(req_id: int, model: int, op: Op, slot: int, n: int, deadline: float) -> bytes:
    return HEADER.pack(SUBMIT.size, Kind.SUBMIT) + SUBMIT.pack(req_id, model, op, slot, n, deadline)


def cancel_message(req_id: int) -> bytes:
    return HEADER.pack(CANCEL.size, Kind.CANCEL) + CANCEL.pack(req_id)


def done_message(
    req_id: int, status: Status, batch: int = 0, queue_s: float = 0.0, compute_s: float = 0.0
) -> bytes:
    return HEADER.pack(DONE.size, Kind.DONE) + DONE.pack(
        req_id, status, batch, min(int(queue_s * 1e6), 0xFFFFFFFF), min(int(compute_s * 1e6), 0xFFFFFFFF)
    )


class FrameReader:
    """Splits a byte stream into (kind, payload) messages."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[tuple[int, memoryview]]:
        self._buf += data
        out, pos, buf = [], 0, self._buf
        while len(buf) - pos >= HEADER.size:
            length, kind = HEADER.unpack_from(buf, pos)
            end = pos + HEADER.size + length
            if len(buf) < end:
                break
            out.append((kind, bytes(buf[pos + HEADER.size : end])))
            pos = end
        if pos:
            del buf[:pos]
        return out


# ------------------------------------------------------------------------------------------ arena


@dataclass(frozen=True)
class SlotClass:
    count: int
    capacity: int  # images per slot
    out_width: int  # float32 outputs per image


@dataclass(frozen=True)
class Layout:
    image_size: int
    classes: tuple[SlotClass, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"image_size": self.image_size, "classes": [c.__dict__ for c in self.classes]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Layout:
        return cls(d["image_size"], tuple(SlotClass(**c) for c in d["classes"]))

    @property
    def nbytes(self) -> int:
        px = self.image_size * self.image_size
        return sum(c.count * c.capacity * (px + c.out_width) * 4 for c in self.classes)


class Arena:
    """Views of one shared-memory arena: ``inputs[slot]`` (capacity, H, W), ``outputs[slot]``
    (capacity, out_width), both float32. Slots are numbered across classes, smallest first."""

    def __init__(self, fd: int, layout: Layout) -> None:
        self.layout = layout
        self._mm = mmap.mmap(fd, layout.nbytes)
        self.inputs: list[np.ndarray] = []
        self.outputs: list[np.ndarray] = []
        side, offset = layout.image_size, 0
        for c in layout.classes:
            for _ in range(c.count):
                self.inputs.append(np.ndarray((c.capacity, side, side), np.float32, self._mm, offset))
                offset += c.capacity * side * side * 4
                self.outputs.append(np.ndarray((c.capacity, c.out_width), np.float32, self._mm, offset))
                offset += c.capacity * c.out_width * 4

    @classmethod
    def create(cls, layout: Layout) -> tuple[Arena, int]:
        """A new anonymous arena and its fd (to send to the worker; close it after sending)."""
        fd = os.memfd_create("vit-digits-arena", os.MFD_CLOEXEC)
        os.ftruncate(fd, layout.nbytes)
        return cls(fd, layout), fd

    def close(self) -> None:
        self.inputs.clear()
        self.outputs.clear()
        try:
            self._mm.close()
        except BufferError:  # a view is still alive somewhere: the mapping goes with the process
            pass


class SlotPool:
    """The worker's free slots per class; ``take(n)`` picks the smallest class that holds n images."""

    def __init__(self, layout: Layout) -> None:
        self._free: list[list[int]] = []
        self._caps: list[int] = []
        self._class_of: list[int] = []
        first = 0
        for i, c in enumerate(layout.classes):
            self._free.append(list(range(first + c.count - 1, first - 1, -1)))
            self._caps.append(c.capacity)
            self._class_of += [i] * c.count
            first += c.count
        self._order = sorted(range(len(self._caps)), key=lambda i: self._caps[i])

    def take(self, n: int) -> int | None:
        for i in self._order:
            if n <= self._caps[i] and self._free[i]:
                return self._free[i].pop()
        return None

    def give(self, slot: int) -> None:
        self._free[self._class_of[slot]].append(slot)

    @property
    def max_images(self) -> int:
        return max(self._caps)


def connect_socket(path: str, timeout_s: float) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout_s)
    sock.connect(path)
    return sock


def recv_welcome(sock: socket.socket) -> tuple[dict[str, Any], int, bytes]:
    """Blocking read of WELCOME and the arena fd sent with it; returns (welcome, fd, bytes after)."""
    data, fds, _, _ = socket.recv_fds(sock, 1 << 16, 1)
    if not fds:
        raise ConnectionError("the engine closed the connection without sending its arena")
    while len(data) < HEADER.size or len(data) < HEADER.size + HEADER.unpack_from(data)[0]:
        more = sock.recv(1 << 16)
        if not more:
            raise ConnectionError("the engine closed the connection during the handshake")
        data += more
    length, kind = HEADER.unpack_from(data)
    if kind != Kind.WELCOME:
        raise ConnectionError(f"expected WELCOME from the engine, got message kind {kind}")
    return json.loads(data[HEADER.size : HEADER.size + length]), fds[0], data[HEADER.size + length :]


class MessageProtocol(asyncio.Protocol):
    """asyncio end of a hop socket: frames in, ``on_message(kind, payload)``; writes are queued and
    flushed once per event-loop turn (many DONEs or SUBMITs become one send)."""

    def __init__(self, on_message: Callable[[int, bytes], None], on_lost: Callable[[], None]) -> None:
        self._on_message = on_message
        self._on_lost = on_lost
        self._reader = FrameReader()
        self._out: list[bytes] = []
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        for kind, payload in self._reader.feed(data):
            self._on_message(kind, payload)

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        self._on_lost()

    def send(self, data: bytes) -> None:
        if self.transport is None:
            return
        if not self._out:
            asyncio.get_running_loop().call_soon(self._flush)
        self._out.append(data)

    def _flush(self) -> None:
        if self.transport is not None and self._out:
            self.transport.write(b"".join(self._out))
        self._out.clear()

    def close(self) -> None:
        if self.transport is not None:
            self._flush()
            self.transport.close()


# ------------------------------------------------------------------------------ the worker's end


@dataclass(slots=True)
class Reply:
    outputs: np.ndarray  # (n, width) float32, copied out of the slot
    batch_size: int
    queue_s: float
    compute_s: float


class EngineGone(ConnectionError):
    """The connection to the engine dropped (engine restarting or shutting down)."""


class EngineRefused(Exception):
    def __init__(self, status: Status) -> None:
        super().__init__(status.name)
        self.status = status


@dataclass(slots=True, eq=False)
class _Pending:
    future: asyncio.Future
    slot: int
    n: int
    width: int


class EngineClient:
    """A front-end worker's connection to the engine: handshake, reconnects, submit and replies."""

    def __init__(self, socket_path: str, on_welcome: Callable[[], None] | None = None) -> None:
        self.socket_path = socket_path
        self.on_welcome = on_welcome or (lambda: None)  # a (new) catalogue arrived: self.welcome
        self.welcome: dict[str, Any] | None = None
        self.state: dict[str, Any] = {"ready": False, "reason": "not connected to the engine"}
        self.arena: Arena | None = None
        self.slots: SlotPool | None = None
        self._protocol: MessageProtocol | None = None
        self._pending: dict[int, _Pending] = {}
        self._next_id = 0
        self._task: asyncio.Task | None = None
        self.connected = asyncio.Event()
        self.state_known = asyncio.Event()  # the engine's first STATE on this connection has arrived
        self.closing = False

    @property
    def ready(self) -> bool:
        return self._protocol is not None and bool(self.state.get("ready"))

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="engine-client")

    async def close(self) -> None:
        self.closing = True
        if self._task is not None:
            self._task.cancel()
        if self._protocol is not None:
            self._protocol.close()

    async def _run(self) -> None:
        """Connect, and connect again whenever the engine goes away (it is restarted)."""
        loop = asyncio.get_running_loop()
        while not self.closing:
            try:
                sock, welcome, fd, rest = await asyncio.to_thread(self._handshake)
            except (OSError, ConnectionError, ValueError):
                await asyncio.sleep(0.1)
                continue
            layout = Layout.from_dict(welcome["layout"])
            self.arena, self.slots, self.welcome = Arena(fd, layout), SlotPool(layout), welcome
            os.close(fd)
            lost: asyncio.Future = loop.create_future()
            protocol = MessageProtocol(self._on_message, _setter(lost))
            sock.setblocking(False)
            await loop.connect_accepted_socket(_factory(protocol), sock)
            self._protocol = protocol
            if rest:
                protocol.data_received(rest)
            self.connected.set()
            self.on_welcome()
            await lost
            self._lost()

    def _handshake(self) -> tuple[socket.socket, dict[str, Any], int, bytes]:
        sock = connect_socket(self.socket_path, timeout_s=None)  # waits while the engine loads
        try:
            sock.sendall(frame_json(Kind.HELLO, {"pid": os.getpid()}))
            welcome, fd, rest = recv_welcome(sock)
        except BaseException:
            sock.close()
            raise
        return sock, welcome, fd, rest

    def _lost(self) -> None:
        self._protocol = None
        self.connected.clear()
        self.state_known.clear()
        self.state = {"ready": False, "reason": "the engine went away; reconnecting"}
        pending, self._pending = self._pending, {}
        for p in pending.values():
            if not p.future.done():
                p.future.set_exception(EngineGone("the engine went away"))
        if self.arena is not None:
            self.arena.close()
        self.arena = self.slots = None

    def _on_message(self, kind: int, payload: bytes) -> None:
        if kind == Kind.DONE:
            req_id, status, batch, queue_us, compute_us = DONE.unpack(payload)
            p = self._pending.pop(req_id, None)
            if p is None or self.arena is None or self.slots is None:
                return
            if status == Status.OK and not p.future.done():
                out = self.arena.outputs[p.slot][: p.n, : p.width].copy()
                p.future.set_result(Reply(out, batch, queue_us / 1e6, compute_us / 1e6))
            elif not p.future.done():
                p.future.set_exception(EngineRefused(Status(status)))
            self.slots.give(p.slot)
        elif kind == Kind.STATE:
            self.state = json.loads(payload)
            self.state_known.set()

    def submit(
        self, model: int, op: Op, images: list[np.ndarray], width: int, deadline: float
    ) -> tuple[int, asyncio.Future]:
        """Copy the images into a free slot and send SUBMIT; (request id, future of the Reply).
        Raises EngineGone when not connected, EngineRefused(OVERLOADED) when no slot is free."""
        if self._protocol is None or self.arena is None or self.slots is None:
            raise EngineGone("not connected to the engine")
        slot = self.slots.take(len(images))
        if slot is None:
            raise EngineRefused(Status.OVERLOADED)
        target = self.arena.inputs[slot]
        for i, image in enumerate(images):
            target[i] = image
        self._next_id = (self._next_id + 1) & 0xFFFFFFFF
        req_id = self._next_id
        future = asyncio.get_running_loop().create_future()
        self._pending[req_id] = _Pending(future, slot, len(images), width)
        self._protocol.send(submit_message(req_id, model, op, slot, len(images), deadline))
        return req_id, future

    def cancel(self, req_id: int) -> None:
        """The answer is no longer wanted: the engine drops it before compute if it still can."""
        if req_id in self._pending and self._protocol is not None:
            self._protocol.send(cancel_message(req_id))

    @property
    def max_images(self) -> int:
        return self.slots.max_images if self.slots else 0


def _setter(future: asyncio.Future) -> Callable[[], None]:
    return lambda: None if future.done() else future.set_result(None)


def _factory(protocol: MessageProtocol) -> Callable[[], MessageProtocol]:
    return lambda: protocol
