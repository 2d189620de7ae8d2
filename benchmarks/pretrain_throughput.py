"""Speed of ``munet pretrain``'s loop against a plain PyTorch loop, and the generator's share.

In one run, on one device, for the preset's model at the given recipe and image size:

- **munet**: :func:`munet.pretrain.loop.pretrain` itself (what ``munet pretrain`` runs): images
  rendered on the fly while the current batch trains, in a separate process (``--render
  process``, a CPU's default) or on a second thread (``thread``, on the training device: a
  GPU's), each timed in every round; a checkpoint (held-out evaluation of ``--eval-examples``
  images, state, root and card written) every ``--steps`` steps, as ``munet pretrain
  --checkpoint-every``.
  Timed from its card: the second ``--steps`` steps, checkpoint included (the first ones warm
  up).
- **plain**: a textbook loop on the same model (same init, AdamW, clip, loss, autocast) over
  batches rendered *before* timing and held on the device: the ceiling without a generator.
- **generator**: the recipe rendering batches alone on the device (images/s), and its share of
  a plain training step's time (above 1.0 it would be the bottleneck even when overlapped).

Precision: the preset's (``bf16`` autocast on CUDA, VitCpu's ``fp32`` on a CPU) unless
``--precision``. Rounds alternate the two loops; figures are medians. Prints ``ratio:``
munet / plain images/s (goal >= 0.9).

    python benchmarks/pretrain_throughput.py --agent VitCpu --classes 100 --instances 3
    python benchmarks/pretrain_throughput.py --agent VitT3 --device cuda --steps 200
    python benchmarks/pretrain_throughput.py --quick                 # tiny CPU smoke run
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from munet.training.threads import prepare_openmp_env  # noqa: E402

prepare_openmp_env()

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from munet.config import get_preset  # noqa: E402
from munet.pretrain.loop import PretrainSpec, batch_for_step, pretrain  # noqa: E402
from munet.pretrain.model import new_model, new_optimizer  # noqa: E402
from munet.training.precision import resolve_precision  # noqa: E402


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agent", default="VitCpu")
    parser.add_argument("--recipe", default="fractal")
    parser.add_argument("--classes", type=int, default=1000)
    parser.add_argument("--instances", type=int, default=1, help="instances per image, up to")
    parser.add_argument("--image-size", type=int, help="default: the preset's")
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--steps", type=int, default=100, help="timed steps (and warm-up steps)")
    parser.add_argument("--eval-examples", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--precision", choices=["fp32", "bf16"], help="default: the preset's")
    parser.add_argument(
        "--other-precision", choices=["fp32", "bf16"],
        help="also time the plain loop at this precision every round (is bf16 worth it on "
        "this CPU?): a ratio: line against --precision's",
    )  # fmt: skip
    parser.add_argument("--num-layers", type=int, help="default: the preset's")
    parser.add_argument(
        "--render", nargs="+", choices=["thread", "process"],
        help="where munet renders its batches, each timed in every round (default: both on a "
        "CPU, thread on a GPU); the first is the ratio: line's",
    )  # fmt: skip
    parser.add_argument("--threads", type=int, help="intra-op threads (default: all cores)")
    parser.add_argument("--quick", action="store_true", help="tiny CPU smoke run")
    args = parser.parse_args(argv)
    if args.quick:
        args.classes, args.image_size, args.batch_size = 6, 8, 8
        args.steps, args.eval_examples, args.rounds, args.num_layers = 3, 8, 1, 1
    return args


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def plain_images_per_second(spec, batches, steps, device, precision) -> float:
    """The textbook loop over pre-rendered device batches: warm-up ``steps``, then timed."""
    model = new_model(spec).to(device)
    optimizer = new_optimizer(model, spec)

    def step(images, labels):
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=precision == "bf16"):
            loss = F.cross_entropy(model(images).float(), labels, label_smoothing=0.1)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()

    for images, labels in batches[:steps]:
        step(images, labels)
    _sync(device)
    start = time.perf_counter()
    for images, labels in batches[steps:]:
        step(images, labels)
    _sync(device)
    return steps * spec.batch_size / (time.perf_counter() - start)


def munet_images_per_second(spec, steps, device, precision, eval_examples, render) -> float:
    """``pretrain`` for 2 x ``steps`` steps, a checkpoint every ``steps``: the second half."""
    with tempfile.TemporaryDirectory(prefix="munet-throughput-") as work:
        result = pretrain(
            spec, work, steps=2 * steps, checkpoint_every=steps, device=str(device),
            precision=precision, progress=False, eval_examples=eval_examples, render=render,
        )  # fmt: skip
    first, second = result.card["history"][:2]
    return steps * spec.batch_size / max(1e-9, second["seconds"] - first["seconds"])


def generator_images_per_second(spec, recipe, steps, device) -> float:
    batch_for_step(spec, recipe, 0)
    _sync(device)
    start = time.perf_counter()
    for step in range(steps):
        batch_for_step(spec, recipe, step)
    _sync(device)
    return steps * spec.batch_size / (time.perf_counter() - start)


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    config = get_preset(args.agent)
    hparams = config.hparams_defaults
    precision = args.precision or (
        resolve_precision("auto", device) if device.type == "cuda"
        else resolve_precision(config.precision, device)
    )  # fmt: skip
    spec = PretrainSpec(
        preset=config.name, model=config.model,
        num_layers=args.num_layers or int(hparams["num_layers"]),
        image_size=args.image_size or int(hparams["ds_image_size"]), recipe=args.recipe,
        num_classes=args.classes, batch_size=args.batch_size, instances=args.instances,
    ).validate()  # fmt: skip
    recipe = spec.make_recipe().to(device)
    batches = [batch_for_step(spec, recipe, s) for s in range(2 * args.steps)]
    print(
        f"{args.agent} ({spec.model}, {spec.num_layers} blocks, {spec.image_size} px), "
        f"{spec.recipe} {spec.num_classes} classes, batch {spec.batch_size}, {device} "
        f"{precision}, {torch.get_num_threads()} threads, {args.steps} timed steps",
        flush=True,
    )
    renders = args.render or (["process", "thread"] if device.type == "cpu" else ["thread"])
    plain, ours, other = [], {render: [] for render in renders}, []
    for index in range(args.rounds):
        names = ["plain", *renders, *(["other"] if args.other_precision else [])]
        order = names if index % 2 == 0 else names[::-1]
        for name in order:
            if name == "plain":
                plain.append(plain_images_per_second(spec, batches, args.steps, device, precision))
            elif name == "other":
                other.append(plain_images_per_second(
                    spec, batches, args.steps, device, args.other_precision
                ))  # fmt: skip
            else:
                ours[name].append(munet_images_per_second(
                    spec, args.steps, device, precision, args.eval_examples, name
                ))  # fmt: skip
        timed = ", ".join(f"munet ({render}) {ours[render][-1]:.0f}" for render in renders)
        print(f"round {index + 1}: plain {plain[-1]:.0f} img/s, {timed} img/s", flush=True)
    generated = generator_images_per_second(spec, recipe, args.steps, device)
    plain_rate = statistics.median(plain)
    share = plain_rate / generated
    print(f"plain loop (pre-rendered batches): {plain_rate:.0f} images/s")
    print(
        f"generator alone: {generated:.0f} images/s on {device}; rendering takes {share:.2f} "
        f"of a training step's time (overlapped with it)"
    )
    figures = {"plain": plain_rate, "generator": generated, "generator_share": share}
    if other:
        ratio = statistics.median(o / p for o, p in zip(other, plain, strict=True))
        print(f"plain loop at {args.other_precision}: {statistics.median(other):.0f} images/s")
        print(f"ratio: {ratio:.3f} (plain PyTorch at {args.other_precision} / at {precision}, "
              "images/s)")  # fmt: skip
        figures["other_precision"] = {"plain": statistics.median(other), "ratio": ratio}
    for render in reversed(renders):  # The first mode's ratio: line comes last.
        rate = statistics.median(ours[render])
        ratio = statistics.median(o / p for o, p in zip(ours[render], plain, strict=True))
        print(
            f"munet pretrain loop (rendered in a {render}, checkpoint every {args.steps} "
            f"steps): {rate:.0f} images/s"
        )
        print(f"ratio: {ratio:.3f} (munet pretrain, rendering in a {render} / plain PyTorch, "
              f"images/s; goal >= 0.9)")  # fmt: skip
        figures[render] = {"munet": rate, "ratio": ratio}
    figures.update(figures[renders[0]])
    return figures


if __name__ == "__main__":
    main()
