"""Headroom of the `1k/*` suite: validation accuracy of finetuning the shipped root per task.

Per task, the ``VitCpu`` preset's built-in pretrained root (munet/pretrain/roots/VitCpu) is
finetuned alone with the preset's default hparams (munet.agents.IndependentAgent, every root
component cloned) for about ``--steps`` train steps (rounded to a whole number of the task's
validation intervals: 1,025 = 41 x 25 steps of batch 32 for 1,024 on an 800-example train
split), keeping the parameters with the best validation accuracy. Printed per task: that
validation accuracy, chance (the most frequent class's share of validation), steps, seconds.

The suite is tuned on validation only: this script never evaluates the test split (the
agent's test evaluation is switched off here).

Run (one task per process; ~1 minute per task on one core)::

    OMP_NUM_THREADS=1 python benchmarks/suite_headroom.py --workers 2
    OMP_NUM_THREADS=1 python benchmarks/suite_headroom.py --tasks 1k/clevr-count 1k/digits
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import tempfile
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from munet.tasks.suite import SUITE_TASKS  # noqa: E402

PRESET = "VitCpu"


def _config(seed: int) -> Any:
    from munet.config import apply_overrides, get_preset

    return apply_overrides(get_preset(PRESET), [f"seed={seed}"])


def headroom_job(job: dict[str, Any]) -> dict[str, Any]:
    """Finetunes the root on one task; returns its validation figures (no test evaluation)."""
    import torch

    from munet.agents import IndependentAgent
    from munet.agents.independent import default_hparams

    class ValidationOnlyAgent(IndependentAgent):
        def run_test_eval(self, path: Any, test_immutability: bool = False) -> float:
            return float("nan")  # tuning the suite must not read its test split

    config = _config(job["seed"])
    agent = ValidationOnlyAgent(
        config, job["task"], job["state_dir"], progress=False, root_kind="pretrained"
    )
    interval = agent.steps_between_validations
    steps = max(1, round(job["steps"] / interval)) * interval
    start = time.perf_counter()
    path = agent.train_alone(default_hparams(config), steps)
    labels = agent.task.source.labels("validation")
    chance = float(torch.bincount(labels).max()) / len(labels)
    return {
        "task": job["task"],
        "classes": agent.task.num_classes,
        "validation": float(path.metrics["quality"]),
        "chance": chance,
        "steps": int(path.metrics["steps"]),
        "seconds": time.perf_counter() - start,
    }


def _print_row(row: dict[str, Any]) -> dict[str, Any]:
    print(
        f"{row['task']:<24} {row['classes']:>7} {row['validation']:>10.4f} "
        f"{row['chance']:>7.3f} {row['steps']:>6} {row['seconds']:>8.0f}",
        flush=True,
    )
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", nargs="+", default=list(SUITE_TASKS), choices=SUITE_TASKS)
    parser.add_argument("--steps", type=int, default=1024, help="train steps (default 1024)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=1, help="tasks run in parallel")
    parser.add_argument("--state-dir", default=None, help="default: a temporary dir")
    args = parser.parse_args(argv)
    if args.steps < 1 or args.workers < 1:
        parser.error("--steps and --workers must be positive")

    from munet.agents import create_root_model

    with tempfile.TemporaryDirectory() as tmp:
        state_dir = args.state_dir or tmp
        create_root_model(_config(args.seed), state_dir, "pretrained")
        jobs = [
            {"task": t, "steps": args.steps, "seed": args.seed, "state_dir": state_dir}
            for t in args.tasks
        ]
        print(
            f"{'task':<24} {'classes':>7} {'validation':>10} {'chance':>7} {'steps':>6} "
            f"{'seconds':>8}",
            flush=True,
        )
        rows: list[dict[str, Any]] = []
        if args.workers == 1:
            for job in jobs:
                rows.append(_print_row(headroom_job(job)))
        else:
            context = multiprocessing.get_context("spawn")
            with context.Pool(min(args.workers, len(jobs))) as pool:
                for row in pool.imap(headroom_job, jobs):
                    rows.append(_print_row(row))
                pool.close()
                pool.join()
        below = sum(r["validation"] < 0.9 for r in rows)
        print(f"below 0.9 validation: {below} of {len(rows)} tasks")
        # Against the same run's baseline: chance, each task's majority-class share.
        ratio = sum(r["validation"] / r["chance"] for r in rows) / len(rows)
        print(f"ratio: {ratio:.2f} (finetuned validation / chance, mean over tasks)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
