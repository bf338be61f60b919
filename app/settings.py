"""Service settings, read from environment variables (names as in docs/api-contract.md)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from model_store import DEFAULT_STORE_DIR

from .access import AccessLog
from .cpus import available_cpus, nvidia_gpu_present
from .logs import LogFormat


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="", case_sensitive=False, extra="ignore")

    host: str = Field("0.0.0.0", description="address to listen on")
    port: int = Field(8000, ge=1, le=65535, description="port to listen on")
    grpc_port: int = Field(
        8001, ge=0, le=65535, description="port for the Open Inference Protocol over gRPC; 0 = off"
    )

    # Front-end worker processes (HTTP, decoding, preprocessing). auto: every core the engine leaves
    # free (on a GPU host all but two; on CPU half the cores, the other half computes).
    workers: Annotated[int, Field(ge=1)] | Literal["auto"] = Field(
        "auto", description="front-end processes; auto = by cores"
    )
    # Set by the supervisor for its children: the engine's Unix socket. Unset: the worker runs its
    # own engine on a thread (plain ``uvicorn app.main:app``, tests).
    engine_socket: str | None = None
    slots_per_worker: int = Field(256, ge=1, description="single-image requests in flight per worker")
    large_slots_per_worker: int = Field(8, ge=1, description="batch requests in flight per worker")
    cuda_graphs: bool = Field(True, description="replay CUDA graphs for predictions on a GPU")
    header_timeout_s: float = Field(10.0, gt=0, description="deadline for a request's head to arrive")
    # nginx allows 4 x 8 KiB, Node 16 KiB: 64 KiB passes any real client's cookies and URLs
    max_head_bytes: int = Field(
        64 * 1024, ge=1024, description="a request's line and headers; past it 414 (URL) or 431"
    )
    body_idle_timeout_s: float = Field(
        10.0, gt=0, description="a body upload that makes no progress for this long is cut off"
    )
    max_connections: int = Field(
        2048, ge=1, description="open connections + requests per worker; more get 503"
    )

    model_store_dir: Path = Field(
        DEFAULT_STORE_DIR, description="directory with one checkpoint dir per model"
    )
    device: str = Field("auto", pattern=r"^(auto|cpu|cuda(:\d+)?)$", description="auto, cpu, cuda or cuda:N")
    amp: Literal["off", "bf16", "fp16"] = Field("off", description="autocast dtype on GPU (ignored on CPU)")
    torch_threads: int = Field(0, ge=0, description="intra-op threads on CPU; 0 = half the cores")
    # A small model's batch barely speeds up with more intra-op threads, and on a CPU the engine's one
    # forward pass at a time left a core idle when the model was the bottleneck. Lanes compute batches
    # side by side (each one thread calling torch with TORCH_THREADS intra-op threads); a model takes
    # a further lane only while a full batch waits (app.engine.batcher).
    cpu_lanes: Annotated[int, Field(ge=1)] | Literal["auto"] = Field(
        "auto", description="forward passes at once on the CPU; auto = cores / TORCH_THREADS (GPU: 1)"
    )
    jit: bool = Field(True, description="serve predictions from a TorchScript trace (eager on failure)")
    # CPU with one intra-op thread (TORCH_THREADS=1, the default on 2 cores): a batch of one image is
    # computed on the engine's event loop instead of a lane's thread, saving the hand-off (~0.25 ms).
    cpu_compute_on_loop: bool = Field(True, description="CPU: lone images computed on the engine's loop")

    max_batch_size: int = Field(32, ge=1, le=4096)
    max_wait_ms: float = Field(2.0, ge=0, le=1000)
    # True: an idle model answers a lone request at once (work that arrives while it computes forms the
    # next batch). False: after an idle spell, wait up to max_wait_ms for a batch to fill.
    adaptive_wait: bool = True
    max_queue_size: int = Field(256, ge=1)
    # Large enough for a full-size phone photo (12-50 MP JPEG/HEIC: 3-15 MB); the worker's bodies in
    # flight share MAX_BODY_BYTES_IN_FLIGHT, so a crowd of large uploads cannot exhaust its memory.
    max_body_bytes: int = Field(20 * 1024 * 1024, ge=1024, description="one request body; 413 past it")
    max_body_bytes_in_flight: int = Field(
        128 * 1024 * 1024, ge=1024, description="request bodies one worker holds at once; 503 past it"
    )
    max_batch_images: int = Field(64, ge=1, le=4096)  # schemas.MAX_LIST
    max_image_pixels: int = Field(25_000_000, ge=784)
    max_digits: int = Field(32, ge=1, le=256, description="marks (digits) one /read picture may hold")
    number_hints: bool = Field(
        True, description="a picture /predict calls not a digit is read as a number for `hint`"
    )
    request_timeout_s: float = Field(10.0, gt=0)
    shutdown_grace_s: float = Field(10.0, ge=0)
    warmup: bool = True

    cors_origins: Annotated[list[str], NoDecode] = Field(default_factory=list)
    log_level: str = "info"
    log_format: LogFormat = Field("text", description="text, or json: one JSON object per line")
    access_log: AccessLog = Field(
        "errors", description="requests written to the access log: errors (status >= 400), all or off"
    )

    @field_validator("cors_origins", mode="before")
    @classmethod
    def _split_origins(cls, value: object) -> object:
        if isinstance(value, str):
            return [o.strip() for o in value.split(",") if o.strip()]
        return value

    @field_validator("log_level")
    @classmethod
    def _upper_level(cls, value: str) -> str:
        return value.upper()

    @model_validator(mode="after")
    def _one_body_fits_the_budget(self) -> Settings:
        if self.max_body_bytes_in_flight < self.max_body_bytes:
            raise ValueError(
                f"MAX_BODY_BYTES_IN_FLIGHT ({self.max_body_bytes_in_flight}) must be at least "
                f"MAX_BODY_BYTES ({self.max_body_bytes}): a request of the allowed size could never be served"
            )
        return self

    def worker_count(self, cpu_count: int, gpu_present: bool) -> int:
        """WORKERS, or for "auto" the cores the engine leaves free: on a GPU it needs about two (its
        event loop and the device's launch thread); on the CPU it computes, so it gets half."""
        if self.workers != "auto":
            return self.workers
        on_gpu = self.device.startswith("cuda") or (self.device == "auto" and gpu_present)
        return max(1, cpu_count - 2) if on_gpu else max(1, cpu_count // 2)

    def lane_count(self, cpu_count: int, intra_op_threads: int) -> int:
        """CPU_LANES, or for "auto" as many as fill the cores with the lanes' intra-op threads."""
        if self.cpu_lanes != "auto":
            return self.cpu_lanes
        return max(1, cpu_count // intra_op_threads)

    def workers_here(self) -> int:
        """``worker_count`` on this host: the CPUs this process may use, and whether a GPU is present."""
        return self.worker_count(available_cpus(), nvidia_gpu_present())


@lru_cache
def get_settings() -> Settings:
    return Settings()


def settings_problems(exc: ValidationError) -> str:
    """One line per bad variable (``WORKERS='0': ...``) from a Settings validation error. A union field
    (an int or "auto") fails once per alternative: their messages are joined with "or"."""
    by_field: dict[str, list[str]] = {}
    for error in exc.errors(include_url=False):
        loc = error["loc"]
        where = f"{str(loc[0]).upper()}={error['input']!r}" if loc else "settings"
        by_field.setdefault(where, []).append(error["msg"].removeprefix("Value error, "))
    return "; ".join(f"{where}: {' or '.join(msgs)}" for where, msgs in by_field.items())
