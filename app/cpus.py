"""How many CPUs this process may really use, and whether a GPU is there, without importing torch.

``os.cpu_count()`` reports the host's cores. In a container or under ``taskset`` the process gets
fewer: the affinity mask limits which cores it runs on and a cgroup CPU quota (``docker run --cpus``,
Kubernetes ``resources.limits.cpu``) limits how much time it gets. Sizing WORKERS and torch threads by
the host would oversubscribe the quota and throttle every process.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")


def available_cpus(cgroup_root: Path = CGROUP_ROOT) -> int:
    """Cores in the affinity mask, capped by the cgroup quota (rounded down, at least 1)."""
    try:
        count = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        count = os.cpu_count() or 1
    quota = cgroup_cpu_quota(cgroup_root)
    if quota is not None:
        count = min(count, max(1, math.floor(quota)))
    return max(1, count)


def cgroup_cpu_quota(root: Path = CGROUP_ROOT) -> float | None:
    """CPUs' worth of time allowed by cgroup v2 ``cpu.max`` or v1 ``cpu.cfs_quota_us``; None: no limit."""
    try:
        quota, period = (root / "cpu.max").read_text().split()[:2]  # v2: "max 100000" or "150000 100000"
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        pass
    try:
        quota_us = int((root / "cpu" / "cpu.cfs_quota_us").read_text())
        period_us = int((root / "cpu" / "cpu.cfs_period_us").read_text())
        return None if quota_us <= 0 or period_us <= 0 else quota_us / period_us
    except (OSError, ValueError):
        return None


def nvidia_gpu_present() -> bool:
    """An NVIDIA GPU this process may use, from the driver's files (importing torch for this costs the
    supervisor seconds and hundreds of MB); the engine itself still asks torch."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() in ("", "-1"):
        return False
    gpus = Path("/proc/driver/nvidia/gpus")
    try:
        return any(gpus.iterdir())
    except OSError:
        return Path("/dev/nvidia0").exists()
