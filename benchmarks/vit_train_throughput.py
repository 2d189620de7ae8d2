"""Training throughput of the agents' own path against the same ViT as one plain module.

"agents" is what an agent runs: a component-assembled ViT trained by
``munet.training.train_candidates`` (the seed's SGD with Nesterov momentum and global-norm
clipping, the candidate's precision, on-device NaN tracking); "plain" is a textbook loop on the
same ViT as one ``nn.Module`` (``torch.optim.SGD``, ``clip_grad_norm_``). Both start from the
same parameters and train on the same batch. Timings alternate between the two in short
rounds (order flipped every round) so machine noise hits both alike: images/s are medians over
rounds, and `ratio` is the median of the per-round ratios, which cancels load that drifts
slower than a round. An "agents" round is one ``train_candidates`` call of ``--steps`` steps,
its fixed costs included (a progress bar, the end-of-training validation on one example).

    python benchmarks/vit_train_throughput.py                     # Ti/16 x3 layers, 32 px, 512
    python benchmarks/vit_train_throughput.py --device cuda --bf16 --steps 20

Prints images/s for each, `ratio: X` (agents / plain; 1.0 = no overhead) and the achieved
GFLOP/s, counting a training step as 3x the forward FLOPs (munet.models.count_flops).
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
from pathlib import Path

import torch

# Run from a checkout without installing: make the repository root importable.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# Before torch loads, as every munet entry point does (see munet.training.threads).
from munet.training.threads import prepare_openmp_env  # noqa: E402

prepare_openmp_env()

from munet.models import (  # noqa: E402
    AssembledVit,
    VitArch,
    build_model,
    count_flops,
    init_components,
)
from munet.training import TrainCandidate, make_optimizer, train_candidates  # noqa: E402

# The seed's optimizer hparams (get_common_config_vit defaults), constant schedule.
HPARAMS = {
    "opt_lr": 0.02,
    "opt_lr_schedule": "constant",
    "opt_lr_warmup_ratio": 0.0,
    "opt_momentum": 0.8,
    "opt_nesterov": True,
}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", help="cpu, cuda, cuda:1, ...")
    parser.add_argument("--size", default="Ti/16", help="ViT size name (munet.models.vit_sizes)")
    parser.add_argument("--num-layers", type=int, default=3, help="encoder blocks (VitT3: 3)")
    parser.add_argument("--image-size", type=int, default=32)
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--num-classes", type=int, default=10)
    parser.add_argument("--bf16", action="store_true", help="bfloat16 autocast")
    parser.add_argument("--rounds", type=int, default=15, help="alternating timing rounds")
    parser.add_argument("--steps", type=int, default=3, help="training steps per round")
    parser.add_argument("--warmup", type=int, default=1, help="untimed rounds per model")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def trainable_copy(components, device):
    """Fresh leaf tensors on `device` that require grad (a path training all components)."""
    return {
        component: {
            name: tensor.detach().to(device).clone().requires_grad_(True)
            for name, tensor in tensors.items()
        }
        for component, tensors in components.items()
    }


def plain_timer(model, images, labels, autocast, steps: int, device: torch.device):
    """A plain loop's seconds per step over `steps` steps (one call = one round)."""
    params = list(model.parameters())
    optimizer = torch.optim.SGD(
        params, lr=HPARAMS["opt_lr"], momentum=HPARAMS["opt_momentum"], nesterov=True
    )

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        with autocast():
            logits = model(images)
        loss = torch.nn.functional.cross_entropy(logits.float(), labels)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()

    def timed() -> float:
        synchronize(device)
        start = time.perf_counter()
        for _ in range(steps):
            step()
        synchronize(device)
        return (time.perf_counter() - start) / steps

    return timed


def agents_timer(model, images, labels, precision: str, steps: int, device: torch.device):
    """The agents' ``train_candidates``: seconds per step of one call of `steps` steps."""
    trainable = model.trainable_tensors()
    validation = [(images[:1], labels[:1])]

    def timed() -> float:
        candidate = TrainCandidate(
            label="bench",
            model=model,
            trainable=trainable,
            optimizer=make_optimizer(trainable, HPARAMS, steps, 1),
            score_of_quality=lambda quality: float("-inf"),  # never snapshots
            threshold=float("inf"),
            device=device,
            precision=precision,
        )
        synchronize(device)
        start = time.perf_counter()
        batches = ((images, labels) for _ in range(steps))
        train_candidates([candidate], batches, validation, steps, 1, progress=False)
        synchronize(device)
        if candidate.failure is not None:
            raise RuntimeError(f"training failed: {candidate.failure}")
        return (time.perf_counter() - start) / steps

    return timed


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    device = torch.device(args.device)
    arch = VitArch.from_size(args.size, num_layers=args.num_layers, num_classes=args.num_classes)
    generator = torch.Generator().manual_seed(args.seed)
    components = init_components(arch, args.image_size, generator)
    # vit_jax zero-initialises the head; give it values so the step is not degenerate.
    components["head"]["weight"].normal_(0.0, 0.02, generator=generator)

    plain = build_model(arch, args.image_size, components).to(device)
    assembled = AssembledVit(arch, args.image_size, trainable_copy(components, device))
    images = torch.randn(args.batch, 3, args.image_size, args.image_size, generator=generator)
    labels = torch.randint(0, args.num_classes, (args.batch,), generator=generator)
    images, labels = images.to(device), labels.to(device)

    def autocast():
        if args.bf16:
            return torch.autocast(device_type=device.type, dtype=torch.bfloat16)
        return contextlib.nullcontext()

    precision = "bf16" if args.bf16 else "fp32"
    timers = {
        "plain": plain_timer(plain, images, labels, autocast, args.steps, device),
        "agents": agents_timer(assembled, images, labels, precision, args.steps, device),
    }
    for timer in timers.values():
        for _ in range(args.warmup):
            timer()
    seconds: dict[str, list[float]] = {name: [] for name in timers}
    for round_index in range(args.rounds):
        order = list(timers) if round_index % 2 == 0 else list(reversed(timers))
        for name in order:
            seconds[name].append(timers[name]())

    flops_per_image = 3 * count_flops(arch, args.image_size)
    print(
        f"device: {device}  threads: {torch.get_num_threads()}  size: {args.size}  "
        f"layers: {args.num_layers}  image: {args.image_size}  batch: {args.batch}  "
        f"bf16: {args.bf16}  rounds: {args.rounds}x{args.steps} steps"
    )
    images_per_second = {}
    for name, values in seconds.items():
        per_step = statistics.median(values)
        images_per_second[name] = args.batch / per_step
        gflops = images_per_second[name] * flops_per_image / 1e9
        print(
            f"{name:9}: {images_per_second[name]:10.1f} images/s  "
            f"{per_step * 1e3:8.2f} ms/step  {gflops:7.1f} GFLOP/s"
        )
    round_ratios = [p / a for p, a in zip(seconds["plain"], seconds["agents"], strict=True)]
    quartiles = statistics.quantiles(round_ratios, n=4) if len(round_ratios) > 1 else [0, 0, 0]
    print(f"per-round ratio quartiles: {quartiles[0]:.3f} {quartiles[1]:.3f} {quartiles[2]:.3f}")
    print(f"ratio: {statistics.median(round_ratios):.3f}")


if __name__ == "__main__":
    main()
