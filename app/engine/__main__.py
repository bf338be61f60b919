"""``python -m app.engine --socket PATH --workers N``: the engine process (started by app.supervisor)."""

from __future__ import annotations

import argparse
import asyncio
import signal

from ..hop import event_loop_factory
from ..logs import configure_logging
from ..settings import get_settings
from .server import Engine


async def serve(socket_path: str, workers: int) -> None:
    settings = get_settings()
    engine = Engine(settings, socket_path, workers)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await engine.start()
    await stop.wait()
    await engine.drain(settings.shutdown_grace_s)  # the workers have gone; answer what is left
    await engine.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--socket", required=True, help="Unix socket path to listen on")
    parser.add_argument("--workers", type=int, required=True, help="front-end workers to wait for")
    args = parser.parse_args()
    s = get_settings()
    configure_logging(s.log_level, s.log_format)
    with asyncio.Runner(loop_factory=event_loop_factory()) as runner:
        runner.run(serve(args.socket, args.workers))


if __name__ == "__main__":
    main()
