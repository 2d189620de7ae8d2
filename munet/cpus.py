"""The CPU this process runs on: the cores it may use (its affinity, capped by a cgroup CPU
quota), and the processor's vendor and model name.

A leaf module (no torch, no munet imports) so that any layer can ask: training's thread policy
(munet.training.threads), the tasks' image decoding, the models' choice of matmul kernels
(munet.models.dense) and the benchmarks' reports.
"""

from __future__ import annotations

import functools
import math
import os
import platform
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


@functools.lru_cache(maxsize=1)
def cpu_info() -> dict[str, str]:
    """The first processor's fields of ``/proc/cpuinfo`` (``vendor_id``, ``model name``,
    ``flags``, ...), empty where the file does not exist (not Linux)."""
    fields: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as cpuinfo:
            for line in cpuinfo:
                if not line.strip():
                    break  # the end of the first processor's block
                key, _, value = line.partition(":")
                fields.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    return fields


def cpu_vendor() -> str:
    """The x86 vendor string (``GenuineIntel``, ``AuthenticAMD``, ...), or "" elsewhere."""
    return cpu_info().get("vendor_id", "")


def cpu_model() -> str:
    """The processor's model name (``/proc/cpuinfo``), else what the platform module says."""
    info = cpu_info()
    return info.get("model name") or info.get("Model") or platform.processor() or "unknown"
