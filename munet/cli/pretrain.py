"""`munet pretrain --agent PRESET`: pretrain a preset's root model on procedural images.

    munet pretrain --agent VitCpu --steps 3000 --out pretrain/VitCpu      # resumable
    munet root --agent VitCpu --root checkpoint \
        --set checkpoint_path=pretrain/VitCpu/root.safetensors

Rerunning the same command resumes from the last checkpoint in --out (also after kill -9);
a second process on the same --out exits 3 (the work dir is locked while a run holds it).
Recipe: fractal, FractalDB's iterated function systems (docs/pretrain.md).
"""

from __future__ import annotations

import argparse
import shlex
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    """Adds `pretrain`."""
    from munet.cli.agents import AGENT_HELP

    parser = subparsers.add_parser(
        "pretrain",
        help="pretrain a preset's root model on procedural images (offline, resumable)",
        description=(
            "Pretrain the root model of a singlepath preset on formula-driven images generated "
            "on the fly (never the evaluation tasks' data). Writes OUT/root.safetensors and "
            "OUT/card.json; rerun to resume."
        ),
    )
    parser.add_argument("--agent", required=True, help=AGENT_HELP)
    budget = parser.add_mutually_exclusive_group(required=True)
    budget.add_argument("--steps", type=int, help="train steps (deterministic budget)")
    budget.add_argument("--minutes", type=float, help="wall-clock budget, turned into steps")
    parser.add_argument("--out", required=True, help="work dir: state, root and card")
    for flag, field, help_text in SPEC_OPTIONS:
        # No default here: it is the spec's, read when the command runs.
        metavar = flag[2:].upper().replace("-", "_")
        parser.add_argument(
            flag, dest=field, type=SPEC_TYPES[field], metavar=metavar, help=help_text
        )
    parser.add_argument(
        "--image-size", type=int, help="image side (default: the preset's ds_image_size)"
    )
    parser.add_argument(
        "--checkpoint-every", type=int, default=100, help="steps between resumable checkpoints"
    )
    parser.add_argument(
        "--dtype",
        default="float32",
        choices=["float32", "float16", "bfloat16"],
        help="dtype of the written root file (float32)",
    )
    parser.add_argument(
        "--eval-examples", type=int, default=1024, help="held-out images scored per checkpoint"
    )
    parser.add_argument("--device", help="cpu or cuda (default: cuda when available)")
    parser.add_argument(
        "--precision",
        default="auto",
        choices=["auto", "fp32", "bf16"],
        help="auto (default): bf16 autocast on a GPU with native bf16, the preset's precision "
        "on a CPU",
    )
    parser.add_argument(
        "--max-seconds",
        type=float,
        help="end this session with a checkpoint after this much training (rerun to go on)",
    )
    parser.add_argument(
        "--threads", type=int, default=0, help="intra-op threads (0: all usable cores)"
    )
    parser.add_argument(
        "--render",
        default="auto",
        choices=["auto", "thread", "process"],
        help="where batches are rendered, ahead of training: a separate process (CPU) or a "
        "second thread (GPU: on the device); auto (default): process on a CPU, thread on a GPU. "
        "The weights are the same either way",
    )
    parser.add_argument(
        "--progress", action=argparse.BooleanOptionalAction, default=True, help="progress bar"
    )
    parser.set_defaults(func=_pretrain)


# The options that set a PretrainSpec field, as (flag, field, help); the default is the
# field's own. A new spec field needs one row here and its type in SPEC_TYPES.
SPEC_OPTIONS = (
    ("--recipe", "recipe", "the image recipe: fractal (the default and only one: FractalDB's "
     "iterated function systems; docs/pretrain.md)"),
    ("--classes", "num_classes", "pretraining classes (100)"),
    ("--instances", "instances", "up to this many instances of the class per image, 1..K at "
     "random (1: one figure, the default)"),
    ("--thumbnail", "thumbnail", "also regress a SIDE x SIDE colour thumbnail of each image "
     "from the class token, so the features keep colour and layout (0: off, the default; "
     "docs/pretrain.md)"),
    ("--label-smoothing", "label_smoothing", "label smoothing of the class loss (0.1, the "
     "default; 0: plain cross-entropy)"),
    ("--batch-size", "batch_size", "batch size (128)"),
    ("--lr", "lr", "AdamW peak learning rate (0.001)"),
    ("--weight-decay", "weight_decay", "AdamW weight decay of the kernels (0.05)"),
    ("--warmup-ratio", "warmup_ratio", "share of the steps spent warming the learning rate "
     "up, before its cosine decay (0.05)"),
    ("--seed", "seed", "seed of classes, data and init (0)"),
)  # fmt: skip


# The type of each option of SPEC_OPTIONS: its spec field's (the type of the field's default;
# tests/cli/test_help_imports.py checks it), known without importing the spec's module.
SPEC_TYPES: dict[str, type] = {
    "recipe": str,
    "num_classes": int,
    "instances": int,
    "thumbnail": int,
    "label_smoothing": float,
    "batch_size": int,
    "lr": float,
    "weight_decay": float,
    "warmup_ratio": float,
    "seed": int,
}


def _spec_default(field: str):
    from munet.pretrain.spec import PretrainSpec

    return PretrainSpec.__dataclass_fields__[field].default


def _fill_spec_defaults(args: argparse.Namespace) -> None:
    """Sets each spec option not given to its spec field's default."""
    for _, field, _ in SPEC_OPTIONS:
        if getattr(args, field) is None:
            setattr(args, field, _spec_default(field))


def _recorded() -> list[tuple[str, str, object]]:
    """The options that decide the weights, as (flag, attribute, default): the card's command
    names those that differ from their defaults, so it reruns the same pretraining."""
    spec_options = [(flag, field, _spec_default(field)) for flag, field, _ in SPEC_OPTIONS]
    return [
        *spec_options,
        ("--image-size", "image_size", None),
        ("--checkpoint-every", "checkpoint_every", 100),
        ("--dtype", "dtype", "float32"),
        ("--precision", "precision", "auto"),
    ]


def _command_line(args: argparse.Namespace) -> str:
    """The `munet pretrain` command that makes this root (for the card)."""
    parts = ["munet", "pretrain", "--agent", args.agent]
    if args.steps is not None:
        parts += ["--steps", str(args.steps)]
    else:
        parts += ["--minutes", str(args.minutes)]
    parts += ["--out", args.out]
    for flag, attribute, default in _recorded():
        value = getattr(args, attribute)
        if value != default:
            parts += [flag, str(value)]
    return shlex.join(parts)


def _pretrain(args: argparse.Namespace) -> int:
    import json
    import logging

    import torch

    from munet.cli.errors import EXIT_LOCKED
    from munet.config import ConfigError, get_preset
    from munet.pretrain.loop import PretrainLockedError, PretrainSpec, PretrainStateError, pretrain
    from munet.training.threads import apply_thread_policy

    _fill_spec_defaults(args)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    try:
        config = get_preset(args.agent)
    except ConfigError as err:
        print(f"munet: error: {err}", file=sys.stderr)
        return 2
    if config.is_multipath:
        print(
            f"munet: error: {args.agent} combines paths; pretrain its singlepath preset "
            f"{config.singlepath_agent}",
            file=sys.stderr,
        )
        return 2
    hparams = config.hparams_defaults
    try:
        spec = PretrainSpec(
            preset=config.name,
            model=config.model,
            num_layers=int(hparams["num_layers"]),
            image_size=args.image_size or int(hparams["ds_image_size"]),
            **{field: getattr(args, field) for _, field, _ in SPEC_OPTIONS},
        ).validate()
        threads = apply_thread_policy(args.threads)
        device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
        precision = _precision(args.precision, config.precision, device)
        result = pretrain(
            spec,
            args.out,
            steps=args.steps,
            minutes=args.minutes,
            checkpoint_every=args.checkpoint_every,
            root_dtype=args.dtype,
            device=device,
            precision=precision,
            max_seconds=args.max_seconds,
            progress=args.progress,
            command=_command_line(args),
            eval_examples=args.eval_examples,
            render=args.render,
        )
    except PretrainLockedError as err:
        print(f"munet: error: {err}", file=sys.stderr)
        return EXIT_LOCKED
    except PretrainStateError as err:
        print(f"munet: error: {err}", file=sys.stderr)
        return 4
    except ValueError as err:
        print(f"munet: error: {err}", file=sys.stderr)
        return 2
    card = result.card
    print(
        f"pretrained {config.name} ({spec.recipe}, {spec.num_classes} classes): "
        f"{card['steps']}/{card['planned_steps']} steps in {card['seconds']:.0f} s on "
        f"{device} ({precision}, {threads} threads, rendering in a {card['render']}), "
        f"held-out accuracy {card['val_accuracy']:.3f}; root {result.root_file} "
        f"(sha256 {card['sha256'][:12]}); card {result.card_file}"
    )
    print(json.dumps({"root": str(result.root_file), "card": str(result.card_file)}))
    return 0


def _precision(requested: str, preset_precision: str, device: str) -> str:
    """``fp32`` or ``bf16`` for the run: ``auto`` is bf16 on a GPU with native bf16, else the
    preset's precision resolved for the device (VitCpu's is fp32: faster on CPUs)."""
    from munet.training.precision import resolve_precision

    if requested != "auto":
        return requested
    if device.startswith("cuda"):
        return resolve_precision("auto", device)
    return resolve_precision(preset_precision, device)
