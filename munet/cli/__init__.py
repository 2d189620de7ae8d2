"""The `munet` command: parses arguments and calls the library.

Each command group lives in its own module here and exposes `register(subparsers)`, which adds
its subcommands and sets `func` (called with the parsed args; returns an exit code or None).
Heavy imports happen inside the handlers, so `munet --help` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from munet.training.threads import prepare_openmp_env

# First, before any command imports torch: the OpenMP runtime reads its wait policy once, when
# torch loads it (see munet.training.threads).
prepare_openmp_env()

# Modules of this package that contribute subcommands, in the order `munet --help` lists them.
COMMAND_MODULES = (
    "agents", "launch", "export", "predict", "checkpoint", "tasks", "nasbench", "es", "search",
    "report",
)  # fmt: skip


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="munet",
        description="Evolve modular multitask ML systems of shared ViT components.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(f"munet.cli.{name}").register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help()
        return 2
    try:
        code = args.func(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return int(code or 0)


if __name__ == "__main__":
    sys.exit(main())
