"""Where a bench module's run goes: bench/results/<module>.{json,md} (or --out)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .machine import machine_info


def write_run(
    args: argparse.Namespace, stem: str, title: str, argv: list[str] | None, table: str, **fields: object
) -> None:
    """One bench module's run into ``args.out``: ``<stem>.json`` (the machine, the arguments, ``fields``:
    the rows and what they were measured on) and ``<stem>.md`` (the command that made it, and its table)."""
    out: Path = args.out
    meta = {
        "machine": machine_info(args.device),
        "args": {k: str(v) for k, v in vars(args).items()},
        **fields,
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stem}.json").write_text(json.dumps(meta, indent=2) + "\n")
    command = f"python -m bench.{stem} " + " ".join(argv if argv is not None else sys.argv[1:])
    (out / f"{stem}.md").write_text(f"# {title}\n\n`{command.strip()}`\n\n{table}\n")
