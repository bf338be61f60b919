"""The gRPC server of one front-end worker, on the worker's own event loop beside uvicorn.

Under ``python -m app`` every worker listens on GRPC_PORT with SO_REUSEPORT, so the kernel spreads
gRPC connections over the workers as the shared socket spreads HTTP ones (the supervisor first makes
sure nobody else holds the port). One process on its own (plain uvicorn) binds it
alone, so a second server cannot silently share the port.
"""

from __future__ import annotations

import logging

import grpc
from grpc_reflection.v1alpha import reflection

from ..runtime import Runtime
from . import messages as pb
from .service import InferenceService

log = logging.getLogger("app.grpc")


class GrpcServer:
    """The running server; ``stop(grace)`` lets calls in progress end, and open streams with them."""

    def __init__(self, server: grpc.aio.Server, service: InferenceService) -> None:
        self.server, self.service = server, service

    async def stop(self, grace: float) -> None:
        self.service.close()
        await self.server.stop(grace)


async def start(runtime: Runtime) -> GrpcServer:
    """Serve the runtime's models over gRPC on GRPC_PORT."""
    s = runtime.settings
    shared = s.engine_socket is not None  # a worker of python -m app, beside the others
    server = grpc.aio.server(
        options=[
            ("grpc.so_reuseport", 1 if shared else 0),
            ("grpc.max_receive_message_length", s.max_body_bytes),  # past it: RESOURCE_EXHAUSTED
            ("grpc.max_send_message_length", -1),
            # a connection that has not finished its HTTP/2 preface by then is closed, as HTTP's head
            ("grpc.server_handshake_timeout_ms", int(s.header_timeout_s * 1000)),
        ],
        maximum_concurrent_rpcs=s.max_connections,  # past it: RESOURCE_EXHAUSTED, as HTTP answers 503
    )
    service = InferenceService(runtime)
    server.add_generic_rpc_handlers(service.handlers())
    # Server reflection: grpcurl, grpcui and Postman list and call the methods without the .proto files.
    reflection.enable_server_reflection((pb.SERVICE, pb.HEALTH, reflection.SERVICE_NAME), server, pb.POOL)
    address = f"{_bracketed(s.host)}:{s.grpc_port}"
    try:
        server.add_insecure_port(address)
    except RuntimeError as exc:
        raise RuntimeError(f"gRPC cannot listen on {address} (GRPC_PORT=0 turns it off): {exc}") from None
    await server.start()
    log.info("gRPC (Open Inference Protocol v2) on %s", address)
    return GrpcServer(server, service)


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host else host
