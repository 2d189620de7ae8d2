"""Progress of long work, the same way everywhere (agent runs, launch, demo, search, ES).

- an overall bar (tqdm.auto: a terminal bar, or a widget in a notebook) with counts and ETA,
  shown where a person watches (a terminal or a notebook), never in a log file;
- lines (one per generation, cycle or trial) written above the bars, so bars stay whole;
- ``eta_text`` for the lines of a run without bars (``-q``, a log file): the time left at the
  average pace so far.

Nothing here imports torch; tqdm is imported when a bar is made.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any


def interactive() -> bool:
    """True where a person watches: stderr is a terminal, or this is a Jupyter kernel."""
    if "ipykernel" in sys.modules:
        try:
            from IPython import get_ipython

            shell = get_ipython()
        except ImportError:
            shell = None
        if shell is not None and getattr(shell, "kernel", None) is not None:
            return True
    isatty = getattr(sys.stderr, "isatty", None)
    return bool(isatty and isatty())


def bars_enabled(progress: bool | None) -> bool:
    """``progress`` as given, or (None) whether this is :func:`interactive`."""
    return interactive() if progress is None else bool(progress)


def progress_bar(
    total: int | None,
    desc: str,
    unit: str,
    enabled: bool,
    *,
    leave: bool = True,
    initial: int = 0,
) -> Any:
    """A tqdm.auto bar (disabled, and then free, unless ``enabled``).

    Bars opened while another is open stack below it (tqdm picks the next free line), so an
    inner bar made with ``leave=False`` shows under the overall one and vanishes when done.
    """
    from tqdm.auto import tqdm

    return tqdm(
        total=total,
        desc=desc,
        unit=unit,
        leave=leave,
        initial=initial,
        disable=not enabled,
        dynamic_ncols=True,
    )


@contextlib.contextmanager
def above_bars() -> Iterator[None]:
    """Write lines inside this context: open bars are cleared, then redrawn below them."""
    from tqdm.auto import tqdm

    with tqdm.external_write_mode(file=sys.stdout):
        yield


def write_line(echo: Callable[[str], None], line: str) -> None:
    """``echo(line)`` above any open bar."""
    with above_bars():
        echo(line)


class BarSafeHandler(logging.StreamHandler):
    """A logging handler whose records go to ``sys.stderr`` as it is when each record is
    written (not when the handler was made: a caller that swaps ``sys.stderr``, such as a
    redirect or a test's capture, gets the records, and a closed old stream is never written),
    above any open bar (not into it)."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = sys.stderr
        with above_bars():
            super().emit(record)


def format_duration(seconds: float) -> str:
    """``42s``, ``3m05s``, ``2h07m``."""
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


class Pace:
    """Counts units of work done since it was made, and says how long the rest will take.

    Args:
        total: units to do in all (this run's share only).
    """

    def __init__(self, total: int) -> None:
        self.total = max(0, int(total))
        self.done = 0
        self.start = time.perf_counter()

    def advance(self, units: int = 1) -> None:
        self.done += units

    def eta_text(self) -> str:
        """``elapsed 1m02s, about 3m10s left`` (no estimate before the first unit)."""
        elapsed = time.perf_counter() - self.start
        text = f"elapsed {format_duration(elapsed)}"
        left = self.total - self.done
        if self.done and left > 0:
            text += f", about {format_duration(elapsed / self.done * left)} left"
        return text
