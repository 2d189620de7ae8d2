"""The `munet` command: parses arguments and calls the library.

Each command group lives in its own module here and exposes `register(subparsers)`, which adds
its subcommands and sets `func` (called with the parsed args; returns an exit code or None).
Heavy imports happen inside the handlers, so `munet --help` stays fast.

Expected failures (bad values, a locked agent, a read-only or full disk, a damaged state) end
as one line with a distinct exit code (see munet.cli.errors); `--debug`, anywhere on the
command line, adds the traceback.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys
import warnings
from typing import NoReturn

from munet import __version__
from munet.cli.errors import EXIT_INTERRUPTED, report_failure
from munet.cli.status_lines import status_every, status_lines
from munet.interrupts import defer_sigint, sigterm_as_interrupt
from munet.training.threads import prepare_openmp_env

# First, before any command imports torch: the OpenMP runtime reads its wait policy once, when
# torch loads it (see munet.training.threads).
prepare_openmp_env()

# Modules of this package that contribute subcommands, in the order `munet --help` lists them.
COMMAND_MODULES = (
    "agents",
    "config",
    "launch",
    "doctor",
    "export",
    "predict",
    "checkpoint",
    "pretrain",
    "tasks",
    "nasbench",
    "es",
    "search",
    "report",
    "benchmark",
)
DEBUG_FLAG = "--debug"


class _Parser(argparse.ArgumentParser):
    """argparse with munet's one error prefix: a usage error is ``munet: error: ...`` (after
    the command's usage line), as every other error, instead of ``munet run: error: ...``."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(2, f"munet: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="munet",
        description="Evolve modular multitask ML systems of shared ViT components.",
    )
    parser.add_argument("--version", action="version", version=f"munet {__version__}")
    parser.add_argument(
        DEBUG_FLAG,
        action="store_true",
        help="show tracebacks of errors (also accepted after the command)",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(f"munet.cli.{name}").register(subparsers)
    return parser


def _one_line_warnings(message, category, filename, lineno, file=None, line=None) -> None:
    """Warnings as `munet: warning: ...` lines (no source location: the user runs a command)."""
    print(f"munet: warning: {message}", file=file or sys.stderr)


def main(argv: list[str] | None = None) -> int:
    as_program = argv is None  # the `munet` command itself, not a caller in this process
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = DEBUG_FLAG in argv
    argv = [a for a in argv if a != DEBUG_FLAG]
    try:
        # Building the parser imports every command's module (not torch: the handlers do;
        # tests/cli/test_help_imports.py): a Ctrl-C then is the user's too, and exits 130
        # like one a moment later. It is taken once the imports are done: raised inside one,
        # it can land in an `exec` (dataclasses build their methods so), and CPython 3.11 then
        # ends a `python -m munet` run by SIGINT at exit even though the interrupt was caught
        # (exit -2, not 130).
        with defer_sigint():
            parser = build_parser()
            args = parser.parse_args(argv)
    except KeyboardInterrupt:
        # A module may be half imported: say it without report_failure's imports (they import
        # torch).
        print("munet: error: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    if getattr(args, "func", None) is None:
        parser.print_help()
        return 2
    # Each line reaches a log or a pipe as it is written, as in a terminal (a block-buffered
    # stdout held a demo's first lines back for minutes).
    if hasattr(sys.stdout, "reconfigure") and not sys.stdout.line_buffering:
        sys.stdout.reconfigure(line_buffering=True)
    try:
        every = status_every(args)  # $MUNET_PROGRESS_EVERY, checked before the command runs
    except ValueError as err:
        print(f"munet: error: {err}", file=sys.stderr)
        return 2
    previous_showwarning = warnings.showwarning
    if not debug:
        warnings.showwarning = _one_line_warnings
    try:
        # SIGTERM (a scheduler's stop, `kill`) is taken like Ctrl-C: cleanup, then exit 143.
        # A long command's first line and status lines: munet.cli.status_lines.
        with sigterm_as_interrupt(), status_lines(args, every):
            code = args.func(args)
            sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
    except BrokenPipeError as err:
        if err.filename is None:
            return _stdout_closed()
        return report_failure(err, debug, getattr(args, "state_dir", None))
    except (Exception, KeyboardInterrupt) as err:  # noqa: BLE001  (classified, never silent)
        out = getattr(args, "out", None)
        code = report_failure(
            err, debug, getattr(args, "state_dir", None), out if isinstance(out, str) else None
        )
        if as_program and isinstance(err, KeyboardInterrupt):
            # Asked to stop (SIGTERM, Ctrl-C), with the cleanup done: the interpreter's exit
            # would first collect every object of the run, torch's included (3-4 s measured
            # at load 12 on 2 cores); frozen, they are skipped. atexit handlers, thread joins
            # and output flushing still run.
            gc.freeze()
        return code
    finally:
        warnings.showwarning = previous_showwarning
    return int(code or 0)


def _stdout_closed() -> int:
    """The reader of stdout went away (``munet predict ... | head -2``): what it wanted it
    got, so exit 0 quietly, as ``cat`` or ``ls`` piped to ``head`` do. The output left is
    dropped (stdout points at /dev/null, so Python's exit-time flush cannot fail again)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 0


if __name__ == "__main__":
    sys.exit(main())
