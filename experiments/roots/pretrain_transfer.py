"""Transfer of pretrained roots: a fresh model per task trained from each root vs random init.

For each task, an IndependentAgent (the singlepath agent's own model building and training,
default hparams) trains from the random-init root and from each given root file for
``--steps`` steps; prints test accuracies and ``ratio:`` lines (root / random init, mean over
trials), all measured in this run. ``--card FILE`` also stores the figures in a root's card
under ``transfer`` (the file named by the first --root).

Run: ``python experiments/roots/pretrain_transfer.py --agent VitCpu
--root fractal=runs/f/root.safetensors --root contours=runs/c/root.safetensors
--tasks synth/shape synth/position --steps 128``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

# This folder (transfer.py), then the repository (munet without an install).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from transfer import measure_transfer  # noqa: E402

from munet.config import apply_overrides, get_preset  # noqa: E402
from munet.training.threads import apply_thread_policy  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agent", default="VitCpu")
    parser.add_argument("--root", action="append", default=[], metavar="LABEL=FILE")
    parser.add_argument("--tasks", nargs="+", default=["synth/shape", "synth/position"])
    parser.add_argument("--steps", type=int, default=128)
    parser.add_argument("--trials", type=int, default=1)
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument("--card", help="card JSON to store the figures in (key 'transfer')")
    args = parser.parse_args(argv)
    config = apply_overrides(get_preset(args.agent), args.overrides)
    apply_thread_policy(config.num_threads)
    roots: dict[str, str | None] = {"random_init": None}
    for item in args.root:
        label, _, file = item.partition("=")
        roots[label] = file
    start = time.perf_counter()
    results = measure_transfer(config, roots, args.tasks, args.steps, args.trials)
    print(f"{args.agent}, {args.steps} steps, {args.trials} trial(s), test accuracy "
          f"({time.perf_counter() - start:.0f} s)")  # fmt: skip
    for task, by_root in results.items():
        shown = "  ".join(f"{label} {statistics.mean(s):.3f}" for label, s in by_root.items())
        print(f"{task:<16} {shown}")
    for task, by_root in results.items():
        base = statistics.mean(by_root["random_init"])
        for label, scores in by_root.items():
            if label != "random_init":
                print(f"ratio: {task} {label} / random_init (test accuracy) = "
                      f"{statistics.mean(scores) / max(base, 1e-9):.3f}")  # fmt: skip
    if args.card:
        card = json.loads(open(args.card).read())
        card["transfer"] = {
            "method": (
                f"IndependentAgent.train_alone, {args.agent} default hparams, {args.steps} "
                f"steps, {args.trials} trial(s); test accuracy; "
                "experiments/roots/pretrain_transfer.py"
            ),
            "results": results,
        }
        with open(args.card, "w") as handle:
            handle.write(json.dumps(card, indent=1) + "\n")


if __name__ == "__main__":
    main()
