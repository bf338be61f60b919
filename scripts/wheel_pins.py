"""The packages a set of installed distributions needs, with the versions this environment runs, as
``name==version`` on one line: what scripts/device_kit.sh and scripts/peers_kit.sh download as wheels for
the GPU machine. Run with the environment's own python:

    .venv/bin/python scripts/wheel_pins.py fastapi uvicorn
    .peers-venv/bin/python scripts/wheel_pins.py tritonclient --extras tritonclient=grpc,http --skip numpy

Optional needs the environment never installed, back-ports for Pythons before 3.10 and Windows-only
needs are left out; an extra's needs only where ``--extras`` asks for it.
"""

from __future__ import annotations

import argparse
import re
from importlib.metadata import PackageNotFoundError, distribution


def key(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(roots: list[str], extras: dict[str, set[str]], skip: set[str]) -> dict[str, str]:
    todo, seen = list(roots), {}
    while todo:
        try:
            dist = distribution(todo.pop())
        except PackageNotFoundError:  # an optional need this environment never installed
            continue
        name = key(dist.metadata["Name"])
        if name in seen:
            continue
        seen[name] = dist.version
        for req in dist.requires or []:
            extra = re.search(r"extra == [\"']([^\"']+)[\"']", req)
            if extra and extra.group(1) not in extras.get(name, set()):
                continue
            if 'python_version < "3.1' in req or "win32" in req or "Windows" in req:
                continue
            todo.append(re.split(r"[\s\[<>=!~;(]", req, maxsplit=1)[0])
    return {n: v for n, v in sorted(seen.items()) if n not in skip}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("roots", nargs="+", help="distributions whose needs to pin (pinned themselves too)")
    p.add_argument("--extras", nargs="*", default=[], metavar="NAME=EXTRA,...", help="extras to follow")
    p.add_argument("--skip", nargs="*", default=[], metavar="NAME", help="leave these out (not their needs)")
    a = p.parse_args()
    extras = {key(n): set(e.split(",")) for n, e in (x.split("=", 1) for x in a.extras)}
    print(" ".join(f"{n}=={v}" for n, v in pins(a.roots, extras, {key(s) for s in a.skip}).items()))


if __name__ == "__main__":
    main()
