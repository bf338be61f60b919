"""How every process of the service logs: one format for the supervisor, the engine and the workers
(uvicorn's own lines included), as text for a terminal or as JSON lines for a log pipeline
(``LOG_FORMAT``)."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Literal

TEXT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# What every LogRecord has; anything else on a record came from ``extra=`` and goes into the JSON line
# (but uvicorn's ``color_message``: its message again, with terminal colours).
_STANDARD = frozenset(logging.makeLogRecord({}).__dict__) | {
    "message", "asctime", "taskName", "color_message",
}  # fmt: skip

LogFormat = Literal["text", "json"]


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time (UTC, ISO 8601), level, logger, message, pid, the fields the record
    was given with ``extra`` (an access line's method, path, status, ...) and the traceback, if any."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "pid": record.process,
        }
        line.update((k, v) for k, v in record.__dict__.items() if k not in _STANDARD)
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


def handler(fmt: LogFormat) -> logging.Handler:
    """A stderr handler writing ``fmt``."""
    out = logging.StreamHandler()
    out.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(TEXT))
    return out


def configure_logging(level: str, fmt: LogFormat) -> None:
    """The process's root logger writes ``fmt`` to stderr at ``level``; uvicorn's loggers, left
    unconfigured (``log_config=None``), reach it too."""
    root = logging.getLogger()
    root.handlers[:] = [handler(fmt)]
    root.setLevel(level)
