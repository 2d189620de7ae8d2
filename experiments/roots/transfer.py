"""Transfer check of a pretrained root: a fresh model per task trained from it, vs random init
(pretrain_transfer.py's measurement; munet.agents.transfer before it moved to the lab).

For each task and each root (``None``: the preset's random-init root; a file: a safetensors or
.npz root loaded as ``root_model/checkpoint``), an :class:`IndependentAgent` trains one model
alone for ``steps`` steps with the preset's default hparams and reports its test accuracy.
Each root lives in its own temporary system state, so nothing else is touched.
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from munet.agents.independent import IndependentAgent, default_hparams
from munet.agents.root import create_root_model
from munet.config import AgentConfig


def measure_transfer(
    config: AgentConfig,
    roots: Mapping[str, str | Path | None],
    tasks: Sequence[str],
    steps: int,
    trials: int = 1,
) -> dict[str, dict[str, list[float]]]:
    """Test accuracies ``{task: {root label: [one per trial]}}`` after ``steps`` steps.

    Args:
        config: the singlepath preset (its model, hparams and seed).
        roots: label -> root file, or None for the random-init root.
        tasks: task names (e.g. ``synth/shape``).
        steps: train steps per model; a multiple of the task's validation interval.
        trials: trainings per task and root (different data order and head init).
    """
    results: dict[str, dict[str, list[float]]] = {task: {} for task in tasks}
    for label, file in roots.items():
        kind = "random_init" if file is None else "checkpoint"
        root_config = dataclasses.replace(config, checkpoint_path=str(file) if file else "")
        with tempfile.TemporaryDirectory(prefix="munet-transfer-") as state_dir:
            create_root_model(root_config, state_dir, kind)
            for task in tasks:
                agent = IndependentAgent(
                    root_config, task, state_dir, progress=False, echo=lambda _: None,
                    root_kind=kind,
                )  # fmt: skip
                scores = []
                for trial in range(trials):
                    path = agent.train_alone(default_hparams(root_config), steps, trial)
                    scores.append(round(float(path.metrics["test_quality"]), 4))
                results[task][label] = scores
    return results
