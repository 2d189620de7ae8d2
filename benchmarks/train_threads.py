"""The preset's thread policy against one thread, with competing processes on the machine.

Times the agents' own training step (``train_candidates``) and evaluation
(``evaluate_accuracy``) at the preset's precision, alternately with the preset's thread policy
(``num_threads``, 0 = the usable cores, and the OpenMP wait policy this script sets before
torch loads, as every ``munet`` entry point does) and with one thread, while ``--busy-procs``
processes the script starts spin on the CPU (stopped at the end, and each bounded by
``--busy-max-seconds``). Rounds alternate the order; the ratio is the median of per-round
ratios.

    python benchmarks/train_threads.py                     # VitT3's model, 32 px, batch 512
    python benchmarks/train_threads.py --preset VitCpu --threads 0 --steps 8
    OMP_WAIT_POLICY=ACTIVE python benchmarks/train_threads.py   # spinning waits, for contrast

Prints images/s of both settings and ``ratio: X`` = policy / one thread for training under load
(target >= 1.0), plus the same ratio for evaluation.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

# Before torch loads: the preset thread policy includes the OpenMP wait policy.
from munet.training.threads import prepare_openmp_env  # noqa: E402

prepare_openmp_env()

import torch  # noqa: E402
from train_throughput import (  # noqa: E402
    add_workload_args,
    busy_processes,
    load_average,
    median_ratio,
    munet_eval,
    munet_train,
    run_rounds,
    workload_from_args,
)

from munet.training import resolve_precision  # noqa: E402
from munet.training.threads import resolve_num_threads  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_workload_args(parser)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=2, help="timed train steps per round")
    parser.add_argument("--eval-batches", type=int, default=2, help="eval batches per round")
    parser.add_argument("--busy-procs", type=int, default=0, help="0: the policy's threads")
    parser.add_argument("--busy-max-seconds", type=float, default=1800.0)
    args = parser.parse_args(argv)

    workload = workload_from_args(args)
    precision = resolve_precision(workload.preset_precision, "cpu")
    policy = resolve_num_threads(workload.preset_threads)
    timers = {
        "train policy": (policy, munet_train(workload, precision, args.steps)),
        "train 1thread": (1, munet_train(workload, precision, args.steps)),
        "eval policy": (policy, munet_eval(workload, precision, args.eval_batches)),
        "eval 1thread": (1, munet_eval(workload, precision, args.eval_batches)),
    }
    busy = args.busy_procs or policy
    print(
        f"model: {workload.arch}  image: {workload.image_size}  batch: {workload.batch}  "
        f"precision: {precision}  policy threads: {policy} "
        f"(OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')})  busy processes: {busy}  "
        f"rounds: {args.rounds}",
        flush=True,
    )
    if policy == 1:
        print("the policy is one thread: both settings are the same (ratio 1 up to noise)")
    for threads, timer in timers.values():  # warm-up
        torch.set_num_threads(threads)
        timer()
    before = load_average()
    with busy_processes(busy, args.busy_max_seconds):
        seconds = run_rounds(timers, args.rounds)
    print(f"load average before: {before}, after: {load_average()}")
    for name, values in seconds.items():
        size = workload.batch if name.startswith("train") else 1
        print(f"{name:14} {size / statistics.median(values):10.1f} img/s")
    eval_ratio = median_ratio(seconds["eval 1thread"], seconds["eval policy"])
    print(f"eval policy/1thread under load: {eval_ratio:.3f}")
    train_ratio = median_ratio(seconds["train 1thread"], seconds["train policy"])
    print(f"ratio: {train_ratio:.3f}")


if __name__ == "__main__":
    main()
