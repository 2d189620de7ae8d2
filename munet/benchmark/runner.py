"""Runs a benchmark: the cells still missing, in ``workers`` processes, one progress line per
finished cell with the time left, then the summary files and the ``ratio:`` lines.

Scheduling: a seed's system cells form one job (its agents run in sequence on one store), and
different seeds' systems run in parallel; they start first, being the longest chains. Every
baseline cell is a job of its own. Each worker runs PyTorch on one thread.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from munet.benchmark.cells import cell_file, claim_out, done_cells, read_cell, write_json_atomic
from munet.benchmark.plan import Settings, TaskBudget, task_budget
from munet.progress import Pace
from munet.workers import WorkerPool

Key = tuple[str, str, int]


@dataclass
class BenchmarkRun:
    """What :func:`run_benchmark` did: the summary, the files, the cells this call ran."""

    summary: dict[str, Any]
    files: dict[str, Path]
    ran: int
    skipped: int
    seconds: float


def plan_budgets(settings: Settings, out: str | Path) -> dict[str, TaskBudget]:
    """Creates the baselines' root store (once) and sizes each task's budget."""
    from munet.agents import IndependentAgent
    from munet.agents.root import create_root_model
    from munet.benchmark.baselines import base_config, root_store

    config = base_config(settings, settings.seeds[0])
    create_root_model(config, root_store(out), settings.root_kind)
    budgets = {}
    for task in settings.tasks:
        agent = IndependentAgent(
            config, task, root_store(out), progress=False, echo=lambda _: None,
            root_kind=settings.root_kind,
        )  # fmt: skip
        budget = task_budget(
            task,
            agent.steps_between_validations,
            config.num_validations_per_path_training,
            settings.steps,
            settings.system_budget,
        )
        sizes = {
            "train": agent.task.num_train_examples,
            "validation": agent.task.num_validation_examples,
            "test": agent.task.num_test_examples,
        }
        budgets[task] = TaskBudget(**{**budget.__dict__, "num_classes": agent.task.num_classes,
                                      "sizes": sizes})  # fmt: skip
    return budgets


def budget_dict(budget: TaskBudget) -> dict[str, Any]:
    return {**budget.__dict__, "steps": budget.steps, "num_validations": budget.num_validations,
            "system_paths": budget.system_paths}  # fmt: skip


def _system_job(
    settings: Settings,
    out: str,
    seed: int,
    budgets: dict,
    on_cell: Callable[[dict[str, Any]], None] | None = None,
) -> int:
    from munet.benchmark.system import run_system_seed

    return len(run_system_seed(settings, out, seed, budgets, on_cell))


def _baseline_job(
    settings: Settings, out: str, method: str, task: str, seed: int, budget: TaskBudget
) -> int:
    from munet.benchmark.baselines import run_baseline

    if read_cell(cell_file(out, method, task, seed)) is not None:
        return 0  # Written since the run was planned (another run on the same --out).
    cell = run_baseline(settings, out, method, task, seed, budget)
    write_json_atomic(cell_file(out, method, task, seed), cell)
    return 1


def run_benchmark(
    settings: Settings,
    out: str | Path,
    workers: int = 1,
    echo: Callable[[str], None] = print,
) -> BenchmarkRun:
    """Runs (or resumes) the benchmark in ``out`` and writes its summary there.

    Args:
        settings: what to run (munet.benchmark.plan.make_settings).
        out: the results folder (new, or one of the same settings to resume).
        workers: processes running cells at once (1: in this process).
        echo: where the progress and summary lines go.

    Raises:
        BenchmarkError: ``out`` holds another configuration's results, or ``workers`` < 1.
    """
    from munet.benchmark.plan import BenchmarkError
    from munet.benchmark.report import markdown, write_report
    from munet.benchmark.summary import summarize

    if workers < 1:
        raise BenchmarkError(f"--workers {workers!r}: expected at least 1")
    start = time.perf_counter()
    out = str(out)
    claim_out(out, settings)
    budgets = plan_budgets(settings, out)
    done = done_cells(out, settings)
    todo = [
        (method, task, seed)
        for method in settings.methods
        for seed in settings.seeds
        for task in settings.tasks
        if (method, task, seed) not in done
    ]
    steps = sorted({b.steps for b in budgets.values()})
    echo(
        f"benchmark{' (quick)' if settings.quick else ''}: {', '.join(settings.methods)} on "
        f"{len(settings.tasks)} tasks x {len(settings.seeds)} seeds, "
        f"{'/'.join(map(str, steps))} train steps per task; {len(done)} cells done, "
        f"{len(todo)} to run in {workers} worker(s); results in {out}"
    )
    pace = Pace(len(todo))
    remaining = set(todo)

    def report_new() -> None:
        for key in sorted(remaining):
            cell = read_cell(cell_file(out, *key))
            if cell is not None:
                remaining.discard(key)
                pace.advance()
                echo(_cell_line(cell, pace))

    jobs = _jobs(settings, out, todo, budgets)
    if workers == 1:
        for function, args in jobs:
            if function is _system_job:  # Its cells are reported as they are written.
                function(*args, on_cell=lambda _cell: report_new())
            else:
                function(*args)
            report_new()
    else:
        # One torch thread per worker: the cells are many and small (munet.workers: a failed
        # cell lets the running ones finish; an interrupt stops them at once).
        with WorkerPool(min(workers, len(jobs)) or 1, threads=1) as pool:
            pool.run(jobs, on_tick=report_new)
    report_new()
    cells = done_cells(out, settings)
    missing = [k for k in todo if k not in cells]
    if missing:
        raise RuntimeError(f"cells without a result after the run: {missing[:5]}")
    summary = summarize(settings, cells, {t: budget_dict(b) for t, b in budgets.items()})
    summary["wall_seconds_this_run"] = time.perf_counter() - start
    files = write_report(summary, list(cells.values()), out)
    for line in markdown(summary).splitlines():  # The table, then the `ratio:` lines.
        echo(line)
    echo(f"results: {files['md']}, {files['json']}, {files['png']}")
    return BenchmarkRun(summary, files, len(todo), len(done), time.perf_counter() - start)


def _jobs(
    settings: Settings, out: str, todo: list[Key], budgets: dict[str, TaskBudget]
) -> list[tuple[Callable, tuple]]:
    """System seeds first (the longest chains), then the baseline cells."""
    jobs: list[tuple[Callable, tuple]] = []
    for seed in sorted({s for m, _, s in todo if m == "system"}):
        jobs.append((_system_job, (settings, out, seed, budgets)))
    for method, task, seed in todo:
        if method != "system":
            jobs.append((_baseline_job, (settings, out, method, task, seed, budgets[task])))
    return jobs


def _cell_line(cell: dict[str, Any], pace: Pace) -> str:
    model = f", {cell['model']}" if "model" in cell else ""
    return (
        f"[{pace.done}/{pace.total}] {cell['method']} {cell['task']} seed {cell['seed']}: "
        f"test {cell['test_quality']:.3f} (validation {cell['quality']:.3f}{model}), "
        f"{cell['params_added']:,} params added, {cell.get('seconds', float('nan')):.0f}s; "
        f"{pace.eta_text()}"
    )
