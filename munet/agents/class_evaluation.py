"""Per-class test evaluation of published paths: the confusion matrix, per-class accuracy and
top-5 of a path on its task's test split, for `munet test`, the export's model card and the
report's heat maps.

The model evaluated is the one `munet export` writes (`published.build_path_module`), and the
pass is the seed's `run_test_eval` (one exact pass over the test split), so the accuracy here
is the immutability test's number.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from munet.agents.published import (
    PublishedPath,
    PublishedSystem,
    build_path_module,
    task_of,
)
from munet.models.class_metrics import ClassMetrics, ConfusionCounter
from munet.system import SystemStore


def evaluate_classes(
    module: torch.nn.Module,
    task,
    hparams: Mapping[str, Any],
    device: torch.device,
    class_names: list[str] | None = None,
) -> ClassMetrics:
    """One exact pass of the task's test split: the confusion matrix (and top-5 hits where
    there are more than 5 classes). Its `accuracy` is the seed's `run_test_eval` number
    (batches weighted by their size).

    Raises:
        ValueError: the task has no test examples.
    """
    module = module.to(device)
    counter: ConfusionCounter | None = None
    with torch.inference_mode():
        for batch in task.test_batches(hparams):
            batch = batch.to(device)
            logits = module(batch.images)
            if counter is None:
                names = (
                    class_names if class_names and len(class_names) == logits.shape[-1] else None
                )
                counter = ConfusionCounter(int(logits.shape[-1]), names)
            counter.update(logits, batch.labels)
    if counter is None or counter.result().num_examples == 0:
        raise ValueError(f"task {task.name!r} has no test examples")
    return counter.result()


def test_class_metrics(published: PublishedPath, system: PublishedSystem, task, class_names=None):
    """Per-class accuracy, confusion matrix and top-5 of a published path on its task's test
    split (the exported model, built in memory; one pass on the CPU).

    Returns:
        `munet.models.class_metrics.ClassMetrics`.
    """
    module = build_path_module(published, system)
    return evaluate_classes(
        module, task, published.path.hparams, torch.device("cpu"), class_names=class_names
    )


def best_paths_class_metrics(
    store: SystemStore, data_dir: str | None = None, cache: dict | None = None
) -> tuple[dict[str, tuple[str, Any]], list[str]]:
    """Per-class test metrics of every task agent's best published path (what the report's
    heat maps show).

    Args:
        store: the system.
        data_dir: TFDS data_dir / Hugging Face cache.
        cache: {(path full id, state): ClassMetrics}, kept between calls (`munet report
            --watch` evaluates a path once).

    Returns:
        ({agent id: (path full id, ClassMetrics)}, problems: one line per agent whose data
        could not be read here).
    """
    system = PublishedSystem.load(store)
    cache = {} if cache is None else cache
    out: dict[str, tuple[str, Any]] = {}
    problems: list[str] = []
    for published in system.select():
        path = published.path
        key = (path.full_id, published.state)
        if key not in cache:
            try:
                task = task_of(published, data_dir)
                names = list(task.class_names) if task.class_names else None
                cache[key] = test_class_metrics(published, system, task, names)
            except (ValueError, ImportError, NotImplementedError, KeyError) as error:
                why = (
                    f"its agent's stored config has no {error}"
                    if isinstance(error, KeyError)
                    else str(error)
                )
                problems.append(f"{path.full_id}: per-class test accuracy not evaluated: {why}")
                continue
        out[path.agent_id] = (path.full_id, cache[key])
    return out, problems
