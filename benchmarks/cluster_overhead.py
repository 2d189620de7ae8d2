"""Benchmark the overhead of running an agent through Ray instead of as a plain process.

The same tiny VitCpu agent (synth/shape, `--cycles` cycles, a few train steps per path) runs
from a fresh state dir, interleaved over `--rounds` rounds:

- as a plain `python -m munet run` process (interpreter start, imports, the run);
- in this process (`munet.cluster.run_agent`, imports done: the run alone, the baseline for
  Ray's per-task cost);
- as one Ray task through `munet.cluster.launch` on a local Ray that is already up (the first
  task starts a worker and imports torch; later ones reuse the warm worker).

Ray's own start-up (`ray.init` of a local instance) is timed once, apart. Prints medians and
`ratio:` lines.

Run: `python benchmarks/cluster_overhead.py` (needs munet-evolve[ray]; a few minutes on 2 cores).
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
    create_root_model(apply_overrides(get_preset("VitCpu"), OVERRIDES), state, "random_init")
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


def run_in_process(state: str, cycles: int) -> float:
    from munet.cluster import run_agent

    start = time.perf_counter()
    run_agent("VitCpu", TASK, state, cycles, OVERRIDES, lambda _event: None)
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
    plain, inproc, ray_times = [], [], []
    with tempfile.TemporaryDirectory(prefix="munet-overhead-") as base:
        cold = run_ray(_fresh_state(base, "ray-cold"), args.cycles)
        for r in range(args.rounds):
            plain.append(run_plain(_fresh_state(base, f"plain{r}"), args.cycles))
            inproc.append(run_in_process(_fresh_state(base, f"inproc{r}"), args.cycles))
            ray_times.append(run_ray(_fresh_state(base, f"ray{r}"), args.cycles))
            print(f"round {r}: plain process {plain[-1]:.1f}s  in process {inproc[-1]:.1f}s  "
                  f"Ray task {ray_times[-1]:.1f}s")
    p, i, q = (statistics.median(x) for x in (plain, inproc, ray_times))
    print(f"local Ray start-up (once per launch): {ray_start:.1f}s; first Ray task (cold "
          f"worker): {cold:.1f}s")
    print(f"one agent, {args.cycles} cycles, medians of {args.rounds}: plain process {p:.1f}s, "
          f"in process {i:.1f}s, Ray task (warm worker) {q:.1f}s")
    print(f"ratio: Ray task (warm worker) / in-process run: {q / i:.2f}")
    print(f"ratio: Ray task (cold worker) / plain process: {cold / p:.2f}")
    print(f"ratio: (Ray start-up + cold Ray task) / plain process: {(ray_start + cold) / p:.2f}")


if __name__ == "__main__":
    main()
