"""One cell of a baseline method: one task, one seed, the task's whole train-step budget.

- ``finetune``: every root component cloned and trained, a fresh head
  (:meth:`munet.agents.IndependentAgent.train_alone`), the preset's default hparams.
- ``linear``: the root shared frozen, only the fresh head trains (``linear_probe=True``).
- ``adapters``: the root frozen, residual bottleneck adapters and a fresh head train
  (munet.benchmark.frozen_root), with the agents' optimizer and default hparams.
- ``cnn``: munet.benchmark.cnn's small CNN from scratch, Adam, on the same batches.

Each keeps its best validation state (the agents' rule) and reads the test split once.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import torch

from munet.agents.cycle import stable_seed
from munet.benchmark.plan import CNN_LR, CNN_MIN_IMAGE_SIZE, Settings, TaskBudget
from munet.config import AgentConfig, apply_overrides, get_preset


def base_config(settings: Settings, seed: int) -> AgentConfig:
    """The agent's config of every method for ``seed``: its benchmark path shape, then
    ``--set``'s overrides."""
    return apply_overrides(get_preset(settings.preset), [*settings.agent_overrides, f"seed={seed}"])


def root_store(out: str | Path) -> str:
    """The store that holds only the root model the baselines start from (read-only)."""
    return str(Path(out) / "state" / "root")


def run_baseline(
    settings: Settings, out: str | Path, method: str, task: str, seed: int, budget: TaskBudget
) -> dict[str, Any]:
    """Runs one baseline cell; its result (not yet written).

    Raises:
        ValueError: an unknown method (the others are the agents' and tasks' errors).
    """
    from munet.agents import IndependentAgent, default_hparams
    from munet.training.threads import apply_thread_policy

    config = base_config(settings, seed)
    apply_thread_policy(config.num_threads)
    start, cpu_start = time.perf_counter(), time.process_time()
    agent = IndependentAgent(
        config,
        task,
        root_store(out),
        progress=False,
        echo=lambda _: None,
        root_kind=settings.root_kind,
    )
    hparams = {**default_hparams(config), "num_classes": agent.task.num_classes}
    if method in ("finetune", "linear"):
        path = agent.train_alone(hparams, budget.steps, linear_probe=method == "linear")
        result = {
            "quality": float(path.metrics["quality"]),
            "test_quality": float(path.metrics["test_quality"]),
            "params_added": int(path.metrics["params_trained"]),
            "params_total": int(path.num_params()),
            "flops": float(agent.path_flops(path)),
            "steps": int(path.metrics["steps"]),
        }
    elif method == "adapters":
        result = _adapters(agent, hparams, settings, seed, budget)
    elif method == "cnn":
        result = _cnn(agent, hparams, seed, budget)
    else:
        raise ValueError(f"unknown baseline method {method!r}")
    return {"method": method, "task": task, "seed": seed, **result,
            "seconds": time.perf_counter() - start,
            # Load-independent (one thread): what sizes a run on an idle machine.
            "cpu_seconds": time.process_time() - cpu_start}  # fmt: skip


def _adapters(
    agent: Any, hparams: dict[str, Any], settings: Settings, seed: int, budget: TaskBudget
) -> dict[str, Any]:
    from munet.agents.singlepath import model_arch
    from munet.benchmark.frozen_root import (
        count_parameters,
        frozen_root_adapters,
        trainable_parameters,
        vit_from_root,
    )
    from munet.benchmark.training import accuracy, train_with_validation
    from munet.training.optim import make_optimizer

    root = agent.root()
    arch = model_arch(agent.config, hparams)
    image_size = int(hparams["ds_image_size"])
    generator = torch.Generator().manual_seed(stable_seed(seed, agent.agent_id, "adapters"))
    torch.manual_seed(stable_seed(seed, agent.agent_id, "adapters", "torch"))
    root_tensors = {c.name: c.tensors for c in root.comps_only()}
    vit = vit_from_root(root_tensors, arch, image_size, generator)
    model = frozen_root_adapters(vit, settings.adapter_bottleneck)
    trainable = trainable_parameters(model)
    optimizer = make_optimizer(trainable, hparams, budget.interval, budget.num_validations)
    task = agent.task
    trained = train_with_validation(
        model,
        optimizer,
        task.train_batches(hparams, seed=stable_seed(seed, agent.agent_id, "adapters", "data")),
        task.validation_batches(hparams),
        budget.interval,
        budget.num_validations,
    )
    return {
        "quality": trained.quality,
        "test_quality": accuracy(model, task.test_batches(hparams)),
        "params_added": count_parameters(trainable),
        "params_adapters": count_parameters(model.adapters.parameters()),
        "params_total": count_parameters(model.parameters()),
        "flops": float(model.flops()),
        "steps": trained.steps,
        "diverged": trained.diverged,
    }


def _cnn(agent: Any, hparams: dict[str, Any], seed: int, budget: TaskBudget) -> dict[str, Any]:
    from munet.benchmark.cnn import small_cnn
    from munet.benchmark.frozen_root import count_parameters, forward_flops
    from munet.benchmark.training import accuracy, train_with_validation

    torch.manual_seed(stable_seed(seed, agent.task_name, "cnn"))
    task = agent.task
    # Four 2x2 poolings need at least 16 px: smaller inputs are read at 16.
    hparams = {**hparams, "ds_image_size": max(CNN_MIN_IMAGE_SIZE, int(hparams["ds_image_size"]))}
    model = small_cnn(task.num_classes)
    optimizer = torch.optim.Adam(model.parameters(), lr=CNN_LR)
    trained = train_with_validation(
        model,
        optimizer,
        task.train_batches(hparams, seed=stable_seed(seed, agent.task_name, "cnn", "data")),
        task.validation_batches(hparams),
        budget.interval,
        budget.num_validations,
    )
    params = count_parameters(model.parameters())
    return {
        "quality": trained.quality,
        "test_quality": accuracy(model, task.test_batches(hparams)),
        "params_added": params,
        "params_total": params,
        "flops": float(forward_flops(model, int(hparams["ds_image_size"]))),
        "steps": trained.steps,
        "diverged": trained.diverged,
    }
