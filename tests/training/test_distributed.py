"""torchrun with two gloo CPU processes trains a few steps and writes exactly one checkpoint; the ranks' data
shards are disjoint."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from testkit.ports import free_port
from training.engine import shard_order

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(180)
def test_torchrun_two_cpu_processes(data_root: Path, tmp_path: Path) -> None:
    store, run = tmp_path / "store", tmp_path / "run"
    cmd = [
        sys.executable, "-m", "torch.distributed.run", "--nnodes=1", "--nproc_per_node=2",
        "--rdzv-backend=c10d", f"--rdzv-endpoint=127.0.0.1:{free_port()}", "--max-restarts=0",
        "-m", "training", "train", "--model", "vit-mnist-tiny", "--set", "depth=1", "--device", "cpu",
        "--data-root", str(data_root), "--store-dir", str(store), "--run-dir", str(run),
        "--limit-train", "512", "--limit-test", "100", "--batch-size", "32", "--max-steps", "3",
        "--epochs", "1", "--ema-decay", "0", "--no-plots", "--no-progress",
    ]  # fmt: skip
    python_path = os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": python_path, "OMP_NUM_THREADS": "1", "GLOO_SOCKET_IFNAME": "lo"}
    for var in ("WORLD_SIZE", "RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID"):
        env.pop(var, None)
    proc = subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=150)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-4000:]

    # Each rank takes a strided half of the 512 images: 8 steps of 32, capped at 3.
    assert "3 steps/epoch" in output
    assert output.count("epoch   1/1") == 1  # only rank 0 logs
    dirs = sorted(p.name for p in store.iterdir())
    assert dirs == ["vit-mnist-tiny"]  # one checkpoint, no leftover temp dirs from rank 1

    from model_store import ModelStore

    _, card = ModelStore(store).load("vit-mnist-tiny")
    assert card.training["world_size"] == 2
    command = card.training["command"]
    assert command.startswith("torchrun --nproc_per_node=2 -m training train --model vit-mnist-tiny"), command
    assert card.training["args"]["max_steps"] == 3
    assert card.dataset["test_images"] == 100
    rows = (run / "metrics.csv").read_text().splitlines()
    assert len(rows) == 2 and rows[1].startswith("1,")


def test_every_rank_trains_on_its_own_disjoint_shard() -> None:
    shards = [shard_order(103, seed=1000, epoch=2, rank=r, world_size=4) for r in range(4)]
    together = torch.cat(shards)
    assert sorted(together.tolist()) == list(range(103))  # every sample once per epoch, across ranks
    assert not torch.equal(shard_order(103, 1000, 3, 0, 4), shards[0])  # a new order every epoch
