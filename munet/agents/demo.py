"""``munet demo``: a small multitask system grown from scratch on a laptop CPU.

A random-init root model of the ``VitCpu`` preset, then one singlepath agent per task (the
embedded ``digits`` and three generated ``synth/*`` tasks) run in rounds, one cycle of every
agent per round, so each cycle sees the paths the other agents published before it. Agents of a
round run in parallel worker processes (one per CPU core, one thread each); the first task's
results do not depend on the number of workers (it starts first in every round and sees the
same published paths). It ends with the leaderboard, the components each task's best path took
from other agents, and where the state lives. Rerunning resumes (a killed demo loses at most a
generation per agent) and finishes.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from munet.agents.root import create_root_model
from munet.agents.runner import leaderboard_rows, resolve_config
from munet.agents.singlepath import RunReport, SinglepathAgent
from munet.config import (
    DEFAULT_DEMO_CYCLES,
    DEFAULT_DEMO_STATE_DIR,
    DEMO_AGENT,
    DEMO_TASKS,
    AgentConfig,
)
from munet.report.html import write_report
from munet.report.leaderboard import format_leaderboard
from munet.system import SystemStore


def cross_task_reuse(store: SystemStore, agent_id: str) -> dict[str, int]:
    """How many of the agent's sampled paths (its whole history) took components shared or
    cloned from each other non-root agent; the count of sampled paths is under key ``""``."""
    counts: dict[str, int] = {"": 0}
    for row in store.read_path_history(agent_id):
        counts[""] += 1
        sources = set()
        for group in (row.get("metrics.reuse") or "").split("; "):
            verb, _, rest = group.partition(" from ")
            source = rest.partition(":")[0]
            if verb in ("shared", "cloned") and source and source != agent_id:
                if "~root_model~" not in source:
                    sources.add(source)
        for source in sources:
            counts[source] = counts.get(source, 0) + 1
    return counts


@dataclass
class DemoResult:
    """What the demo produced: the agents' last reports, leaderboard rows and timing."""

    reports: dict[str, RunReport]
    rows: list[dict]
    seconds: float
    state_dir: str


def default_workers(num_tasks: int) -> int:
    """One worker per CPU core available to this process, at most one per task."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # Not on Linux.
        cores = os.cpu_count() or 1
    return max(1, min(num_tasks, cores))


def _die_with_parent() -> None:
    """Pool initializer: a worker is killed with the demo (Linux), so a killed demo leaves no
    agent running that would hold its lock when the demo is rerun."""
    try:
        import ctypes
        import signal

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _run_agent_cycle(job: tuple[str, str, dict[str, Any], int, int]) -> dict[str, Any]:
    """Worker: run one agent up to ``cycle`` cycles; a small picklable summary back."""
    state_dir, task, config_data, cycle, planned = job
    start = time.perf_counter()
    agent = SinglepathAgent(
        AgentConfig.from_dict(config_data), task, state_dir, progress=False, echo=lambda _: None
    )
    report = agent.run(cycle, planned_cycles=planned)
    best = report.best
    return {
        "task": task,
        "cycle": report.cycle,
        "ran": len(report.generations),
        "best": best.full_id if best is not None else "-",
        "quality": best.metrics.get("quality", float("nan")) if best is not None else float("nan"),
        "test_quality": (
            best.metrics.get("test_quality", float("nan")) if best is not None else float("nan")
        ),
        "seconds": time.perf_counter() - start,
    }


def run_demo(
    state_dir: str = DEFAULT_DEMO_STATE_DIR,
    cycles: int = DEFAULT_DEMO_CYCLES,
    tasks: Sequence[str] = DEMO_TASKS,
    overrides: Sequence[str] = (),
    echo: Callable[[str], None] = print,
    progress: bool | None = None,
    workers: int | None = None,
) -> DemoResult:
    """Runs (or resumes) the demo and prints its summary through ``echo``.

    Args:
        state_dir: where the system state lives (created; reused when it exists).
        cycles: cycles per task.
        tasks: the tasks, one agent each, started in this order every round.
        overrides: ``key=value`` config overrides for every agent.
        echo: where the output goes.
        progress: training progress bars on stderr (None: when stderr is a terminal); only
            with one worker.
        workers: parallel agent processes (default: one per core, at most one per task); 1
            runs the agents in this process and prints every generation's summary.

    Raises:
        munet.config.ConfigError / ValueError: bad override or task, before any work.
    """
    start = time.perf_counter()
    tasks = list(dict.fromkeys(tasks))  # One agent per task: a task given twice runs once.
    store = SystemStore(str(state_dir))
    workers = default_workers(len(tasks)) if workers is None else max(1, workers)
    configs = {task: resolve_config(DEMO_AGENT, overrides, store, task) for task in tasks}
    # Built here (in the parent) so a bad task is an error before any work.
    agents = {
        task: SinglepathAgent(configs[task], task, store, progress=progress, echo=echo)
        for task in tasks
    }
    root = create_root_model(resolve_config(DEMO_AGENT, overrides), store, "random_init")
    echo(
        f"root model {root.full_id}: {len(root.components)} components, {root.num_params()} params"
    )
    if workers == 1:
        for cycle in range(1, cycles + 1):
            for agent in agents.values():
                agent.run(cycle, planned_cycles=cycles)
    else:
        echo(f"running {len(tasks)} agents, {workers} at a time, {cycles} cycles each")
        context = multiprocessing.get_context("spawn")
        with context.Pool(workers, initializer=_die_with_parent) as pool:
            for cycle in range(1, cycles + 1):
                jobs = [
                    (str(state_dir), task, configs[task].to_dict(), cycle, cycles) for task in tasks
                ]
                for done in pool.imap_unordered(_run_agent_cycle, jobs):
                    status = "done" if done["ran"] else "already done"
                    echo(
                        f"  {done['task']:<14} cycle {done['cycle']}/{cycles} {status}: best "
                        f"{done['best']} quality {done['quality']:.4f} test quality "
                        f"{done['test_quality']:.4f} ({done['seconds']:.0f}s)"
                    )
            # A clean shutdown (the context manager's terminate() leaks a semaphore warning).
            pool.close()
            pool.join()
    reports = {}
    for task, agent in agents.items():
        loaded = store.load(agent.agent_id, [DEMO_AGENT])
        best = loaded.population.get_best_path()
        reports[task] = RunReport(agent.agent_id, loaded.cycle, [], best)
    rows = leaderboard_rows(store, [DEMO_AGENT])
    seconds = time.perf_counter() - start
    echo("")
    echo(format_leaderboard(rows))
    echo("")
    echo("Reuse across tasks (sampled paths that took components of other tasks' paths):")
    for task, agent in agents.items():
        counts = cross_task_reuse(store, agent.agent_id)
        sampled = counts.pop("", 0)
        sources = ", ".join(f"{source} ({n})" for source, n in sorted(counts.items()))
        echo(f"  {task:<14} {sampled} paths sampled; from: {sources or '(none)'}")
    echo("")
    echo("Components each task's best path reuses from the system:")
    for task, report in reports.items():
        best = report.best
        if best is None:
            continue
        owners = sorted({c.agent_id for c in best.comps_only() if c.agent_id != best.agent_id})
        echo(f"  {task:<14} test quality {best.metrics.get('test_quality', float('nan')):.4f}")
        echo(f"    shares components of: {', '.join(owners) if owners else '(none)'}")
        echo(f"    sampled as: {best.metrics.get('reuse', '')}")
    echo("")
    echo(f"State: {store.root} (rerun to resume or continue; `munet leaderboard -d {state_dir}`)")
    echo(f"Demo time: {seconds:.0f}s")
    report = os.path.abspath(os.path.join(str(state_dir), "report.html"))
    write_report(str(state_dir), report)
    echo(f"Report: {report} (open it in a browser; `munet report -d {state_dir} --watch 30`)")
    return DemoResult(reports, rows, seconds, str(state_dir))
