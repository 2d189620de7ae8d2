"""The patch embedding as one matmul (munet's) against PyTorch's strided convolution.

Times the agents' own ``train_candidates`` and ``evaluate_accuracy`` (timers of
benchmarks/train_throughput.py) twice per round: once as munet runs, once with
``munet.models.vit.embed_patches`` swapped for ``conv2d(stride=p)`` for that call. Rounds
rotate the order; each ``ratio:`` is the median of per-round ratios, matmul / conv speed.

    python benchmarks/patch_embed.py                     # VitT3's model, 32 px, batch 512
    python benchmarks/patch_embed.py --preset VitCpu --steps 8
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

# Before torch loads: the preset thread policy includes the OpenMP wait policy.
from munet.training.threads import prepare_openmp_env  # noqa: E402

prepare_openmp_env()

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from train_throughput import (  # noqa: E402
    add_workload_args,
    load_average,
    median_ratio,
    munet_eval,
    munet_train,
    run_rounds,
    workload_from_args,
)

import munet.models.vit as vit  # noqa: E402
from munet.training.threads import resolve_num_threads  # noqa: E402

MATMUL = vit.embed_patches


def conv_embedding(images: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """The convolution the matmul replaces (what munet ran before)."""
    return F.conv2d(images, weight, bias, stride=weight.shape[-1]).flatten(2).transpose(1, 2)


def with_embedding(embed: Callable, timer: Callable[[], float]) -> Callable[[], float]:
    def timed() -> float:
        vit.embed_patches = embed
        try:
            return timer()
        finally:
            vit.embed_patches = MATMUL

    return timed


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_workload_args(parser)
    parser.add_argument("--precisions", default="bf16,fp32", help="comma-separated")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=2, help="timed train steps per round")
    parser.add_argument("--eval-batches", type=int, default=2, help="eval batches per round")
    args = parser.parse_args(argv)

    workload = workload_from_args(args)
    threads = resolve_num_threads(workload.preset_threads)
    precisions = [p.strip() for p in args.precisions.split(",") if p.strip()]
    timers: dict[str, tuple[int, Callable[[], float]]] = {}
    for precision in precisions:
        for name, embed in (("conv", conv_embedding), ("matmul", MATMUL)):
            train = munet_train(workload, precision, args.steps)
            evaluate = munet_eval(workload, precision, args.eval_batches)
            timers[f"train {precision} {name}"] = (threads, with_embedding(embed, train))
            timers[f"eval {precision} {name}"] = (threads, with_embedding(embed, evaluate))
    print(
        f"model: {workload.arch}  image: {workload.image_size}  batch: {workload.batch}  "
        f"threads: {threads}  rounds: {args.rounds}",
        flush=True,
    )
    for count, timer in timers.values():  # warm-up
        torch.set_num_threads(count)
        timer()
    before = load_average()
    seconds = run_rounds(timers, args.rounds)
    print(f"load average before: {before}, after: {load_average()}")
    for kind in ("train", "eval"):
        for precision in precisions:
            ratio = median_ratio(
                seconds[f"{kind} {precision} conv"], seconds[f"{kind} {precision} matmul"]
            )
            print(f"ratio: {ratio:.3f}  {kind} {precision} matmul/conv")


if __name__ == "__main__":
    main()
