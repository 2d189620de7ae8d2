"""`munet test`: re-evaluate the best published paths on their test split (the seed's
immutability test) and compare with the test quality they were published with.

The model is the one `munet export` writes (`published.build_path_module`), so a passing test
also says the export reproduces the path.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from munet.agents.class_evaluation import evaluate_classes
from munet.agents.published import PublishedSystem, build_path_module, task_of
from munet.models.class_metrics import ClassMetrics
from munet.system import SystemStore

log = logging.getLogger("munet.agents")

IMMUTABILITY_RTOL = 0.001  # the seed's IMMUTABILITY_RELATIVE_TOLLERANCE


@dataclass
class TestResult:
    """One published path re-evaluated on its test split.

    Attributes:
        agent_id, path_id, task_name: the path.
        recorded: the test quality it was published with (None: never tested).
        measured: the accuracy measured now (None: could not evaluate).
        status: `ok`, `MISMATCH`, `untested` or `error: ...`.
        num_examples: test examples evaluated.
        classes: per-class accuracy, confusion matrix and top-5 (None: not evaluated).
    """

    agent_id: str
    path_id: int
    task_name: str
    recorded: float | None
    measured: float | None
    status: str
    num_examples: int = 0
    classes: ClassMetrics | None = None

    @property
    def delta(self) -> float | None:
        if self.recorded is None or self.measured is None:
            return None
        return self.measured - self.recorded


def evaluate_on_test(
    module: torch.nn.Module, task, hparams: Mapping[str, Any], device: torch.device
) -> tuple[float, int]:
    """Accuracy of a module over one exact pass of the task's test split (batches weighted by
    their size, as the seed's `run_test_eval`). Returns (accuracy, examples)."""
    classes = evaluate_classes(module, task, hparams, device)
    return classes.accuracy, classes.num_examples


def run_immutability_test(
    store: SystemStore,
    task_name: str | None = None,
    agent_classes: Iterable[str] | None = None,
    rtol: float = IMMUTABILITY_RTOL,
    device: str | torch.device = "cpu",
    data_dir: str | None = None,
) -> list[TestResult]:
    """Re-evaluates every agent's best published path on its test split and compares the
    accuracy with the recorded test quality (the seed's immutability test: `np.isclose`
    with relative tolerance `rtol`).

    A path whose data cannot be read here gets status `error: ...` (the others go on).
    """
    system = PublishedSystem.load(store)
    results = []
    for published in system.select(task_name, agent_classes):
        path = published.path
        known = path.metrics.get("test_quality")
        recorded = None if known is None or math.isnan(float(known)) else float(known)
        result = TestResult(path.agent_id, path.id, path.task_name, recorded, None, "untested")
        try:
            task = task_of(published, data_dir)
            module = build_path_module(published, system)
            names = list(task.class_names) if task.class_names else None
            classes = evaluate_classes(
                module, task, path.hparams, torch.device(device), class_names=names
            )
        except (ValueError, ImportError, NotImplementedError, KeyError) as error:
            result.status = f"error: {error}"
            results.append(result)
            continue
        measured = classes.accuracy
        result.measured, result.num_examples, result.classes = (
            measured,
            classes.num_examples,
            classes,
        )
        if recorded is not None:
            same = bool(np.isclose(recorded, measured, rtol=rtol))
            result.status = "ok" if same else "MISMATCH"
        log.info("%s: test quality %s -> %.6f", path.full_id, recorded, measured)
        results.append(result)
    return results
