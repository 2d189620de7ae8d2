"""PES throughput at growing particle counts: one CPU estimator, CPU shards, and CUDA devices.

Particle-steps per second = particles x truncation steps / seconds per estimate (each particle
step runs the positive and the negative unroll). Measured for the digits learning-rate problem
(``--problem influence`` for the data-free toy) at particle counts doubling from
``--min-particles``:

- ``cpu 1t``: the single-device ``TruncatedPES`` with one torch thread (the baseline), and
  ``cpu Tt`` with ``--threads`` T threads (default: torch's, one per core) when T > 1;
- ``cpu xS``: ``MultiDeviceTruncatedPES`` on S CPU shards (``--cpu-shards``), one torch thread
  each (S threads in all);
- ``cuda``: ``MultiDeviceTruncatedPES`` on every CUDA device (skipped, and said so, where there
  is none), up to ``--max-gpu-particles``.

Rounds are interleaved (every configuration once per round) and the median is reported, since
the machine may be shared. Prints per count the throughput of each, ``ratio:`` lines of CPU
shards / single CPU, and on a GPU machine the count where the GPU saturates (the first count
whose doubling gains less than ``--saturation-gain``) with ``ratio:`` GPU / CPU (the faster
of the single-device CPU configurations) there.

    .venv/bin/python benchmarks/es_devices.py [--max-particles 1024] [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from munet.es import (  # noqa: E402
    DigitsLearningRate,
    InfluenceBalancing,
    MultiDeviceTruncatedPES,
    TruncatedPES,
)


class Runner:
    """One estimator with its state; ``time_one`` runs one estimate and returns its seconds."""

    def __init__(self, estimator, theta: torch.Tensor, threads: int) -> None:
        self.estimator, self.theta, self.threads = estimator, theta, threads
        torch.set_num_threads(threads)
        self.state = estimator.init_state(theta, seed=0)
        _, self.state = estimator.estimate(theta, self.state)  # warm-up

    def time_one(self) -> float:
        torch.set_num_threads(self.threads)
        start = time.perf_counter()
        _, self.state = self.estimator.estimate(self.theta, self.state)
        return time.perf_counter() - start


def _problem(name: str):
    if name == "digits":
        return DigitsLearningRate(episode_length=100)
    return InfluenceBalancing()


def _measure(runners: dict[str, Runner], rounds: int) -> dict[str, float]:
    """Median seconds per estimate of every runner, rounds interleaved."""
    samples: dict[str, list[float]] = {label: [] for label in runners}
    for _ in range(rounds):
        for label, runner in runners.items():
            samples[label].append(runner.time_one())
    return {label: statistics.median(values) for label, values in samples.items()}


def _counts(low: int, high: int) -> list[int]:
    counts, count = [], low
    while count <= high:
        counts.append(count)
        count *= 2
    return counts


def _sweep(
    counts: list[int],
    configs: dict[str, Callable[[int], Runner]],
    rounds: int,
    truncation: int,
) -> dict[str, dict[int, float]]:
    """Particle-steps per second of every config at every count."""
    rates: dict[str, dict[int, float]] = {label: {} for label in configs}
    for count in counts:
        runners = {label: make(count) for label, make in configs.items()}
        seconds = _measure(runners, rounds)
        line = [f"{count:7d} particles:"]
        for label, value in seconds.items():
            rates[label][count] = count * truncation / value
            line.append(f"{label} {rates[label][count]:11.0f}/s")
        for runner in runners.values():
            close = getattr(runner.estimator, "close", None)
            if close is not None:
                close()
        print("  ".join(line), flush=True)
    return rates


def _saturation(rates: dict[int, float], gain: float) -> int:
    """The first count whose doubling improves particle-steps/s by less than ``gain``."""
    counts = sorted(rates)
    for count, next_count in zip(counts, counts[1:], strict=False):
        if rates[next_count] < gain * rates[count]:
            return count
    return counts[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problem", choices=("digits", "influence"), default="digits")
    parser.add_argument("--truncation", type=int, default=10)
    parser.add_argument("--min-particles", type=int, default=16)
    parser.add_argument("--max-particles", type=int, default=1024, help="largest CPU count")
    parser.add_argument("--max-gpu-particles", type=int, default=65536)
    parser.add_argument("--cpu-shards", type=int, default=2)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--saturation-gain", type=float, default=1.1)
    args = parser.parse_args()
    problem = _problem(args.problem)
    theta = problem.init_theta()
    options = {"truncation_length": args.truncation, "std": 0.1}
    shards = args.cpu_shards
    print(
        f"PES on {args.problem}, K={args.truncation}; particle-steps/s, median of {args.rounds} "
        f"interleaved rounds; CPU: {args.threads} thread(s), {shards} shards x 1 thread",
        flush=True,
    )

    def single_cpu(threads: int) -> Callable[[int], Runner]:
        return lambda count: Runner(TruncatedPES(problem, count, **options), theta, threads)

    def sharded_cpu(count: int) -> Runner:
        estimator = MultiDeviceTruncatedPES(problem, ["cpu"] * shards, count // shards, **options)
        return Runner(estimator, theta, 1)

    shard_label = f"cpu x{shards}"
    cpu_configs = {"cpu 1t": single_cpu(1)}
    if args.threads > 1:
        cpu_configs[f"cpu {args.threads}t"] = single_cpu(args.threads)
    cpu_configs[shard_label] = sharded_cpu
    counts = _counts(args.min_particles, args.max_particles)
    rates = _sweep(counts, cpu_configs, args.rounds, args.truncation)
    for count in counts:
        for label in cpu_configs:
            if label != shard_label:
                ratio = rates[shard_label][count] / rates[label][count]
                print(f"ratio: {shard_label} / {label} at {count} particles = {ratio:.2f}")

    if not torch.cuda.is_available():
        print("no CUDA device here: GPU part not run (no GPU / CPU ratio)")
        return
    gpus = [f"cuda:{index}" for index in range(torch.cuda.device_count())]

    def on_gpus(count: int) -> Runner:
        per_device = max(count // len(gpus), 1)
        return Runner(
            MultiDeviceTruncatedPES(problem, gpus, per_device, **options), theta, args.threads
        )

    gpu_counts = _counts(args.min_particles, args.max_gpu_particles)
    gpu_rates = _sweep(gpu_counts, {"cuda": on_gpus}, args.rounds, args.truncation)["cuda"]
    saturated = _saturation(gpu_rates, args.saturation_gain)
    print(
        f"GPU ({', '.join(gpus)}: {torch.cuda.get_device_name(0)}) saturates at {saturated} "
        f"particles ({gpu_rates[saturated]:.0f} particle-steps/s)"
    )
    single_labels = [label for label in cpu_configs if label != shard_label]
    if saturated not in rates[single_labels[0]]:
        extra = _sweep(
            [saturated],
            {label: cpu_configs[label] for label in single_labels},
            args.rounds,
            args.truncation,
        )
        for label in single_labels:
            rates[label].update(extra[label])
    cpu_rate = max(rates[label][saturated] for label in single_labels)
    print(
        f"ratio: GPU / CPU particle-steps per second at {saturated} particles = "
        f"{gpu_rates[saturated] / cpu_rate:.1f}"
    )


if __name__ == "__main__":
    main()
