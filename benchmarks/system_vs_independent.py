"""Does the system pay off? µNet's claim against independent training, at equal compute.

Per seed, on the embedded suite (``digits`` and the ``synth/*`` tasks), with the ``VitCpu``
preset and the same budget of train steps per task (printed at the start):

Every method starts from the same root model, ``--root``: ``random_init`` (the default),
``pretrained`` (the preset's built-in pretrained root) or a checkpoint file
(benchmarks/root_source.py).

- ``system``: the munet system grown from the root by singlepath agents in rounds
  (one cycle of every agent per round, as ``munet demo``), then a multipath stage on every task
  (``MultiVitCpu``, one cycle). A task's model is its best singlepath or multipath path,
  whichever has the better validation accuracy. Budget: every sampled path's train steps, of
  both stages.
- ``independent``: per task, the same architecture trained alone from the same root with the
  preset's default hparams for the whole budget (munet.agents.IndependentAgent): every root
  component cloned (finetuning a pretrained root).
- ``linear_probe``: the same, with the root's components shared frozen: only the task's head
  trains (what a frozen pretrained root is worth on its own).
- ``random_search``: per task, ``--search-trials`` models with hparams drawn uniformly from the
  agents' mutation ranges, the budget split evenly between them; the best by validation
  accuracy is kept.

Printed per method and task: test accuracy (mean ± standard deviation over seeds), parameters
added for the task, and per method the total parameters held (the system counts each shared
component once) and the wall time. Then the two summary lines::

    quality ratio: X   (system mean test accuracy / the best baseline's)
    params ratio: Y    (system total parameters / independent total)

and a plot of test accuracy against parameters added, one point per method and task. Then each
task's multipath model against the best singlepath path of the same system, paired over seeds,
and ``ratio: R`` (multipath / singlepath mean test accuracy).

Run: ``python benchmarks/system_vs_independent.py`` (3 seeds; about 20 minutes on 2 cores).
A long run can be split: ``--seeds 0 --out DIR`` on one machine, ``--seeds 1 --out DIR`` on
another, then ``--combine DIR/seed_*.json``. ``--quick``: a tiny smoke test (seconds).
``--search-trials 0`` leaves random search out.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import tempfile
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from root_source import RootSource, resolve_root  # noqa: E402
from system_vs_independent_jobs import baseline_job  # noqa: E402
from system_vs_independent_report import (  # noqa: E402
    check_compatible,
    format_table,
    multipath_vs_singlepath,
    ratios,
    write_plot,
)

from munet.config import apply_overrides, get_preset  # noqa: E402
from munet.tasks.sources.synth import SYNTH_TASKS  # noqa: E402

TASKS = ("digits", *SYNTH_TASKS)
# The preset of its recorded results (docs/results/system_vs_independent), not the demo's.
DEMO_AGENT, DEMO_MULTIPATH_AGENT = "VitCpu", "MultiVitCpu"
# The tests' tiny VitCpu (tests/agents/conftest.py): a few steps of a 1-2 block ViT.
QUICK_OVERRIDES = [
    "batch_size=8",
    "num_train_examples_between_validations_max=16",
    "num_validations_per_path_training=2",
    "num_validation_examples_max=16",
    "max_task_population_size=2",
    "hparams_mutation_ranges.num_layers=[0, 1, 2]",
    "num_layers=1",
    "hparams_mutation_ranges.ds_image_size=[8, 16]",
    "ds_image_size=8",
]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--tasks", nargs="+", default=list(TASKS))
    parser.add_argument("--cycles", type=int, default=2, help="singlepath cycles per task")
    parser.add_argument("--samples-per-cycle", type=int, default=3, help="paths per cycle")
    parser.add_argument("--multipath-cycles", type=int, default=1, help="0: no multipath stage")
    parser.add_argument(
        "--search-trials", type=int, default=3, help="random search trials (0: no random search)"
    )
    parser.add_argument(
        "--root",
        default="random_init",
        help="the root every method starts from: random_init, pretrained (the preset's "
        "built-in root) or a checkpoint file",
    )
    parser.add_argument(
        "--no-linear-probe", action="store_true", help="leave the linear-probe arm out"
    )
    parser.add_argument("--workers", type=int, default=None, help="default: one per core")
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="config override for every agent",
    )
    parser.add_argument(
        "--out",
        default="out/system_vs_independent",
        help="folder of the per-seed JSON results and the plot",
    )
    parser.add_argument("--plot", default=None, help="plot file (default: OUT/plot.png)")
    parser.add_argument("--state-dir", default=None, help="systems' state (default: a temp dir)")
    parser.add_argument(
        "--combine",
        nargs="+",
        metavar="JSON",
        default=None,
        help="combine these per-seed results: table, ratios, plot",
    )
    parser.add_argument("--quick", action="store_true", help="tiny smoke test")
    args = parser.parse_args(argv)
    if args.quick:
        args.seeds = args.seeds[:1]
        args.tasks = ["digits", "synth/shape"]
        args.cycles, args.samples_per_cycle, args.search_trials = 1, 2, 2
        args.overrides = [*QUICK_OVERRIDES, *args.overrides]
    return args


def plan(
    args: argparse.Namespace, seed: int, state_dir: str
) -> tuple[Any, list[str], dict[str, int], int]:
    """The seed's config and overrides, the budget of train steps per task (every path the
    system samples for it, both stages) and the train steps of one path.

    Raises:
        SystemExit: the tasks' validation intervals differ, or the budget does not split into
            the random search's trials.
    """
    from munet.agents import IndependentAgent

    overrides = [
        *args.root_source.overrides,
        *args.overrides,
        f"seed={seed}",
        f"num_samples_per_cycle={args.samples_per_cycle}",
    ]
    config = apply_overrides(get_preset(DEMO_AGENT), overrides)
    # An agent's path trains this many intervals of the task's train batches between
    # validations (the task's train split may be smaller than the config's cap).
    intervals = {
        task: IndependentAgent(config, task, state_dir, progress=False).steps_between_validations
        for task in args.tasks
    }
    paths = (args.cycles + args.multipath_cycles) * args.samples_per_cycle
    per_path = config.num_validations_per_path_training
    budgets = {task: paths * interval * per_path for task, interval in intervals.items()}
    for task, budget in budgets.items():
        if args.search_trials and budget % (args.search_trials * intervals[task]):
            raise SystemExit(
                f"{task}: the budget of {budget} steps does not split into {args.search_trials} "
                f"trials of whole {intervals[task]}-step validation intervals"
            )
    return config, overrides, budgets, paths


def _pool(workers: int) -> Any:
    from munet.lifeline import die_with_parent

    context = multiprocessing.get_context("spawn")
    return context.Pool(workers, initializer=die_with_parent, initargs=(os.getpid(),))


def run_baseline(name: str, jobs: list[dict[str, Any]], workers: int, seed: int) -> dict:
    """One baseline on every task, ``workers`` tasks at a time; its results and wall time."""
    start = time.perf_counter()
    tasks: dict[str, Any] = {}
    with _pool(min(workers, len(jobs))) as pool:
        for done in pool.imap_unordered(baseline_job, jobs):
            tasks[done["task"]] = done
            print(
                f"  [seed {seed}] {name:<13} {done['task']:<14} test {done['test_quality']:.4f} "
                f"validation {done['quality']:.4f} ({done['steps']} steps, "
                f"{done['seconds']:.0f}s)",
                flush=True,
            )
        pool.close()
        pool.join()
    ordered = {job["task"]: tasks[job["task"]] for job in jobs}
    # A linear probe's tasks share one frozen root: held once.
    shared = max(t.get("params_shared", 0) for t in ordered.values())
    return {
        "tasks": ordered,
        "total_params": sum(t["params_added"] for t in ordered.values()) + shared,
        "wall_s": time.perf_counter() - start,
    }


def run_system(
    args: argparse.Namespace,
    overrides: list[str],
    state_dir: str,
    seed: int,
    workers: int,
    budgets: dict[str, int],
    root: RootSource,
) -> dict:
    """Grows the system as ``munet demo`` does (rounds, then multipath on every task); per task
    the better of its singlepath and multipath paths by validation accuracy."""
    from munet.agents import run_demo
    from munet.system import SystemStore, format_agent_id

    start = time.perf_counter()
    run_demo(
        state_dir,
        cycles=args.cycles,
        tasks=args.tasks,
        overrides=overrides,
        echo=lambda line: (
            print(f"  [seed {seed}] system: {line}", flush=True)
            if line.startswith(("  ", "multipath", "running", "root"))
            else None
        ),
        progress=False,
        workers=workers,
        multipath_tasks=len(args.tasks),
        multipath_cycles=args.multipath_cycles,
        root_kind=root.kind,
        preset=DEMO_AGENT,
    )
    wall = time.perf_counter() - start
    store = SystemStore(state_dir)
    chosen: dict[str, Any] = {}
    tasks: dict[str, Any] = {}
    for task in args.tasks:
        single_id = format_agent_id(DEMO_AGENT, task)
        multi_id = format_agent_id(DEMO_MULTIPATH_AGENT, task)
        agents = [single_id] + ([multi_id] if args.multipath_cycles else [])
        population = store.load(agents[-1], [DEMO_AGENT]).population
        candidates = [
            population.get_best_path() if a == agents[-1] else population.paths[a][0]
            for a in agents
        ]
        # The task's model: the best validation accuracy; the singlepath one on ties.
        best = max(candidates, key=lambda p: float(p.metrics["quality"]))
        chosen[task] = best
        # Every path sampled for the task, at the planned steps per path.
        sampled = sum(len(store.read_path_history(a)) for a in agents)
        steps_per_path = budgets[task] // (
            (args.cycles + args.multipath_cycles) * args.samples_per_cycle
        )
        tasks[task] = {
            "task": task,
            "test_quality": float(best.metrics["test_quality"]),
            "quality": float(best.metrics["quality"]),
            "model": "multipath" if best.agent_id == multi_id else "singlepath",
            "path": best.full_id,
            "model_params": best.num_params(),
            "steps": sampled * steps_per_path,
            "singlepath_test_quality": float(candidates[0].metrics["test_quality"]),
        }
        if args.multipath_cycles:
            tasks[task]["multipath_test_quality"] = float(candidates[-1].metrics["test_quality"])
            tasks[task]["multipath_quality"] = float(candidates[-1].metrics["quality"])
            tasks[task]["multipath_paths"] = sorted(
                f"{ref['agent_id']}:{ref['id']}" for ref in candidates[-1].hparams["paths"].values()
            )
    # Each component the tasks' models hold, once; a task adds the components its agents own.
    held = {c.key: c for path in chosen.values() for c in path.leaf_components()}
    for task, info in tasks.items():
        owners = {format_agent_id(DEMO_AGENT, task), format_agent_id(DEMO_MULTIPATH_AGENT, task)}
        info["params_added"] = sum(c.num_params for c in held.values() if c.agent_id in owners)
        info["reuses"] = sorted({c.agent_id for c in chosen[task].leaf_components()} - owners)
        print(
            f"  [seed {seed}] system        {task:<14} test {info['test_quality']:.4f} "
            f"validation {info['quality']:.4f} ({info['model']}, {info['steps']} steps)",
            flush=True,
        )
    total = sum(c.num_params for c in held.values())
    shared_root = sum(c.num_params for c in held.values() if "~root_model~" in c.agent_id)
    return {"tasks": tasks, "total_params": total, "root_params_held": shared_root, "wall_s": wall}


def run_seed(args: argparse.Namespace, seed: int, workers: int, state_root: str) -> dict:
    from munet.agents import create_root_model

    state_dir = os.path.join(state_root, f"seed_{seed}")
    config, overrides, budgets, _ = plan(args, seed, state_dir)
    root = args.root_source
    create_root_model(config, state_dir, root.kind)
    result: dict[str, Any] = {"seed": seed, "settings": settings_of(args, budgets), "methods": {}}
    print(f"[seed {seed}] system", flush=True)
    result["methods"]["system"] = run_system(
        args, overrides, state_dir, seed, workers, budgets, root
    )
    baselines = [("independent", 0, False)]
    if not args.no_linear_probe:
        baselines.append(("linear_probe", 0, True))
    if args.search_trials:
        baselines.append(("random_search", args.search_trials, False))
    for name, trials, probe in baselines:
        print(f"[seed {seed}] {name}", flush=True)
        jobs = [
            {
                "config": config.to_dict(),
                "task": task,
                "state_dir": state_dir,
                "steps": budgets[task],
                "trials": trials,
                "root_kind": root.kind,
                "linear_probe": probe,
            }
            for task in args.tasks
        ]
        result["methods"][name] = run_baseline(name, jobs, workers, seed)
    return result


def settings_of(args: argparse.Namespace, budgets: dict[str, int]) -> dict[str, Any]:
    """What makes two seeds' results comparable (``--combine`` checks they agree)."""
    return {
        "preset": DEMO_AGENT,
        "tasks": list(args.tasks),
        "budget_steps_per_task": budgets,
        "cycles": args.cycles,
        "multipath_cycles": args.multipath_cycles,
        "samples_per_cycle": args.samples_per_cycle,
        "search_trials": args.search_trials,
        "overrides": list(args.overrides),
        "root": args.root_source.spec,
        "root_checkpoint": args.root_source.checkpoint,
    }


def report(results: list[dict], plot: str) -> None:
    check_compatible(results)
    print(format_table(results))
    quality, params = ratios(results)
    print(f"quality ratio: {quality:.3f}")
    print(f"params ratio: {params:.3f}")
    lines, multipath = multipath_vs_singlepath(results)
    for line in lines:
        print(line)
    if multipath is not None:
        print(f"ratio: {multipath:.3f} (multipath / best singlepath path, mean test accuracy)")
    write_plot(results, plot)
    print(f"plot: {plot}")


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    plot = args.plot or os.path.join(args.out, "plot.png")
    if args.combine:
        results = []
        for name in args.combine:
            with open(name) as f:
                results.append(json.load(f))
        report(results, plot)
        return
    from munet.agents.demo import default_workers

    args.root_source = resolve_root(args.root, DEMO_AGENT)
    print(args.root_source.describe(), flush=True)
    workers = args.workers or default_workers(len(args.tasks))
    os.makedirs(args.out, exist_ok=True)
    start = time.perf_counter()
    results = []
    with tempfile.TemporaryDirectory(prefix="munet-svi-") as tmp:
        state_root = args.state_dir or tmp
        _, _, budgets, paths = plan(args, args.seeds[0], state_root)
        steps = sorted(set(budgets.values()))
        print(
            f"budget: {'/'.join(map(str, steps))} train steps per task and method "
            f"({DEMO_AGENT}; system: {args.cycles} singlepath + {args.multipath_cycles} "
            f"multipath cycles x {args.samples_per_cycle} paths of {steps[0] // paths} steps; "
            f"random search: {args.search_trials} trials); tasks {', '.join(args.tasks)}; "
            f"seeds {', '.join(map(str, args.seeds))}; {workers} workers",
            flush=True,
        )
        for seed in args.seeds:
            results.append(run_seed(args, seed, workers, state_root))
            name = os.path.join(args.out, f"seed_{seed}.json")
            with open(name, "w") as f:
                json.dump(results[-1], f, indent=1)
            print(
                f"[seed {seed}] done ({time.perf_counter() - start:.0f}s so far): {name}",
                flush=True,
            )
    report(results, plot)
    print(f"total wall time: {time.perf_counter() - start:.0f}s with {workers} workers")


if __name__ == "__main__":
    main()
