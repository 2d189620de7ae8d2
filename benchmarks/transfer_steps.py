"""Is a pretrained root worth anything? Independent training from it against a random init.

Per task of the embedded suite (``digits`` and the ``synth/*`` tasks) and per budget of train
steps (default 128, 384 and 1152: one candidate of the ``VitCpu`` preset, a third and all of
the budget of benchmarks/system_vs_independent.py), one model trained alone with the preset's
default hparams (munet.agents.IndependentAgent: every root component cloned, a fresh head,
validated every interval keeping the best parameters) from each root of ``--roots``
(``random_init``, ``pretrained`` or a checkpoint file; benchmarks/root_source.py). Prints the
test accuracies and, per budget, against the first root measured in the same run::

    ratio: R (STEPS steps: ROOT / random_init, mean test accuracy over tasks)

Run: ``python benchmarks/transfer_steps.py --roots random_init pretrained``. A root's results
go to ``OUT/<root>.json``; runs of one root each combine with ``--combine A.json B.json``
(a run is deterministic given its seed, so the accuracies do not depend on when it ran).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from root_source import resolve_root  # noqa: E402
from system_vs_independent_jobs import baseline_job  # noqa: E402

from munet.config import apply_overrides, get_preset  # noqa: E402
from munet.tasks.sources.synth import SYNTH_TASKS  # noqa: E402

TASKS = ("digits", *SYNTH_TASKS)
# The preset of its recorded figures (VitCpu), fixed so munet's CPU default can change.
DEMO_AGENT = "VitCpu"
QUICK_OVERRIDES = [
    "batch_size=8",
    "num_train_examples_between_validations_max=16",
    "num_validation_examples_max=16",
    "hparams_mutation_ranges.num_layers=[0, 1, 2]",
    "num_layers=1",
    "hparams_mutation_ranges.ds_image_size=[8, 16]",
    "ds_image_size=8",
]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--roots", nargs="+", default=["random_init", "pretrained"])
    parser.add_argument("--tasks", nargs="+", default=list(TASKS))
    parser.add_argument("--steps", type=int, nargs="+", default=[128, 384, 1152])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=None, help="default: one per core")
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument("--out", default="out/transfer_steps", help="folder of the JSON results")
    parser.add_argument("--combine", nargs="+", default=None, metavar="JSON")
    parser.add_argument("--quick", action="store_true", help="tiny smoke test")
    args = parser.parse_args(argv)
    if args.quick:
        args.tasks = args.tasks[:1]
        args.steps = [4, 8]
        args.overrides = [*QUICK_OVERRIDES, *args.overrides]
    return args


def label_of(spec: str) -> str:
    """A root's name in the table and its JSON file (a file's stem)."""
    if spec in ("random_init", "pretrained"):
        return spec
    return os.path.splitext(os.path.basename(spec))[0]


def run_root(args: argparse.Namespace, spec: str, workers: int, state_root: str) -> dict:
    """Every task and budget from one root; its results."""
    from munet.agents import create_root_model
    from munet.lifeline import die_with_parent

    root = resolve_root(spec, DEMO_AGENT)
    print(root.describe(), flush=True)
    overrides = [*root.overrides, *args.overrides, f"seed={args.seed}"]
    config = apply_overrides(get_preset(DEMO_AGENT), overrides)
    state_dir = os.path.join(state_root, label_of(spec))
    create_root_model(config, state_dir, root.kind)
    jobs = [
        {
            "config": config.to_dict(),
            "task": task,
            "state_dir": state_dir,
            "steps": steps,
            "trials": 0,
            "root_kind": root.kind,
        }
        for task in args.tasks
        for steps in args.steps
    ]
    results: dict[str, dict[str, float]] = {task: {} for task in args.tasks}
    start = time.perf_counter()
    context = multiprocessing.get_context("spawn")
    size = min(workers, len(jobs))
    with context.Pool(size, initializer=die_with_parent, initargs=(os.getpid(),)) as pool:
        for done in pool.imap_unordered(baseline_job, jobs):
            results[done["task"]][str(done["steps"])] = done["test_quality"]
            print(
                f"  {label_of(spec):<12} {done['task']:<15} {done['steps']:>5} steps: test "
                f"{done['test_quality']:.4f} validation {done['quality']:.4f} "
                f"({done['seconds']:.0f}s)",
                flush=True,
            )
        pool.close()
        pool.join()
    return {
        "root": spec,
        "checkpoint": root.checkpoint,
        "settings": {
            "tasks": list(args.tasks),
            "steps": list(args.steps),
            "seed": args.seed,
            "overrides": list(args.overrides),
        },
        "test_quality": results,
        "wall_s": time.perf_counter() - start,
    }


def report(runs: list[dict]) -> None:
    """The table and, per budget, each root's ratio to the first one's mean accuracy."""
    settings = runs[0]["settings"]
    for run in runs[1:]:
        if run["settings"] != settings:
            raise SystemExit(f"{run['root']} ran with other settings: {run['settings']}")
    labels = [label_of(run["root"]) for run in runs]
    print(f"test accuracy, independent training (default hparams), seed {settings['seed']}")
    print(f"{'task':<16}{'steps':>6}  " + "".join(f"{label:>14}" for label in labels))
    for task in settings["tasks"]:
        for steps in settings["steps"]:
            cells = "".join(f"{run['test_quality'][task][str(steps)]:>14.4f}" for run in runs)
            print(f"{task:<16}{steps:>6}  {cells}")
    base = runs[0]
    for steps in settings["steps"]:
        means = [
            statistics.fmean(run["test_quality"][t][str(steps)] for t in settings["tasks"])
            for run in runs
        ]
        print(f"{'mean':<16}{steps:>6}  " + "".join(f"{m:>14.4f}" for m in means))
        for run, mean in zip(runs[1:], means[1:], strict=True):
            print(
                f"ratio: {mean / means[0]:.3f} ({steps} steps: {label_of(run['root'])} / "
                f"{label_of(base['root'])}, mean test accuracy over tasks)"
            )


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.combine:
        runs = []
        for name in args.combine:
            with open(name) as f:
                runs.append(json.load(f))
        report(runs)
        return
    from munet.agents.demo import default_workers

    workers = args.workers or default_workers(len(args.tasks) * len(args.steps))
    os.makedirs(args.out, exist_ok=True)
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="munet-transfer-") as state_root:
        for spec in args.roots:
            runs.append(run_root(args, spec, workers, state_root))
            name = os.path.join(args.out, f"{label_of(spec)}.json")
            with open(name, "w") as f:
                json.dump(runs[-1], f, indent=1)
            print(f"{label_of(spec)}: {runs[-1]['wall_s']:.0f}s, {name}", flush=True)
    report(runs)


if __name__ == "__main__":
    main()
