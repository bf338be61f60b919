"""Where a bench module's run goes: bench/results/<module>.{json,md} (or --out)."""

from __future__ import annotations

import json
import sys
from pathlib import Path


def write_run(out: Path, stem: str, title: str, argv: list[str] | None, table: str, meta: dict) -> None:
    """One bench module's run: ``<stem>.json`` (the machine, the arguments, the rows) and ``<stem>.md`` (the
    command that made it, and its table)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stem}.json").write_text(json.dumps(meta, indent=2) + "\n")
    command = f"python -m bench.{stem} " + " ".join(argv if argv is not None else sys.argv[1:])
    (out / f"{stem}.md").write_text(f"# {title}\n\n`{command.strip()}`\n\n{table}\n")
