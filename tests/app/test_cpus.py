"""Sizing by the CPUs the process may use: affinity mask and cgroup quota, not the host's core count."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.cpus import available_cpus, cgroup_cpu_quota
from app.settings import Settings

AFFINITY = len(os.sched_getaffinity(0))


def cgroup(tmp_path: Path, v2: str | None = None, v1: tuple[int, int] | None = None) -> Path:
    if v2 is not None:
        (tmp_path / "cpu.max").write_text(v2 + "\n")
    if v1 is not None:
        (tmp_path / "cpu").mkdir()
        (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text(f"{v1[0]}\n")
        (tmp_path / "cpu" / "cpu.cfs_period_us").write_text(f"{v1[1]}\n")
    return tmp_path


@pytest.mark.parametrize(
    ("v2", "v1", "quota"),
    [
        ("max 100000", None, None),
        ("150000 100000", None, 1.5),
        ("400000 100000", None, 4.0),
        (None, (-1, 100000), None),
        (None, (250000, 100000), 2.5),
        (None, None, None),
    ],
)
def test_cgroup_quota_v1_and_v2(tmp_path, v2, v1, quota):
    assert cgroup_cpu_quota(cgroup(tmp_path, v2, v1)) == quota


def test_the_quota_caps_the_affinity_mask_rounding_down(tmp_path):
    assert available_cpus(cgroup(tmp_path, "max 100000")) == AFFINITY
    (tmp_path / "q").mkdir()
    assert available_cpus(cgroup(tmp_path / "q", "50000 100000")) == 1  # half a core: still one
    (tmp_path / "big").mkdir()
    assert available_cpus(cgroup(tmp_path / "big", f"{(AFFINITY + 8) * 100000} 100000")) == AFFINITY


@pytest.mark.parametrize(
    ("workers", "device", "cpus", "gpu", "expected"),
    [
        ("auto", "auto", 16, True, 14),  # the engine keeps two cores for its loop and CUDA launches
        ("auto", "auto", 16, False, 8),  # on the CPU the engine computes: half each
        ("auto", "cpu", 16, True, 8),
        ("auto", "cuda", 2, False, 1),
        ("auto", "auto", 1, False, 1),
        (3, "auto", 16, True, 3),
    ],
)
def test_worker_count(workers, device, cpus, gpu, expected):
    assert Settings(workers=workers, device=device).worker_count(cpus, gpu) == expected


@pytest.mark.parametrize(
    ("lanes", "cpus", "threads", "expected"),
    [
        ("auto", 2, 1, 2),  # the 2-core default: two lanes of one thread each
        ("auto", 16, 8, 2),
        ("auto", 4, 3, 1),
        ("auto", 1, 1, 1),
        (3, 16, 8, 3),
    ],
)
def test_lane_count(lanes, cpus, threads, expected):
    assert Settings(cpu_lanes=lanes).lane_count(cpus, threads) == expected


@pytest.mark.parametrize(
    ("env", "says"),
    [
        (
            {"WORKERS": "0"},
            "WORKERS='0': Input should be greater than or equal to 1 or Input should be 'auto'",
        ),
        ({"CPU_LANES": "many"}, "CPU_LANES='many': Input should be a valid integer"),
        ({"MAX_BODY_BYTES_IN_FLIGHT": "2048"}, "settings: MAX_BODY_BYTES_IN_FLIGHT (2048) must be at least"),
    ],
)
def test_the_service_refuses_bad_settings_with_one_line_saying_which_and_why(env, says):
    """A misconfiguration ends `python -m app` at once with a line naming the variable, no traceback
    (WORKERS=0 used to start an engine and no worker at all: never ready, nothing said)."""
    run = subprocess.run(
        [sys.executable, "-m", "app"], env={**os.environ, **env, "PORT": "1"}, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert run.stderr.startswith("vit-digits: invalid settings: ") and says in run.stderr
