"""munet's CPU kernel choices against their alternatives, on the agents' own train and eval.

Times ``train_candidates`` and ``evaluate_accuracy`` (timers of benchmarks/train_throughput.py)
as munet runs them and with one choice switched back, per call, in the same rounds:

- ``dense``: the ViT's dense layers through PyTorch's ``F.linear`` (MKL on x86) instead of
  munet.models.dense's oneDNN path (fused GELU / residual);
- ``attention``: ``scaled_dot_product_attention`` instead of the explicit matmul form munet
  uses for short sequences where it was measured faster (munet.models.vit.attention);
- ``inference_mode`` (evaluation only): ``torch.inference_mode`` around ``evaluate_accuracy``,
  which runs under ``torch.no_grad`` (tensors it makes may enter autograd later);
- ``eval batch N`` (``--eval-batch-sizes``): evaluation in batches of N instead of the preset's.

Where a choice does not apply on this CPU (munet.models.cpu_kernels leaves the tuned kernels
off outside the family they were measured on) both sides run the same code and the ratio is
noise around 1; ``--kernels tuned`` turns them on to measure them on another CPU family.
Rounds rotate the order; each ``ratio:`` is the median of per-round ratios, munet's choice /
the alternative (above 1: the choice is faster).

    python benchmarks/cpu_kernels.py                        # VitT3's model, fp32
    python benchmarks/cpu_kernels.py --precisions fp32,bf16 --eval-batch-sizes 128,1024
    python benchmarks/cpu_kernels.py --preset VitCpu --steps 8
    python benchmarks/cpu_kernels.py --kernels tuned         # on an Intel or AVX2-only CPU
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import statistics
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

# Before torch loads: the preset thread policy includes the OpenMP wait policy.
from munet.training.threads import prepare_openmp_env  # noqa: E402

prepare_openmp_env()

import torch  # noqa: E402
from train_throughput import (  # noqa: E402
    Workload,
    add_workload_args,
    cpu_line,
    load_average,
    median_ratio,
    munet_eval,
    munet_train,
    run_rounds,
    workload_from_args,
)

import munet.models.dense as dense_module  # noqa: E402
import munet.models.vit as vit  # noqa: E402
from munet.models.cpu_kernels import KERNEL_CHOICES, set_cpu_kernels  # noqa: E402
from munet.training.threads import resolve_num_threads  # noqa: E402


@contextlib.contextmanager
def standard_dense() -> Iterator[None]:
    """The dense layers through ``F.linear``, the attention as munet's choice."""
    preferred = dense_module.onednn_preferred
    dense_module.onednn_preferred = lambda: False
    try:
        yield
    finally:
        dense_module.onednn_preferred = preferred


@contextlib.contextmanager
def sdpa_attention() -> Iterator[None]:
    """Attention through SDPA at every length (PyTorch's standard form, the alternative)."""
    limit = vit.EXPLICIT_ATTENTION_MAX_TOKENS
    vit.EXPLICIT_ATTENTION_MAX_TOKENS = 0
    try:
        yield
    finally:
        vit.EXPLICIT_ATTENTION_MAX_TOKENS = limit


def within(
    context: Callable[[], contextlib.AbstractContextManager], timer: Callable[[], float]
) -> Callable[[], float]:
    """``timer`` run inside a fresh ``context()`` each call."""

    def timed() -> float:
        with context():
            return timer()

    return timed


def inference_mode_eval(
    workload: Workload, precision: str, num_batches: int
) -> Callable[[], float]:
    """``evaluate_accuracy`` (which runs under ``torch.no_grad``) inside inference mode."""
    timer = munet_eval(workload, precision, num_batches)

    def timed() -> float:
        with torch.inference_mode():
            return timer()

    return timed


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_workload_args(parser)
    parser.add_argument("--precisions", default="fp32", help="comma-separated: fp32, bf16")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=2, help="timed train steps per round")
    parser.add_argument("--eval-batches", type=int, default=2, help="eval batches per round")
    parser.add_argument(
        "--eval-batch-sizes", default="", help="comma-separated eval batch sizes to compare"
    )
    parser.add_argument(
        "--kernels",
        default="auto",
        choices=KERNEL_CHOICES,
        help="munet's side: auto (tuned on the measured CPU family), tuned (on any CPU)",
    )
    args = parser.parse_args(argv)
    set_cpu_kernels(args.kernels)

    workload = workload_from_args(args)
    threads = resolve_num_threads(workload.preset_threads)
    precisions = [p.strip() for p in args.precisions.split(",") if p.strip()]
    sizes = [int(size) for size in args.eval_batch_sizes.split(",") if size.strip()]
    timers: dict[str, tuple[int, Callable[[], float]]] = {}
    pairs: list[tuple[str, str, str]] = []  # (label, munet's timer, the alternative's)
    for precision in precisions:
        train, evaluate = f"train munet {precision}", f"eval munet {precision}"
        timers[train] = (threads, munet_train(workload, precision, args.steps))
        timers[evaluate] = (threads, munet_eval(workload, precision, args.eval_batches))
        for kind, make in (("train", munet_train), ("eval", munet_eval)):
            count = args.steps if kind == "train" else args.eval_batches
            for name, context in (
                ("dense", standard_dense),
                ("attention", sdpa_attention),
            ):
                alternative = f"{kind} {name}=standard {precision}"
                timers[alternative] = (threads, within(context, make(workload, precision, count)))
                pairs.append((f"{kind} {name} munet/standard {precision}", alternative, kind))
        timers[f"eval inference_mode {precision}"] = (
            threads,
            inference_mode_eval(workload, precision, args.eval_batches),
        )
        pairs.append(
            (
                f"eval no_grad/inference_mode {precision}",
                f"eval inference_mode {precision}",
                "eval",
            )
        )
        for size in sizes:
            resized = dataclasses.replace(workload, eval_batch=size)
            batches = max(1, args.eval_batches * workload.eval_batch // size)
            timers[f"eval batch {size} {precision}"] = (
                threads,
                munet_eval(resized, precision, batches),
            )
            pairs.append(
                (
                    f"eval batch {workload.eval_batch}/{size} {precision}",
                    f"eval batch {size} {precision}",
                    "eval",
                )
            )
    print(cpu_line())
    print(
        f"model: {workload.arch}  image: {workload.image_size}  batch: {workload.batch}  eval "
        f"batch: {workload.eval_batch}  threads: {threads}  precisions: {', '.join(precisions)}"
        f"  rounds: {args.rounds}",
        flush=True,
    )
    for count, timer in timers.values():  # warm-up: lazy initialisation, oneDNN primitives
        torch.set_num_threads(count)
        timer()
    before = load_average()
    seconds = run_rounds(timers, args.rounds)
    print(f"load average before: {before}, after: {load_average()}")
    for name, values in seconds.items():
        size = workload.batch if name.startswith("train") else 1
        print(f"{name:32} {size / statistics.median(values):10.1f} img/s")
    for label, alternative, kind in pairs:
        precision = label.rsplit(" ", 1)[1]
        ratio = median_ratio(seconds[alternative], seconds[f"{kind} munet {precision}"])
        print(f"ratio: {ratio:.3f}  {label}")


if __name__ == "__main__":
    main()
