"""``python -m app.worker --fd N``: one front-end process, serving HTTP on an inherited socket."""

from __future__ import annotations

import argparse
import socket

import uvicorn

from .limits import guarded_http_protocol
from .logs import configure_logging
from .settings import get_settings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--fd", type=int, required=True, help="the listening socket, inherited")
    args = parser.parse_args()
    s = get_settings()
    configure_logging(s.log_level, s.log_format)  # uvicorn's lines too: it configures none (log_config)
    sock = socket.socket(fileno=args.fd)
    config = uvicorn.Config(
        "app.main:app", log_level=s.log_level.lower(), log_config=None, access_log=False, lifespan="on",
        timeout_graceful_shutdown=int(s.shutdown_grace_s) + 1,
        http=guarded_http_protocol(s.header_timeout_s, s.max_connections, s.max_head_bytes),
    )  # fmt: skip
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
