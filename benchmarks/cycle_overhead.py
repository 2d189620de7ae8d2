"""Share of a generation's wall time spent outside train and validation steps.

Runs the VitCpu preset on `digits` from a random-init root in a temporary state dir and splits
each generation's wall time into the train/validation steps (data included) and the rest:
parent selection, mutation, component cloning, FLOPs and scoring, metrics and committing the
state. Target: overhead <= 5% of a generation.

    PYTHONPATH=. python benchmarks/cycle_overhead.py [--cycles 1] [--set KEY=VALUE ...]

Wall times are noisy on a shared machine; the printed shares are ratios measured in one run.
"""

from __future__ import annotations

import argparse
import tempfile
import time

from munet.agents.root import create_root_model
from munet.agents.singlepath import SinglepathAgent
from munet.config import apply_overrides, get_preset


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="digits")
    parser.add_argument("--cycles", type=int, default=1)
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    args = parser.parse_args()
    config = apply_overrides(get_preset("VitCpu"), args.overrides)
    with tempfile.TemporaryDirectory() as state_dir:
        create_root_model(config, state_dir, "random_init")
        agent = SinglepathAgent(config, args.task, state_dir, progress=False, echo=lambda _: None)
        start = time.perf_counter()
        report = agent.run(args.cycles)
        run_wall = time.perf_counter() - start
    generations = report.generations
    print(f"VitCpu on {args.task}: {len(generations)} generations, {run_wall:.1f}s in all")
    print(f"{'gen':>5} {'wall s':>8} {'steps s':>8} {'sample s':>9} {'save s':>7} {'overhead':>9}")
    for g in generations:
        share = g.overhead / g.wall
        print(
            f"{g.cycle}.{g.generation:<3} {g.wall:8.2f} {g.steps_time:8.2f} {g.sample:9.3f} "
            f"{g.save:7.3f} {share:9.2%}"
        )
    wall = sum(g.wall for g in generations)
    overhead = sum(g.overhead for g in generations)
    share = overhead / wall
    print(f"generation overhead: {overhead:.2f}s of {wall:.2f}s = {share:.2%} (target <= 5%)")
    outside = run_wall - sum(g.steps_time for g in generations)
    print(
        f"whole run outside steps (loading, test evaluation, end-of-cycle save too): "
        f"{outside:.2f}s of {run_wall:.2f}s = {outside / run_wall:.2%}"
    )


if __name__ == "__main__":
    main()
