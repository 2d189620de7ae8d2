"""Parallel search on Ray: the speed-up of 2 workers over 1, and strategies at equal budget.

1. ViT objective (real training, 1 thread per trial): the same `--jobs` training jobs (one
   ViT configuration, different seeds) run with 1 and with 2 jobs in flight on one local Ray
   instance of 2 CPUs, rounds interleaved; a plain in-process run (no Ray) is the baseline of
   Ray's own overhead. Prints the median wall time of each and `ratio:` lines (target: W=2
   over W=1 >= 1.7 on 2 cores).
2. NAS-Bench-101 (a synthetic table in the published format, every cell up to 5 vertices):
   best-by-validation test accuracy against simulated training time for Petridish's loop,
   regularized evolution and random search at the same simulated budget, `--repeats` seeds
   each, in process (simulated time does not depend on the executor).

    .venv/bin/python benchmarks/search_parallel.py [--jobs 8] [--rounds 3] [--repeats 5]

Wall times are noisy on a shared machine: compare the ratios, measured in this one run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

from munet.search.executors import Executor, InProcessExecutor  # noqa: E402
from munet.search.jobs import run_objective_job  # noqa: E402


def timed_job(payload: dict) -> dict:
    """`run_objective_job` plus the CPU seconds its process spent on it."""
    start = time.process_time()
    result = run_objective_job(payload)
    return {**result, "cpu_seconds": time.process_time() - start}


def run_jobs(executor: Executor, payloads: list[dict]) -> tuple[float, float]:
    """Runs every payload keeping `executor.num_workers` in flight.

    Returns:
        (wall seconds, CPU seconds the jobs used): their ratio is the cores the run got.
    """
    start = time.perf_counter()
    pending = list(enumerate(payloads))
    in_flight, cpu = 0, 0.0
    while pending or in_flight:
        while pending and in_flight < executor.num_workers:
            job_id, payload = pending.pop(0)
            executor.submit(job_id, timed_job, payload)
            in_flight += 1
        for outcome in executor.wait():
            in_flight -= 1
            if not outcome.ok:
                raise RuntimeError(f"job {outcome.job_id} failed: {outcome.error}")
            cpu += outcome.result["cpu_seconds"]
    return time.perf_counter() - start, cpu


def vit_speedup(args: argparse.Namespace) -> None:
    import ray

    from munet.search.executors import RayExecutor, bind_local_ray_to_loopback
    from munet.search.objectives.vit import VitObjective

    objective = VitObjective(
        "digits", layers=(2,), widths=(32,), image_sizes=(16,), seed_steps=args.steps,
        batch_size=64, num_validation_examples=256, threads=1,
    )
    candidate = objective.seed_candidates()[0]
    payloads = [
        {"objective": objective.to_json(), "stage": "seed", "candidate": candidate,
         "init_weights": None, "out_weights": None, "seed": seed}
        for seed in range(args.jobs)
    ]
    bind_local_ray_to_loopback()
    ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1",
             log_to_driver=False)
    try:
        one, two = RayExecutor(1), RayExecutor(2)
        run_jobs(two, payloads[:2])  # start and warm both workers (imports, task data)
        run_jobs(InProcessExecutor(1), payloads[:1])
        times: dict[str, list[float]] = {"in-process W=1": [], "ray W=1": [], "ray W=2": []}
        cores: dict[str, list[float]] = {name: [] for name in times}
        for _ in range(args.rounds):  # interleaved: the machine's load hits all alike
            for name, executor in (
                ("in-process W=1", InProcessExecutor(1)), ("ray W=1", one), ("ray W=2", two)
            ):
                wall, cpu = run_jobs(executor, payloads)
                times[name].append(wall)
                cores[name].append(cpu / wall)
    finally:
        ray.shutdown()
    print(f"ViT objective: {args.jobs} jobs of {args.steps} steps ({objective.describe(candidate)},"
          f" digits, 1 thread each), median of {args.rounds} interleaved rounds; "
          f"load average at the end {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    medians = {name: statistics.median(values) for name, values in times.items()}
    for name, values in times.items():
        rounds = " ".join(f"{v:.2f}" for v in values)
        used = statistics.median(cores[name])
        print(f"  {name:<15} {medians[name]:7.2f} s   cores used {used:.2f}   (rounds: {rounds})")
    print(f"ratio: speed-up ray W=2 over ray W=1 = {medians['ray W=1'] / medians['ray W=2']:.2f}"
          " (target >= 1.7)")
    print(f"ratio: ray W=1 over in-process W=1 = "
          f"{medians['ray W=1'] / medians['in-process W=1']:.2f} (Ray's overhead; 1.0 = none)")
    print("  (cores used = the jobs' CPU seconds / wall seconds: W=2 can only be faster when the"
          " machine gives it a second core)")


def nasbench_comparison(args: argparse.Namespace) -> None:
    from munet.nasbench.generate import write_synthetic_dataset
    from munet.nasbench.runner import strategy_settings
    from munet.search import make_strategy
    from munet.search.driver import SearchRun, best_so_far
    from munet.search.objectives.nasbench import NASBenchObjective
    from munet.search.petridish_loop import PetridishLoop, PetridishSettings

    work = tempfile.mkdtemp(prefix="search-bench-")
    table = os.path.join(work, "table.tfrecord")
    write_synthetic_dataset(table, max_vertices=5, seed=0)
    objective = NASBenchObjective(table)
    checkpoints = [args.budget * f for f in (0.25, 0.5, 0.75, 1.0)]
    curves: dict[str, list[list[tuple[float, float]]]] = {}
    for seed in range(args.repeats):
        loop = PetridishLoop(
            objective, InProcessExecutor(), os.path.join(work, f"pd{seed}"),
            PetridishSettings(time_budget=args.budget, max_pool_size=10**6, seed=seed),
        )
        loop.run()
        curves.setdefault("petridish (loop)", []).append(_loop_curve(loop.finished))
        for name in ("regularized_evolution", "random"):
            strategy = make_strategy(
                name, objective.search_space(), seed, **strategy_settings(name)
            )
            report = SearchRun(
                strategy, objective, InProcessExecutor(), os.path.join(work, f"{name}{seed}"),
                time_budget=args.budget, seed=seed,
            ).run()
            curves.setdefault(name, []).append(
                [(t, test) for t, _, test in best_so_far(report.results)]
            )
    header = "".join(f"{f'@{c:.0f}s':>12}" for c in checkpoints)
    print(f"\nNAS-Bench-101 (synthetic, cells up to 5 vertices): mean test accuracy of the best-"
          f"by-validation model vs simulated time, {args.repeats} seeds")
    print(f"  {'strategy':<24}{header}   final ± std")
    for name, runs in curves.items():
        values = [[_value_at(run, c) for run in runs] for c in checkpoints]
        finals = values[-1]
        std = statistics.stdev(finals) if len(finals) > 1 else 0.0
        cells = "".join(f"{statistics.mean(v):>12.4f}" for v in values)
        print(f"  {name:<24}{cells}   {statistics.mean(finals):.4f} ± {std:.4f}")


def _loop_curve(finished: list[dict]) -> list[tuple[float, float]]:
    """(simulated seconds, test accuracy of the best-by-validation model) after each model."""
    curve, elapsed, best = [], 0.0, None
    for record in finished:
        if record["failure"] is not None:
            continue
        elapsed += record["train_seconds"] or 0.0
        if record["stage"] == "search":
            continue
        if best is None or record["error"] < best["error"]:
            best = record
        curve.append((elapsed, best["metrics"]["test_accuracy"]))
    return curve


def _value_at(curve: list[tuple[float, float]], when: float) -> float:
    value = 0.0
    for elapsed, accuracy in curve:
        if elapsed > when:
            break
        value = accuracy
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=8, help="ViT training jobs per round")
    parser.add_argument("--steps", type=int, default=150, help="training steps per ViT job")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=5, help="NAS-Bench seeds per strategy")
    parser.add_argument("--budget", type=float, default=150_000, help="simulated seconds")
    parser.add_argument("--skip-vit", action="store_true")
    parser.add_argument("--skip-nasbench", action="store_true")
    args = parser.parse_args()
    if not args.skip_vit:
        vit_speedup(args)
    if not args.skip_nasbench:
        nasbench_comparison(args)


if __name__ == "__main__":
    main()
