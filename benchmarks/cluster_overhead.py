"""Benchmark the overhead of running an agent through Ray instead of as a plain process.

The same tiny VitCpu agent (synth/shape, `--cycles` cycles, a few train steps per path) runs
from a fresh state dir either as a plain `python -m munet run` process (baseline: interpreter
start, imports, the run) or as one Ray task through `munet.cluster.launch` on a local Ray that
is already up (worker start, imports, the run, progress events), interleaved over `--rounds`
rounds. Ray's own start-up (`ray.init` of a local instance) is timed once, apart.

Prints the median wall time of each and `ratio:` lines (Ray / plain).

Run: `python benchmarks/cluster_overhead.py` (needs munet[ray]; a few minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from munet.agents.root import create_root_model  # noqa: E402
from munet.config import apply_overrides, get_preset  # noqa: E402

OVERRIDES = [
    "batch_size=8",
    "num_train_examples_between_validations_max=64",
    "num_validations_per_path_training=2",
    "num_validation_examples_max=64",
    "num_samples_per_cycle=2",
    "max_task_population_size=2",
    "num_layers=1",
    "hparams_mutation_ranges.num_layers=[0, 1, 2]",
    "ds_image_size=8",
    "hparams_mutation_ranges.ds_image_size=[8, 16]",
]
TASK = "synth/shape"


def _fresh_state(base: str, name: str) -> str:
    state = os.path.join(base, name)
    create_root_model(apply_overrides(get_preset("VitCpu"), OVERRIDES), state)
    return state


def run_plain(state: str, cycles: int) -> float:
    sets = [a for o in OVERRIDES for a in ("--set", o)]
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "munet", "run", "--agent", "VitCpu", "--task", TASK,
         "--cycles", str(cycles), "-d", state, "-q", *sets],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return time.perf_counter() - start


def run_ray(state: str, cycles: int) -> float:
    from munet.cluster import AgentSpec, launch

    start = time.perf_counter()
    result = launch([AgentSpec("VitCpu", TASK)], state, cycles, overrides=OVERRIDES,
                    echo=lambda _line: None)
    if result.failures:
        raise RuntimeError(result.failures)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cycles", type=int, default=2)
    args = parser.parse_args(argv)
    from munet.cluster import init_ray

    start = time.perf_counter()
    init_ray(num_cpus=1)
    ray_start = time.perf_counter() - start
    plain, ray_times = [], []
    with tempfile.TemporaryDirectory(prefix="munet-overhead-") as base:
        for r in range(args.rounds):
            plain.append(run_plain(_fresh_state(base, f"plain{r}"), args.cycles))
            ray_times.append(run_ray(_fresh_state(base, f"ray{r}"), args.cycles))
            print(f"round {r}: plain {plain[-1]:.1f}s  ray {ray_times[-1]:.1f}s")
    p, q = statistics.median(plain), statistics.median(ray_times)
    print(f"local Ray start-up (once per launch): {ray_start:.1f}s")
    print(f"one agent, {args.cycles} cycles: plain process {p:.1f}s, Ray task {q:.1f}s "
          f"(medians of {args.rounds})")
    print(f"ratio: Ray task / plain process: {q / p:.2f}")
    print(f"ratio: (Ray start-up + Ray task) / plain process: {(ray_start + q) / p:.2f}")


if __name__ == "__main__":
    main()
