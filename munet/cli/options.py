"""Options shared by `munet run`, `launch` and `demo`: data splits and experiment tracking.

Kept apart from the command modules so each command adds them with one call.
"""

from __future__ import annotations

import argparse

# The split rules' sizes as the help states them. munet.tasks.splits holds them
# (DEFAULT_SHARE, OWN_DATA_SHARE, OWN_DATA_MIN_EXAMPLES, OWN_DATA_MAX_SHARE), but importing it
# imports torch, which `--help` must not; tests/cli/test_help_defaults.py checks these against
# it, so the two cannot drift apart.
SEED_SHARE = "5%"
OWN_DATA_SIZE = "max(10%, 200 examples), at most 20%,"


def add_split_options(parser: argparse.ArgumentParser) -> None:
    """`--val-split` and `--test-split` (munet.tasks.splits)."""
    flags = (("--val-split", "validation", "--test-split"), ("--test-split", "test", "--val-split"))
    for flag, split, other in flags:
        parser.add_argument(
            flag,
            default=None,
            metavar="X",
            help=(
                f"carve the {split} split from the train pool, stratified by class: a fraction "
                "in (0, 1) or a count of examples; stored with the state like --data (default: "
                f"the data's own {split} split; where it has none, a stratified {OWN_DATA_SIZE} "
                "of the pool for --data folder:, npz: or hf: (the own-data rule) and the "
                f"seed's {SEED_SHARE} slice for munet's tasks and tfds:; with {other} given, "
                f"a stratified {SEED_SHARE})"
            ).replace("%", "%%"),  # argparse formats help with %
        )


def split_rule_of(args: argparse.Namespace) -> str | None:
    """The split rule `--val-split`/`--test-split` ask for, or None when neither is given.

    Raises:
        ValueError: a size that is no fraction in (0, 1) or count >= 1 (naming the flag).
    """
    from munet.tasks.splits import parse_split_size, split_rule

    sizes = {}
    for name, flag in (("validation", "val_split"), ("test", "test_split")):
        text = getattr(args, flag, None)
        if text is not None:
            sizes[name] = parse_split_size(text, f"--{flag.replace('_', '-')}")
    return split_rule(**sizes) if sizes else None


def add_tracking_options(parser: argparse.ArgumentParser) -> None:
    """`--log-dir`, `--wandb`, `--wandb-project` (munet.tracking)."""
    parser.add_argument(
        "--log-dir",
        default=None,
        metavar="DIR",
        help="write TensorBoard event files there: per-path curves, generations, cycles "
        "(needs munet-evolve[tensorboard])",
    )
    parser.add_argument(
        "--wandb",
        action="store_true",
        help="log the same to Weights & Biases (needs munet-evolve[wandb]; WANDB_MODE=offline "
        "works)",
    )
    parser.add_argument(
        "--wandb-project",
        default=None,
        metavar="NAME",
        help="W&B project (default: munet-<state dir name>)",
    )


def tracking_settings(args: argparse.Namespace):
    """The `TrackingSettings` of the tracking options (None when none is asked for).

    Raises:
        ImportError: a backend's package is missing, naming the extra to install.
    """
    from munet.tracking import TrackingSettings

    settings = TrackingSettings(
        log_dir=getattr(args, "log_dir", None),
        wandb=bool(getattr(args, "wandb", False)),
        wandb_project=getattr(args, "wandb_project", None),
        state_dir=str(getattr(args, "state_dir", "")),
        quiet=bool(getattr(args, "quiet", False)),
    )
    if not settings.enabled:
        return None
    settings.check_available()
    return settings
