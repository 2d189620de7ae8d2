"""Baselines the report compares each task against, read from results files (`--baseline`).

The report never makes a baseline up: it shows one only when a file gives it. Two forms are
read (JSON):

1. A result of ``benchmarks/system_vs_independent.py`` (``seed_N.json``): every method but
   ``system`` (``independent``, ``random_search``) is a baseline, with each task's
   ``test_quality``::

       {"seed": 0, "methods": {"independent": {"tasks": {"digits": {"test_quality": 0.93}}}}}

2. A plain mapping, method -> task -> test quality (e.g. written by hand from an
   ``IndependentAgent`` run)::

       {"independent": {"digits": 0.93, "synth/shape": 0.41}}

Several files (e.g. one per seed) are averaged per method and task, and the count is kept.
"""

from __future__ import annotations

import json
import math
import os
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

SYSTEM_METHOD = "system"  # The benchmark's own system: what the report shows, not a baseline.


@dataclass(frozen=True)
class Baseline:
    """One method's test quality on one task: the mean over `count` files, and their spread."""

    method: str
    mean: float
    count: int
    std: float


class BaselineError(ValueError):
    """A baseline file that cannot be read, naming the file and what was expected."""


def _quality(value: Any, where: str) -> float:
    if isinstance(value, Mapping):
        value = value.get("test_quality")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise BaselineError(f"{where}: test quality {value!r}; expected a finite number")
    return float(value)


def _read_one(path: str) -> dict[str, dict[str, float]]:
    """{method: {task: test quality}} of one file."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except FileNotFoundError:
        raise BaselineError(f"baseline file {path!r} does not exist") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise BaselineError(f"baseline file {path!r}: not readable JSON ({error})") from None
    if not isinstance(data, dict):
        raise BaselineError(f"baseline file {path!r}: expected a JSON object")
    if isinstance(data.get("methods"), dict):  # benchmarks/system_vs_independent.py
        methods = {
            name: (result or {}).get("tasks") or {}
            for name, result in data["methods"].items()
            if name != SYSTEM_METHOD and isinstance(result, dict)
        }
    else:
        methods = data
    out: dict[str, dict[str, float]] = {}
    for method, tasks in methods.items():
        if not isinstance(tasks, dict):
            raise BaselineError(
                f"baseline file {path!r}: method {method!r} maps to {type(tasks).__name__}; "
                "expected {task: test quality}"
            )
        out[str(method)] = {
            str(task): _quality(value, f"{path}: {method}/{task}") for task, value in tasks.items()
        }
    if not any(out.values()):
        raise BaselineError(
            f"baseline file {path!r} holds no task result; expected a "
            "system_vs_independent.py result or {method: {task: test quality}}"
        )
    return out


def load_baselines(paths: Iterable[str | os.PathLike]) -> dict[str, list[Baseline]]:
    """Baselines per task from result files (see the module docstring), methods by name.

    Raises:
        BaselineError: a file missing, unreadable, or of another shape (naming it).
    """
    values: dict[tuple[str, str], list[float]] = defaultdict(list)
    for path in paths:
        for method, tasks in _read_one(os.fspath(path)).items():
            for task, quality in tasks.items():
                values[(task, method)].append(quality)
    out: dict[str, list[Baseline]] = defaultdict(list)
    for (task, method), qualities in sorted(values.items()):
        mean = sum(qualities) / len(qualities)
        spread = math.sqrt(sum((q - mean) ** 2 for q in qualities) / len(qualities))
        out[task].append(Baseline(method, mean, len(qualities), spread))
    return dict(out)
