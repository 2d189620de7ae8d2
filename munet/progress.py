"""Progress of long work, the same way everywhere (agent runs, launch, demo, search, ES).

- an overall bar (tqdm.auto: a terminal bar, or a widget in a notebook) with counts and ETA,
  shown where a person watches (a terminal or a notebook), never in a log file;
- lines (one per generation, cycle or trial) written above the bars, so bars stay whole;
- ``eta_text`` for the lines of a run without bars (``-q``, a log file): the time left at the
  average pace so far;
- the time left of work in stages on parallel workers (the demo's): munet.staged_pace;
- :class:`Heartbeat`: in a log, where no bar shows, a plain status line every few seconds
  (what runs, for how long, and the time left of every live :class:`Pace` or status source).

Nothing here imports torch; tqdm is imported when a bar is made.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from typing import Any

# Held while a line is written through this module (write_line, the logging handler, the
# heartbeat's thread), so a status line never lands inside another line.
_OUTPUT_LOCK = threading.RLock()


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

    with _OUTPUT_LOCK, tqdm.external_write_mode(file=sys.stdout):
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

    While its work is unfinished, a :class:`Heartbeat` line includes :meth:`describe`.

    Args:
        total: units to do in all (this run's share only).
        label: what a unit is, for the heartbeat's line (``"VitCpu~digits generations"``).
        clock: seconds, monotonic (a test's fake clock).
    """

    def __init__(
        self, total: int, label: str = "", clock: Callable[[], float] = time.perf_counter
    ) -> None:
        self.total = max(0, int(total))
        self.label = label
        self.done = 0
        self.clock = clock
        self.start = clock()
        _LIVE_PACES.append(weakref.ref(self))

    def advance(self, units: int = 1) -> None:
        self.done += units

    def eta_text(self) -> str:
        """``elapsed 1m02s, about 3m10s left`` (no estimate before the first unit)."""
        elapsed = self.clock() - self.start
        text = f"elapsed {format_duration(elapsed)}"
        left = self.total - self.done
        if self.done and left > 0:
            text += f", about {format_duration(elapsed / self.done * left)} left"
        return text

    def describe(self) -> str:
        """``12/40 VitCpu~digits generations, elapsed 1m02s, about 3m10s left``."""
        return f"{self.done}/{self.total} {self.label or 'done'}, {self.eta_text()}"


# The paces made in this process, weakly: a heartbeat line describes those not finished.
_LIVE_PACES: list[weakref.ref[Pace]] = []

# Status sources (callables returning a line's part) opened by :func:`status_source`.
_STATUS_SOURCES: list[Callable[[], str]] = []


@contextlib.contextmanager
def status_source(describe: Callable[[], str]) -> Iterator[None]:
    """While open, a :class:`Heartbeat` line includes ``describe()`` (called in its thread)."""
    _STATUS_SOURCES.append(describe)
    try:
        yield
    finally:
        _STATUS_SOURCES.remove(describe)


def current_status() -> str:
    """What the open status sources and the unfinished paces say, joined by ``; ``."""
    _LIVE_PACES[:] = [ref for ref in _LIVE_PACES if ref() is not None]
    paces = [ref() for ref in list(_LIVE_PACES)]
    parts = [describe() for describe in list(_STATUS_SOURCES)]
    parts += [pace.describe() for pace in paces if pace is not None and pace.done < pace.total]
    return "; ".join(part for part in parts if part)


#: The environment variable that sets a heartbeat's period in seconds (0: no status lines).
HEARTBEAT_ENV = "MUNET_PROGRESS_EVERY"
DEFAULT_HEARTBEAT_SECONDS = 30.0


def heartbeat_seconds(environ: dict[str, str] | None = None) -> float:
    """The heartbeat's period: ``$MUNET_PROGRESS_EVERY`` seconds, else 30.

    Raises:
        ValueError: the variable is not a number >= 0.
    """
    raw = (os.environ if environ is None else environ).get(HEARTBEAT_ENV)
    if raw is None or raw.strip() == "":
        return DEFAULT_HEARTBEAT_SECONDS
    try:
        seconds = float(raw)
    except ValueError:
        seconds = float("nan")
    if not (seconds >= 0 and math.isfinite(seconds)):
        raise ValueError(
            f"{HEARTBEAT_ENV}={raw!r}: expected the seconds between status lines (a number "
            f">= 0; 0: none)"
        )
    return seconds


def stderr_line(line: str) -> None:
    """``line`` on stderr, flushed (a log sees it now)."""
    print(line, file=sys.stderr, flush=True)


class Heartbeat:
    """A context in which a thread writes ``LABEL: running 4m10s; STATUS`` every ``every``
    seconds, STATUS being :func:`current_status`: a log (where no bar shows) never goes quiet
    for longer, whatever the main thread is busy with (importing torch, a long cycle in a
    worker process).

    Args:
        label: what runs (``munet demo``).
        every: seconds between lines; 0 or less: no thread, no lines.
        write: where a line goes (default: stderr, flushed).
        clock: seconds, monotonic.
    """

    def __init__(
        self,
        label: str,
        every: float,
        write: Callable[[str], None] = stderr_line,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.label = label
        self.every = every
        self.write = write
        self.clock = clock
        self.start = clock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def line(self) -> str:
        status = current_status()
        text = f"{self.label}: running {format_duration(self.clock() - self.start)}"
        return f"{text}; {status}" if status else text

    def __enter__(self) -> Heartbeat:
        if self.every > 0:
            self._thread = threading.Thread(target=self._beat, name="munet-heartbeat", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _beat(self) -> None:
        while not self._stop.wait(self.every):
            line = self.line()
            with _OUTPUT_LOCK:
                if not self._stop.is_set():  # none after the command's own last lines
                    self.write(line)
