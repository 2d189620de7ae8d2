"""`munet checkpoint list|fetch`: the pretrained ViT checkpoints of the µNet presets, and the
built-in pretrained roots shipped with munet (`munet.pretrain.roots`)."""

from __future__ import annotations

import argparse
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    """Adds `checkpoint list` and `checkpoint fetch NAME [--dest DIR]`."""
    parser = subparsers.add_parser(
        "checkpoint", help="list or download the presets' pretrained ViT checkpoints"
    )
    commands = parser.add_subparsers(dest="checkpoint_command", metavar="SUBCOMMAND")
    parser.set_defaults(func=lambda args: _usage(parser))

    listing = commands.add_parser("list", help="registered checkpoints and whether they are here")
    listing.add_argument("--dest", help="directory to look in (default: the checkpoint cache)")
    listing.set_defaults(func=_list)

    fetch = commands.add_parser("fetch", help="download a checkpoint (needs internet)")
    fetch.add_argument("name", help="registered name, e.g. VitT3 (see `munet checkpoint list`)")
    fetch.add_argument("--dest", help="directory to put it in (default: the checkpoint cache)")
    fetch.add_argument("--timeout", type=float, default=30.0, help="network timeout, seconds")
    fetch.set_defaults(func=_fetch)


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def _list(args: argparse.Namespace) -> int:
    from munet.models.registry import checkpoint_specs, default_checkpoint_dir, find_checkpoint

    directory = args.dest or default_checkpoint_dir()
    print(f"checkpoint directory: {directory}")
    for name, spec in checkpoint_specs().items():
        found = find_checkpoint(name, directory)
        status = "present" if found else "missing"
        print(
            f"{name:6} {spec.size:6} layers={spec.num_layers:<3} image={spec.image_size:<4} "
            f"{status:8} {spec.url}"
        )
    _list_builtin_roots()
    return 0


def _list_builtin_roots() -> None:
    """The shipped roots: preset, file, size, how they were made (from their cards)."""
    from munet.pretrain import builtin_roots

    roots = builtin_roots()
    print(f"built-in pretrained roots (munet root --root pretrained): {len(roots)}")
    for name, root in roots.items():
        card = root.card()
        recipe = card.get("recipe", {})
        print(
            f"root {name:6} {recipe.get('model', '?'):6} {recipe.get('recipe', '?')} "
            f"steps={card.get('steps')} seed={card.get('seed')} dtype={card.get('dtype')} "
            f"{root.file.stat().st_size // 1024} KiB "
            f"{'default' if card.get('default_root', True) else 'opt-in (--root pretrained)'}  "
            f"source: {root.file} "
            f"(made by: {card.get('command') or 'munet pretrain'})"
        )


def _fetch(args: argparse.Namespace) -> int:
    from munet.models.registry import (
        CheckpointUnavailable,
        checkpoint_spec,
        default_checkpoint_dir,
        fetch_checkpoint,
    )

    try:
        spec = checkpoint_spec(args.name)
    except KeyError as error:
        print(error.args[0], file=sys.stderr)
        return 2
    print(f"fetching {spec.url} into {args.dest or default_checkpoint_dir()}", file=sys.stderr)
    try:
        path = fetch_checkpoint(args.name, args.dest, timeout_s=args.timeout)
    except CheckpointUnavailable as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(path)
    return 0
