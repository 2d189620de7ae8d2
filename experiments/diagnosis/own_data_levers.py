"""Why munet trails a small CNN on the own-data shapes task: one lever at a time.

The task of benchmarks/own_data_vs_cnn.py (5 drawn-shape classes at 48 px, random colours, size,
position and rotation) written as ``ROOT/train`` (``--per-class`` images per class) and
``ROOT/test`` (``--held-out`` new ones, another seed), so every arm is scored on the same
held-out images. Arms:

- ``vit``: the ``VitCpu`` model trained alone for ``--steps`` steps by munet's own code
  (munet.agents.IndependentAgent: the preset's optimizer, schedule, validation and
  preprocessing, default hparams) once per setting of ``--arm``: a label and
  ``--set``-style overrides, e.g. ``size32=ds_image_size=32`` (several overrides joined by
  ``;``), from each root of ``--roots`` (``random_init``, ``pretrained`` or a file).
- ``cnn``: the 56k-parameter CNN of own_data_vs_cnn.py trained for ``--cnn-seconds`` at 48 px
  and at 16 px (``VitCpu``'s default input side, resized with antialiasing): whether the input
  size alone explains the gap.

Prints each arm's held-out accuracy and time, and::

    ratio: R   (ARM / cnn at 48 px, held-out accuracy)

Run: ``python experiments/diagnosis/own_data_levers.py`` (about 15 minutes on 2 cores);
``--quick``: a tiny smoke test.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

# The maintained benchmarks (their own_data_vs_cnn.py and root_source.py), then the repository
# (munet without an install).
REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import own_data_vs_cnn  # noqa: E402
from own_data_split_rule import parse_arm  # noqa: E402
from root_source import resolve_root  # noqa: E402

DEFAULT_ARMS = [
    "default=",
    "size32=ds_image_size=32",
    "crop_flip=ds_area_range_min=0.5;ds_flip_left_right=true",
]
SIZES = "hparams_mutation_ranges.ds_image_size=[8, 12, 16, 24, 32, 48]"


def train_vit(folder: Path, spec: str, arm: list[str], args: argparse.Namespace) -> dict:
    """One VitCpu model trained alone on the folder task; its held-out (test) accuracy."""
    from munet.agents import IndependentAgent, create_root_model, default_hparams
    from munet.config import apply_overrides, get_preset

    root = resolve_root(spec, "VitCpu")
    overrides = [*root.overrides, f"data=folder:{folder}", f"seed={args.seed}", SIZES]
    config = apply_overrides(get_preset("VitCpu"), [*overrides, *args.overrides, *arm])
    with tempfile.TemporaryDirectory(prefix="munet-levers-") as state_dir:
        create_root_model(config, state_dir, root.kind)
        agent = IndependentAgent(
            config, "shapes", state_dir, progress=False, echo=lambda _: None, root_kind=root.kind
        )
        path = agent.train_alone(default_hparams(config), args.steps)
    return {
        "accuracy": float(path.metrics["test_quality"]),
        "validation": float(path.metrics["quality"]),
        "seconds": float(path.metrics["seconds"]),
    }


def train_cnn(folder: Path, side: int, args: argparse.Namespace) -> dict:
    """The small CNN at ``side`` px for ``--cnn-seconds``; its held-out accuracy."""
    return own_data_vs_cnn.run_cnn(
        folder / "train", folder / "test", args.cnn_seconds, args.seed, threads=1, side=side
    )


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--roots", nargs="+", default=["random_init", "pretrained"])
    parser.add_argument("--arm", action="append", default=None, metavar="LABEL=OVERRIDES")
    parser.add_argument("--steps", type=int, default=1152, help="train steps of each ViT arm")
    parser.add_argument("--cnn-seconds", type=float, default=60.0)
    parser.add_argument("--per-class", type=int, default=300)
    parser.add_argument("--held-out", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument("--out", default=None, help="write the results as JSON here")
    parser.add_argument("--quick", action="store_true", help="tiny smoke test")
    args = parser.parse_args(argv)
    arms = [parse_arm(a) for a in (args.arm or DEFAULT_ARMS)]
    if args.quick:
        args.per_class, args.held_out, args.steps, args.cnn_seconds = 12, 4, 4, 1.0
        args.overrides = [*own_data_vs_cnn.QUICK_OVERRIDES, *args.overrides]
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="munet-levers-data-") as tmp:
        folder = Path(tmp)
        own_data_vs_cnn.write_folder(folder / "train", args.per_class, seed=args.seed)
        own_data_vs_cnn.write_folder(folder / "test", args.held_out, seed=args.seed + 10_000)
        print(f"load average {os.getloadavg()[0]:.1f}", flush=True)
        for side in (own_data_vs_cnn.IMAGE_SIZE, 16):
            results[f"cnn {side}px"] = train_cnn(folder, side, args)
            print(f"cnn {side}px: held-out {results[f'cnn {side}px']['accuracy']:.3f}", flush=True)
        for spec in args.roots:
            for label, arm in arms:
                start = time.perf_counter()
                name = f"vit {Path(spec).stem if os.path.isfile(spec) else spec} {label}"
                results[name] = {**train_vit(folder, spec, arm, args), "overrides": arm}
                print(
                    f"{name}: held-out {results[name]['accuracy']:.3f} validation "
                    f"{results[name]['validation']:.3f} ({time.perf_counter() - start:.0f}s)",
                    flush=True,
                )
    baseline = results[f"cnn {own_data_vs_cnn.IMAGE_SIZE}px"]["accuracy"]
    for name, result in results.items():
        if name != f"cnn {own_data_vs_cnn.IMAGE_SIZE}px":
            ratio = result["accuracy"] / baseline if baseline else float("inf")
            print(f"ratio: {ratio:.3f} ({name} / cnn {own_data_vs_cnn.IMAGE_SIZE}px, held-out)")
    print(f"load average {os.getloadavg()[0]:.1f}")
    summary = {"results": results, "settings": vars(args)}
    if args.out:
        Path(args.out).write_text(json.dumps(summary, indent=1))
    return summary


if __name__ == "__main__":
    main()
