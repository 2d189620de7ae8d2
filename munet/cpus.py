"""The CPU cores this process may use (its affinity, capped by a cgroup CPU quota).

A leaf module (no torch, no munet imports) so that any layer can size its thread pools by it:
training's thread policy (munet.training.threads) and the tasks' image decoding.
"""

from __future__ import annotations

import math
import os
from pathlib import Path


def _cgroup_cpu_limit(root: Path = Path("/sys/fs/cgroup")) -> float | None:
    """CPUs granted by the cgroup CPU quota (v2 ``cpu.max`` or v1 ``cpu.cfs_*``), else None."""
    try:
        quota, _, period = (root / "cpu.max").read_text().partition(" ")
        if quota.strip() != "max":
            return int(quota) / int(period)
        return None
    except (OSError, ValueError):
        pass
    try:
        quota_us = int((root / "cpu" / "cpu.cfs_quota_us").read_text())
        period_us = int((root / "cpu" / "cpu.cfs_period_us").read_text())
        if quota_us > 0 and period_us > 0:
            return quota_us / period_us
    except (OSError, ValueError):
        pass
    return None


def usable_cpu_count(cgroup_root: Path = Path("/sys/fs/cgroup")) -> int:
    """The cores this process may run on: its CPU affinity, capped by a cgroup CPU quota.

    Args:
        cgroup_root: where the cgroup file system is mounted (a test points it elsewhere).

    Returns:
        At least 1.
    """
    try:
        count = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        count = os.cpu_count() or 1
    limit = _cgroup_cpu_limit(cgroup_root)
    if limit is not None:
        count = min(count, max(1, math.ceil(limit)))
    return max(1, count)
