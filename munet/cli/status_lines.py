"""A long command's first line, at once, and in a log its status lines (on stderr, beside the
warnings and the bars a terminal shows).

A command's own first line can be minutes away (torch's import under load, a root model to
make, a first agent cycle in a worker process); a log that stays empty that long reads as a
hang. So, before the command's handler imports anything heavy:

- ``munet demo: started`` (the commands of ``FIRST_LINE``), in a terminal as in a log;
- where stderr is not a terminal (no bar shows), every ``$MUNET_PROGRESS_EVERY`` seconds
  (default 30; 0: none) ``munet demo: running 4m10s; ...`` with the time left of what runs
  (munet.progress.Heartbeat).

``-q`` and ``--no-progress`` turn both off. Nothing here imports torch.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator

from munet.progress import Heartbeat, heartbeat_seconds, interactive, stderr_line

#: Commands whose first own output can take minutes: a start line and, in a log, status lines.
FIRST_LINE = frozenset(
    {"run", "demo", "launch", "test", "pretrain", "nasbench", "es", "search", "benchmark"}
)
#: Commands that only get status lines (their output is data a script reads; a start line
#: would be noise on a quick call): a long one still shows it is alive.
STATUS_ONLY = frozenset({"predict"})


def command_label(args: argparse.Namespace) -> str:
    """``munet demo``, ``munet es lr``: the command as typed (its subcommand, if any)."""
    words = ["munet", args.command]
    for name in ("es_command", "nasbench_command", "checkpoint_command", "tasks_command"):
        sub = getattr(args, name, None)
        if isinstance(sub, str):
            words.append(sub)
    return " ".join(words)


def wanted(args: argparse.Namespace) -> bool:
    """Whether this command gets status lines: a long one, not ``-q``, not ``--no-progress``."""
    if args.command not in FIRST_LINE | STATUS_ONLY:
        return False
    return not getattr(args, "quiet", False) and getattr(args, "progress", None) is not False


def status_every(args: argparse.Namespace) -> float:
    """Seconds between this command's status lines (0: none; none in a terminal).

    Raises:
        ValueError: ``$MUNET_PROGRESS_EVERY`` is not a number of seconds >= 0 (checked only
            for a command that would get status lines).
    """
    if not wanted(args):
        return 0.0
    every = heartbeat_seconds()
    return 0.0 if interactive() else every


@contextlib.contextmanager
def status_lines(args: argparse.Namespace, every: float) -> Iterator[None]:
    """Around a command's handler: its first line now and, every ``every`` seconds
    (:func:`status_every`), a status line."""
    if not wanted(args):
        yield
        return
    label = command_label(args)
    if args.command in FIRST_LINE:
        text = f"{label}: started"
        if every > 0:
            text += f" (a status line every {every:g}s while it runs)"
        stderr_line(text)
    with Heartbeat(label, every):
        yield
