"""``python -m app``: run the service with the settings from the environment (HOST, PORT, ...)."""

from __future__ import annotations

import uvicorn

from .settings import get_settings


def main() -> None:
    s = get_settings()
    uvicorn.run("app.main:app", host=s.host, port=s.port, workers=1, timeout_graceful_shutdown=15)


if __name__ == "__main__":
    main()
