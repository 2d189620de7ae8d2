"""``munet demo``: a small multitask system grown from scratch on a laptop CPU.

A CPU preset's built-in pretrained root model (``DEMO_AGENT`` unless ``preset``; random-init
with ``root_kind="random_init"``, or where the preset ships none), then one singlepath agent per
task (the embedded ``digits`` and three generated ``synth/*`` tasks) run in rounds, one cycle of
every agent per round, so each cycle sees the paths the other agents published before it.
Agents of a round run in parallel worker processes (one per CPU core, one thread each); the
first task's results do not depend on the number of workers (it starts first in every round and
sees the same published paths). Then a multipath stage: the preset's ``Multi`` agents on the
tasks where the singlepath agents are weakest (lowest validation quality), combining their paths
with other tasks' paths. It ends with the leaderboard, the components each task's best path
took from other agents, whether multipath beat the best singlepath path on its tasks, and where
the state lives. Rerunning resumes (a killed demo loses at most a generation per agent) and
finishes.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from munet.agents.class_evaluation import best_paths_class_metrics
from munet.agents.cycle import Agent
from munet.agents.demo_summary import echo_multipath_comparison, echo_sharing
from munet.agents.reports import RunReport
from munet.agents.root import create_root_model, default_root_kind, existing_root_kind
from munet.agents.runner import leaderboard_rows, make_agent, resolve_config
from munet.config import (
    DEFAULT_DEMO_CYCLES,
    DEFAULT_DEMO_STATE_DIR,
    DEMO_AGENT,
    DEMO_MULTIPATH_CYCLES,
    DEMO_MULTIPATH_TASKS,
    DEMO_TASKS,
    AgentConfig,
)
from munet.config.presets import PRESETS, multipath_name
from munet.cpus import usable_cpu_count
from munet.progress import bars_enabled, progress_bar, status_source, write_line
from munet.report.html import write_report
from munet.report.leaderboard import format_leaderboard
from munet.staged_pace import Stage, StagedPace
from munet.system import SystemStore
from munet.tracking import TrackingSettings
from munet.workers import WorkerPool


@dataclass
class DemoResult:
    """What the demo produced: the agents' last reports, leaderboard rows and timing.

    Attributes:
        reports: the singlepath agents' reports, by task.
        rows: the leaderboard.
        seconds: wall time of this call.
        state_dir: where the system lives.
        multipath: by task of the multipath stage, the best singlepath and multipath test
            quality (``singlepath``, ``multipath``) and the multipath best path's subpaths.
    """

    reports: dict[str, RunReport]
    rows: list[dict]
    seconds: float
    state_dir: str
    multipath: dict[str, dict[str, Any]] = field(default_factory=dict)


def multipath_overrides(overrides: Sequence[str]) -> list[str]:
    """The overrides that apply to a multipath config: those of the architecture hparams a
    multipath model takes from its subpaths (``num_layers``, ``ds_image_size``) are left out."""
    return [o for o in overrides if "num_layers" not in o and "ds_image_size" not in o]


def weakest_tasks(reports: dict[str, RunReport], count: int) -> list[str]:
    """The ``count`` tasks whose best singlepath path has the lowest validation quality (ties:
    the demo's task order)."""
    order = list(reports)

    def key(task: str) -> tuple[float, int]:
        best = reports[task].best
        quality = best.metrics.get("quality", 0.0) if best is not None else 0.0
        return (float(quality), order.index(task))

    return sorted(order, key=key)[:count]


def default_workers(num_tasks: int) -> int:
    """One worker per CPU core this process may use (its affinity capped by a cgroup CPU
    quota, munet.cpus), at most one per task."""
    return max(1, min(num_tasks, usable_cpu_count()))


def _run_agent_cycle(
    job: tuple[str, str, dict[str, Any], int, int, TrackingSettings | None],
) -> dict[str, Any]:
    """Worker: run one agent up to ``cycle`` cycles; a small picklable summary back."""
    state_dir, task, config_data, cycle, planned, tracking = job
    start = time.perf_counter()
    agent = make_agent(
        AgentConfig.from_dict(config_data), task, state_dir, quiet=True, tracker=tracking
    )
    report = agent.run(cycle, planned_cycles=planned)
    return cycle_summary(task, report, time.perf_counter() - start)


def cycle_summary(task: str, report: RunReport, seconds: float) -> dict[str, Any]:
    """An agent cycle's result as the demo's line shows it (picklable: a worker sends it)."""
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
        "seconds": seconds,
    }


def run_demo(
    state_dir: str = DEFAULT_DEMO_STATE_DIR,
    cycles: int = DEFAULT_DEMO_CYCLES,
    tasks: Sequence[str] = DEMO_TASKS,
    overrides: Sequence[str] = (),
    echo: Callable[[str], None] = print,
    progress: bool | None = None,
    workers: int | None = None,
    multipath_tasks: int = DEMO_MULTIPATH_TASKS,
    multipath_cycles: int = DEMO_MULTIPATH_CYCLES,
    tracking: TrackingSettings | None = None,
    root_kind: str | None = None,
    detail: str = "generation",
    preset: str = DEMO_AGENT,
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
        multipath_tasks: run the multipath stage on this many of the weakest tasks (0: none).
        multipath_cycles: cycles of each multipath agent.
        tracking: TensorBoard / W&B logging of every agent (munet.tracking), or None.
        root_kind: the root model (``pretrained``, ``random_init``); None: the root the
            state dir already has, else the preset's default (``default_root_kind``). ``checkpoint``
            takes a ``checkpoint_path=FILE`` override (munet.agents.root).
        detail: the agents' lines with one worker (``munet.agents.options.RunOptions``):
            ``generation`` (one per generation), ``full`` (every sampled path) or ``cycle``.
        preset: the singlepath preset; the multipath stage runs its ``Multi`` preset.

    Raises:
        munet.config.ConfigError / ValueError: bad override, task or count (cycles < 1,
            workers < 1, ...), before any work and before anything is written.
    """
    for name, value, least in (
        ("cycles", cycles, 1),
        ("workers", 1 if workers is None else workers, 1),
        ("multipath_tasks", multipath_tasks, 0),
        ("multipath_cycles", multipath_cycles, 0),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise ValueError(f"{name}={value!r}: expected a whole number >= {least}")
    check_demo_agent(preset)
    start = time.perf_counter()
    tasks = list(dict.fromkeys(tasks))  # One agent per task: a task given twice runs once.
    store = SystemStore(str(state_dir))
    workers = default_workers(len(tasks)) if workers is None else workers
    pace = demo_pace(len(tasks), cycles, workers, multipath_tasks, multipath_cycles)
    echo(plan_line(preset, tasks, cycles, workers, pace, str(state_dir)))
    configs = {task: resolve_config(preset, overrides, store, task) for task in tasks}
    # Built here (in the parent) so a bad task is an error before any work.
    agents = {
        task: make_agent(
            configs[task],
            task,
            store,
            progress=progress,
            echo=echo,
            detail=detail,
            tracker=tracking,
        )
        for task in tasks
    }
    root_config = resolve_config(preset, overrides)
    if root_kind is None:
        root_kind = existing_root_kind(root_config, store) or default_root_kind(root_config)
    root = create_root_model(root_config, store, root_kind)
    echo(
        f"root model {root.full_id}: {len(root.components)} components, {root.num_params()} params"
    )
    # A heartbeat line (munet.progress.Heartbeat, in a log) says the time left of both stages.
    with status_source(lambda: f"demo: {pace.describe()}"):
        _run_rounds(
            agents, configs, str(state_dir), cycles, workers, echo, pace, SINGLEPATH, progress,
            tracking,
        )  # fmt: skip
        reports = {}
        for task, agent in agents.items():
            loaded = store.load(agent.agent_id, [preset])
            best = loaded.population.get_best_path()
            reports[task] = RunReport(agent.agent_id, loaded.cycle, [], best)
        comparison = _multipath_stage(
            preset,
            store,
            reports,
            overrides,
            multipath_tasks,
            multipath_cycles,
            workers,
            progress,
            echo,
            pace,
            tracking,
            detail,
        )
    rows = leaderboard_rows(store, [preset, multipath_name(preset)])
    seconds = time.perf_counter() - start
    echo("")
    echo(format_leaderboard(rows))
    echo("")
    echo_sharing(store, {task: agent.agent_id for task, agent in agents.items()}, reports, echo)
    if comparison:
        echo_multipath_comparison(comparison, multipath_name(preset), echo)
    echo("")
    echo(f"State: {store.root} (rerun to resume or continue; `munet leaderboard -d {state_dir}`)")
    echo(f"Demo time: {seconds:.0f}s")
    report = os.path.abspath(os.path.join(str(state_dir), "report.html"))
    # With each task's per-class heat map, as `munet report` writes it.
    write_report(
        str(state_dir),
        report,
        class_metrics=lambda: best_paths_class_metrics(SystemStore(str(state_dir))),
    )
    echo(f"Report: {report} (open it in a browser; `munet report -d {state_dir} --watch 30`)")
    return DemoResult(reports, rows, seconds, str(state_dir), comparison)


# The demo's stages, as its pace counts them.
SINGLEPATH, MULTIPATH = "singlepath", "multipath"


def check_demo_agent(preset: str) -> None:
    """Raises ValueError unless ``preset`` is a singlepath preset with a multipath preset over
    it (the demo's second stage runs that one), naming those that are."""
    usable = [n for n in PRESETS if multipath_name(n) in PRESETS]
    if preset not in usable:
        raise ValueError(
            f"demo agent {preset!r}: expected a singlepath preset with a multipath preset "
            f"({', '.join(usable)})"
        )


def multipath_task_count(num_tasks: int, multipath_tasks: int, multipath_cycles: int) -> int:
    """The tasks the multipath stage runs on (0: no stage; it needs another task's paths)."""
    if multipath_tasks <= 0 or multipath_cycles <= 0 or num_tasks < 2:
        return 0
    return min(multipath_tasks, num_tasks)


def demo_pace(
    num_tasks: int, cycles: int, workers: int, multipath_tasks: int, multipath_cycles: int
) -> StagedPace:
    """The demo's work as stages of agent cycles: ``cycles`` rounds of every singlepath agent,
    then ``multipath_cycles`` rounds of the multipath agents, each on ``workers`` processes."""
    on = multipath_task_count(num_tasks, multipath_tasks, multipath_cycles)
    return StagedPace(
        [
            Stage(SINGLEPATH, cycles, num_tasks, workers),
            Stage(MULTIPATH, multipath_cycles if on else 0, on, workers),
        ],
        unit="agent cycles",
    )


def plan_line(
    preset: str,
    tasks: Sequence[str],
    cycles: int,
    workers: int,
    pace: StagedPace,
    state_dir: str,
) -> str:
    """The demo's first line: what it will run, on how many processes, and where."""
    text = f"demo: {preset} on {', '.join(tasks)}, {cycles} cycle(s) each"
    if MULTIPATH in pace.done:
        stage = pace.stage(MULTIPATH)
        text += (
            f"; then {multipath_name(preset)} on the {stage.units} weakest, {stage.rounds} "
            "cycle(s) each"
        )
    return (
        f"{text} ({pace.total} agent cycles, {workers} at a time); state in {state_dir}; the "
        f"time left shows once the first agent cycle ends"
    )


def _run_rounds(
    agents: dict[str, Agent],
    configs: dict[str, AgentConfig],
    state_dir: str,
    cycles: int,
    workers: int,
    echo: Callable[[str], None],
    pace: StagedPace,
    stage: str,
    progress: bool | None = None,
    tracking: TrackingSettings | None = None,
) -> None:
    """Runs every agent to ``cycles`` cycles, one cycle of each per round, in this process
    (one worker) or in a pool of worker processes; a line per agent cycle gives the time left
    of the whole demo (``pace``, whose stage ``stage`` this is); an overall bar counts this
    stage's agent cycles."""
    bar = progress_bar(len(agents) * cycles, "agent cycles", "cycle", bars_enabled(progress))

    def finished(done: dict[str, Any]) -> None:
        pace.finish_job(stage, measured=bool(done["ran"]), seconds=done["seconds"])
        bar.update(1)
        status = "done" if done["ran"] else "already done"
        write_line(
            echo,
            f"  {done['task']:<14} cycle {done['cycle']}/{cycles} {status}: best "
            f"{done['best']} quality {done['quality']:.4f} test quality "
            f"{done['test_quality']:.4f} ({done['seconds']:.0f}s; {pace.describe()})",
        )

    try:
        if workers == 1:
            for cycle in range(1, cycles + 1):
                pace.start_round(stage)
                for task, agent in agents.items():
                    started = time.perf_counter()
                    report = agent.run(cycle, planned_cycles=cycles)
                    finished(cycle_summary(task, report, time.perf_counter() - started))
            return
        workers = min(workers, len(agents))
        echo(f"running {len(agents)} agents, {workers} at a time, {cycles} cycles each")
        # The pool's workers die with the demo at any instant, start-up included; an
        # interrupt stops them at once (munet.workers).
        with WorkerPool(workers) as pool:
            for cycle in range(1, cycles + 1):
                jobs = [
                    (_run_agent_cycle, ((state_dir, task, configs[task].to_dict(), cycle,
                                         cycles, tracking),))
                    for task in agents
                ]  # fmt: skip
                pace.start_round(stage)
                pool.run(jobs, on_result=finished)
    finally:
        bar.close()


def _multipath_stage(
    preset: str,
    store: SystemStore,
    reports: dict[str, RunReport],
    overrides: Sequence[str],
    num_tasks: int,
    cycles: int,
    workers: int,
    progress: bool | None,
    echo: Callable[[str], None],
    pace: StagedPace,
    tracking: TrackingSettings | None = None,
    detail: str = "generation",
) -> dict[str, dict[str, Any]]:
    """Multipath agents on the weakest tasks; their test quality against singlepath's."""
    count = multipath_task_count(len(reports), num_tasks, cycles)
    if not count:
        return {}
    tasks = weakest_tasks(reports, count)
    extra = multipath_overrides(overrides)
    configs = {t: resolve_config(multipath_name(preset), extra, store, t) for t in tasks}
    agents = {
        t: make_agent(
            configs[t], t, store, progress=progress, echo=echo, detail=detail, tracker=tracking
        )
        for t in tasks
    }
    echo(f"multipath stage: {multipath_name(preset)} on {', '.join(tasks)}")
    _run_rounds(
        agents, configs, str(store.root), cycles, workers, echo, pace, MULTIPATH, progress, tracking
    )
    comparison = {}
    for task, agent in agents.items():
        best = store.load(agent.agent_id, [preset]).population.get_best_path()
        single = reports[task].best
        comparison[task] = {
            "singlepath": float(single.metrics.get("test_quality", float("nan"))),
            "multipath": float(best.metrics.get("test_quality", float("nan"))),
            "paths": ", ".join(
                f"{ref['agent_id']}:{ref['id']}" for _, ref in sorted(best.hparams["paths"].items())
            ),
        }
    return comparison
