"""`munet checkpoint list|fetch|inspect`: the pretrained ViT checkpoints of the µNet presets,
the built-in pretrained roots shipped with munet (`munet.pretrain.roots`), and what munet reads
from a checkpoint a user brings.

`fetch` exits 9 when the checkpoint cannot be downloaded (no network, a server error, a
corrupt download), naming the URL and where to put a copy made elsewhere; 2 for an unknown
name.
"""

from __future__ import annotations

import argparse
import os
import sys

from munet.cli.errors import EXIT_OS_ERROR


def register(subparsers: argparse._SubParsersAction) -> None:
    """Adds `checkpoint list`, `checkpoint fetch NAME [--dest DIR]`, `checkpoint inspect PATH`."""
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

    inspect = commands.add_parser(
        "inspect",
        help="what munet reads from a checkpoint file or Hugging Face folder",
        description=(
            "Print the detected layout, blocks, heads, the shapes a config.json states and "
            "the tensors as munet names (with the file keys they come from). Formats: "
            "docs/models.md#checkpoint-formats."
        ),
    )
    inspect.add_argument("path", help=".npz, .safetensors, .pth/.pt/.bin, or a folder")
    inspect.set_defaults(func=_inspect)


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
        # No network, a server error or a corrupt download: not the user's input, not a bug.
        print(f"munet: error: {error}", file=sys.stderr)
        return EXIT_OS_ERROR
    print(path)
    return 0


def _inspect(args: argparse.Namespace) -> int:
    from munet.models.checkpoints import read_checkpoint
    from munet.models.checkpoints.common import MUNET_BLOCK

    if not os.path.exists(args.path):
        print(f"munet: error: no checkpoint file or folder at {args.path}", file=sys.stderr)
        return 2
    # A file munet cannot read is bad input (exit 2), reported by main() in one line.
    raw = read_checkpoint(args.path)
    print(f"layout: {raw.layout}")
    print(f"encoder blocks: {raw.depth}")
    print(f"attention heads: {raw.num_heads if raw.num_heads is not None else 'not stated'}")
    for field, (where, value) in raw.declared.items():
        print(f"stated: {field} {value} ({where})")
    head = raw.tensors.get("head.weight")
    print(f"head: {'none' if head is None else f'{head.shape[0]} classes'}")
    # In model order (a hybrid's stem first, stage by stage); block 0 stands for every block
    # (the others have the same shapes).
    order = ("stem_root", "stem_block", "embedding", "cls", "posembed_input", "encoderblock_0",
             "encoder_norm", "head")  # fmt: skip

    def rank(name: str) -> tuple[int, int, str]:
        component = name.split(".")[0]
        if component.startswith("stem_block"):
            return order.index("stem_block"), int(component.removeprefix("stem_block")), name
        return order.index(component), 0, name

    shown = [
        name
        for name in raw.tensors
        if not ((match := MUNET_BLOCK.fullmatch(name)) and match.group(1) != "0")
    ]
    for name in sorted(shown, key=rank):
        shape = str(tuple(raw.tensors[name].shape))
        print(f"  {name:32} {shape:16} <- {raw.sources[name]}")
    return 0
