"""bench.scaling's before/after: the single-process service at BASELINE_REV must still read the shipped
checkpoints (a card field added since then made it answer 404 for the ViT)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bench.scaling import BASELINE_REV, baseline_tree
from testkit.server import REPO_ROOT


def test_the_baseline_reads_every_shipped_checkpoint(shipped_store: Path) -> None:
    known = subprocess.run(["git", "cat-file", "-e", f"{BASELINE_REV}^{{commit}}"], cwd=REPO_ROOT,
                           capture_output=True)  # fmt: skip
    if known.returncode != 0:
        pytest.skip(f"{BASELINE_REV} is not in this clone's history (shallow clone?)")
    names = sorted(p.parent.name for p in shipped_store.glob("*/card.json"))
    with baseline_tree(BASELINE_REV, shipped_store) as (tree, old_store):
        code = (
            "import sys; from model_store import ModelStore; s = ModelStore(sys.argv[1]); "
            "print(' '.join(sorted(s.load(d.name)[1].name for d in s.model_dirs())))"
        )
        out = subprocess.run([sys.executable, "-c", code, str(old_store)], cwd=tree, capture_output=True,
                             text=True, env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"})  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == names
