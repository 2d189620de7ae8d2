"""The µNet system of one seed: singlepath agents (``--agent``, munet.benchmark.plan.PRESET by
default) over every suite task in sequence on one store (from the preset's built-in pretrained
root), then one multipath agent (the preset's ``Multi`` one) per task; one cell per task.

Each task's agents spend the task's budget (munet.benchmark.plan): one singlepath cycle of
``N - M`` paths and one multipath cycle of ``M`` paths, ``P`` train steps per path. The task's
model is the better of its singlepath and multipath published paths by validation accuracy
(singlepath on ties); both are recorded, for the multipath-vs-singlepath comparison.

Resumable: agents resume from their committed states by themselves (an agent that finished
its cycle does nothing), and a task whose cell exists is skipped.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from munet.benchmark.baselines import base_config
from munet.benchmark.cells import cell_file, read_cell, write_json_atomic
from munet.benchmark.plan import AGENT_OVERRIDES, Settings, TaskBudget
from munet.config import apply_overrides, get_preset


def system_store(out: str | Path, seed: int) -> str:
    return str(Path(out) / "state" / f"seed_{seed}")


def _stage_file(out: str | Path, seed: int, task: str) -> Path:
    """Wall time of a task's singlepath stage (its cell is written after the multipath one)."""
    return Path(out) / "state" / "stages" / f"seed_{seed}" / (task.replace("/", "~") + ".json")


def run_system_seed(
    settings: Settings,
    out: str | Path,
    seed: int,
    budgets: dict[str, TaskBudget],
    on_cell: Callable[[dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """Grows (or resumes) the seed's system and writes a cell per task whose cell is missing.

    Args:
        settings: the benchmark.
        out: the results folder.
        seed: the seed (the agents' config seed).
        budgets: each task's budget.
        on_cell: called with each cell written.

    Returns:
        The cells written by this call.
    """
    from munet.agents.demo import multipath_overrides
    from munet.agents.multipath import MultipathAgent
    from munet.agents.root import create_root_model
    from munet.agents.singlepath import SinglepathAgent
    from munet.training.threads import apply_thread_policy

    todo = [t for t in settings.tasks if read_cell(cell_file(out, "system", t, seed)) is None]
    if not todo:
        return []
    config = base_config(settings, seed)
    apply_thread_policy(config.num_threads)
    store = system_store(out, seed)
    create_root_model(config, store, settings.root_kind)
    quiet = {"progress": False, "quiet": True, "echo": lambda _line: None}
    singlepath: dict[str, Any] = {}
    for task in settings.tasks:  # In sequence: each task's agent sees the earlier ones' paths.
        sp_config = apply_overrides(
            config, [f"num_samples_per_cycle={budgets[task].singlepath_paths}"]
        )
        singlepath[task] = SinglepathAgent(sp_config, task, store, **quiet)
        stage = _stage_file(out, seed, task)
        if not stage.is_file():
            start, cpu_start = time.perf_counter(), time.process_time()
            singlepath[task].run(1)
            write_json_atomic(
                stage,
                {
                    "seconds": time.perf_counter() - start,
                    "cpu_seconds": time.process_time() - cpu_start,
                },
            )
    written = []
    for task in todo:
        start, cpu_start = time.perf_counter(), time.process_time()
        mp_config = apply_overrides(
            get_preset(settings.multipath_preset),
            [
                *multipath_overrides(_multipath_shape(settings)),
                f"seed={seed}",
                f"num_samples_per_cycle={budgets[task].multipath_paths}",
            ],
        )
        multipath = MultipathAgent(mp_config, task, store, **quiet)
        multipath.run(1)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu_start
        stage = _read_stage(_stage_file(out, seed, task))
        cell = system_cell(singlepath[task], multipath, budgets[task], seed)
        # The singlepath stage's time as measured when it ran (NaN if lost in a crash).
        cell["seconds"] = stage["seconds"] + seconds
        cell["cpu_seconds"] = stage["cpu_seconds"] + cpu
        cell["seconds_singlepath"], cell["seconds_multipath"] = stage["seconds"], seconds
        write_json_atomic(cell_file(out, "system", task, seed), cell)
        written.append(cell)
        if on_cell is not None:
            on_cell(cell)
    return written


def _multipath_shape(settings: Settings) -> list[str]:
    """The agent's path shape and ``--set``'s overrides, less the singlepath scorer's bases
    (a multipath agent's score is its quality)."""
    shape = [o for o in AGENT_OVERRIDES[settings.preset] if not o.startswith("scorer.")]
    return [*shape, *settings.overrides, *settings.root_overrides]


def _read_stage(file: Path) -> dict[str, float]:
    import json

    try:
        data = json.loads(file.read_text())
        return {key: float(data[key]) for key in ("seconds", "cpu_seconds")}
    except (OSError, ValueError, KeyError, TypeError):
        return {"seconds": float("nan"), "cpu_seconds": float("nan")}


def system_cell(singlepath: Any, multipath: Any, budget: TaskBudget, seed: int) -> dict[str, Any]:
    """The task's result from its agents' published paths.

    Parameters added for the task: the components its paths hold that its own agents (the
    task's singlepath and multipath agents) own, each once; components shared frozen from the
    root or other tasks are not added. ``accounted_params`` is the scorer's count (each
    component divided by the agents holding it).
    """
    store = singlepath.store
    preset = singlepath.config.name
    owners = {singlepath.agent_id, multipath.agent_id}
    single = store.load(singlepath.agent_id, [preset]).population.get_best_path()
    multi = store.load(multipath.agent_id, [preset]).population.get_best_path()
    if single is None or multi is None:
        raise RuntimeError(
            f"system seed {seed}, task {singlepath.task_name}: an agent published no path"
        )

    def added(path: Any) -> int:
        return sum(c.num_params for c in path.leaf_components() if c.agent_id in owners)

    def validation(path: Any) -> float:
        return float(path.metrics.get("quality", float("nan")))

    chosen, agent = (multi, multipath) if validation(multi) > validation(single) else (
        single, singlepath)  # fmt: skip
    sampled = sum(len(store.read_path_history(a)) for a in owners)
    return {
        "method": "system",
        "task": singlepath.task_name,
        "seed": seed,
        "model": "multipath" if chosen is multi else "singlepath",
        "path": chosen.full_id,
        "quality": validation(chosen),
        "test_quality": float(chosen.metrics["test_quality"]),
        "params_added": added(chosen),
        "accounted_params": float(chosen.accounted_params()),
        "params_total": int(chosen.num_params()),
        "flops": float(agent.path_flops(chosen)),
        "steps": sampled * budget.path_steps,
        "reuses": sorted({c.agent_id for c in chosen.leaf_components()} - owners),
        "singlepath": {
            "path": single.full_id,
            "quality": validation(single),
            "test_quality": float(single.metrics["test_quality"]),
            "params_added": added(single),
        },
        "multipath": {
            "path": multi.full_id,
            "quality": validation(multi),
            "test_quality": float(multi.metrics["test_quality"]),
            "params_added": added(multi),
        },
    }
