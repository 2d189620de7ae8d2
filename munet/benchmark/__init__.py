"""``munet benchmark``: the comparison the µNet papers make, on a named suite of tasks.

Methods (munet.benchmark.plan.METHODS), each at the same train-step budget per task:
``system`` (µNet: singlepath agents over every task in sequence, then a multipath agent per
task), ``finetune``, ``linear`` (probe), ``adapters`` (Houlsby residual adapters on the frozen
root) and ``cnn`` (a small CNN from scratch). Results per (method, task, seed) cell, resumable;
per task and overall: test accuracy with 95% intervals over seeds, parameters added, FLOPs,
wall time, and ratios against fine-tuning. See docs/benchmark.md.
"""

from munet.benchmark.plan import METHODS, BenchmarkError, Settings, make_settings
from munet.benchmark.runner import BenchmarkRun, run_benchmark

__all__ = [
    "METHODS",
    "BenchmarkError",
    "BenchmarkRun",
    "Settings",
    "make_settings",
    "run_benchmark",
]
