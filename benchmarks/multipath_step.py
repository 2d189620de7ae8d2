"""Cost of a multipath training step against the forward passes of its paths.

A multipath model's subpaths are frozen and the combination passes no gradient into them, so a
training step (forward of every path, router and connectors, cross-entropy, backward into the
router and connectors only, the seed's optimizer step) should cost little more than the
forward passes of its paths alone. Both are timed on the same batch in alternating rounds
(order flipped every round); `ratio` is the median of the per-round ratios.

A third timing measures the speed-up available from reusing the subpaths' outputs across
steps (valid when no augmentation is active: a frozen path maps an example to the same
output every time): the step with the paths' outputs given.

    python benchmarks/multipath_step.py                       # VitCpu paths: mu/4, 16 px, batch 32
    python benchmarks/multipath_step.py --size Ti/16 --num-layers 3 --image-size 32 --batch 512

Prints `ratio: X` (step / forward of the paths; target <= 1.15) and `ratio_cached: Y`
(step with the paths' outputs reused / step).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

# Run from a checkout without installing: make the repository root importable.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from munet.models import AssembledVit, VitArch, init_components  # noqa: E402
from munet.models.multipath import MultipathVit, init_head_adapter, init_router  # noqa: E402
from munet.training.optim import make_optimizer  # noqa: E402

HPARAMS = {
    "opt_lr": 0.1,
    "opt_lr_schedule": "cosine",
    "opt_lr_warmup_ratio": 0.02,
    "opt_momentum": 0.8,
    "opt_nesterov": True,
}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="mu/4", help="ViT size of every path")
    parser.add_argument("--num-layers", type=int, default=4)
    parser.add_argument("--image-size", type=int, default=16)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--num-classes", type=int, default=10)
    parser.add_argument("--paths", type=int, default=3, help="paths per model (seed: 2 or 3)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (VitCpu: 1)")
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--steps", type=int, default=20, help="steps per round")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def build(args: argparse.Namespace) -> tuple[MultipathVit, list[torch.Tensor]]:
    generator = torch.Generator().manual_seed(args.seed)
    paths = []
    for index in range(args.paths):
        arch = VitArch.from_size(
            args.size, num_layers=args.num_layers, num_classes=args.num_classes if index == 0 else 0
        )
        components = init_components(arch, args.image_size, generator)  # Frozen: no grad.
        paths.append(AssembledVit(arch, args.image_size, components))
    router = init_router(args.paths, args.num_classes, 0.8)
    adapters = [init_head_adapter(p.arch.width, args.num_classes) for p in paths[1:]]
    trainable = [t.requires_grad_(True) for t in router.values()]
    for adapter in adapters:
        trainable += [t.requires_grad_(True) for t in adapter.values()]
    return MultipathVit(paths, router, adapters, router_lr_mult=0.05), trainable


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    model, trainable = build(args)
    optimizer = make_optimizer(trainable, HPARAMS, args.rounds * args.steps * 4, 1)
    images = torch.rand(args.batch, 3, args.image_size, args.image_size)
    labels = torch.randint(0, args.num_classes, (args.batch,))

    def forward_paths() -> None:
        with torch.no_grad():
            for path in model.paths:
                path(images)

    def step() -> None:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(images), labels)
        loss.backward()
        optimizer.step()

    with torch.no_grad():
        outputs = [path(images) for path in model.paths]

    def cached_step() -> None:
        # The combination of MultipathVit.__call__ on given path outputs.
        optimizer.zero_grad()
        weights = model.route(outputs[0])
        logits = [outputs[0]] + [
            F.linear(rep, adapter["weight"], adapter["bias"])
            for rep, adapter in zip(outputs[1:], model.head_adapters, strict=True)
        ]
        stacked = torch.stack(logits, dim=-1)
        combined = torch.einsum("bcp,bp->bc", stacked.detach(), weights)
        total = stacked.sum(-1)
        loss = F.cross_entropy(combined - total.detach() + total, labels)
        loss.backward()
        optimizer.step()

    timed = {"forward": forward_paths, "step": step, "cached": cached_step}
    for fn in timed.values():  # Warm-up.
        for _ in range(3):
            fn()
    seconds: dict[str, list[float]] = {name: [] for name in timed}
    for round_index in range(args.rounds):
        order = list(timed) if round_index % 2 == 0 else list(reversed(timed))
        for name in order:
            start = time.perf_counter()
            for _ in range(args.steps):
                timed[name]()
            seconds[name].append((time.perf_counter() - start) / args.steps)
    ratios = [s / f for s, f in zip(seconds["step"], seconds["forward"], strict=True)]
    cached = [c / s for c, s in zip(seconds["cached"], seconds["step"], strict=True)]
    print(
        f"model: {args.paths} paths of {args.size} x{args.num_layers} at {args.image_size} px, "
        f"batch {args.batch}, {args.threads} thread(s), {args.rounds} rounds x {args.steps} steps"
    )
    for name, label in (("forward", "forward of the paths"), ("step", "multipath train step"),
                        ("cached", "step, path outputs reused")):  # fmt: skip
        median = statistics.median(seconds[name])
        print(f"{label:<28} {median * 1e3:8.3f} ms  {args.batch / median:10.0f} img/s")
    print(f"ratio: {statistics.median(ratios):.3f}")
    print(f"ratio_cached: {statistics.median(cached):.3f}")


if __name__ == "__main__":
    main()
