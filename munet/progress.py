"""Progress of long work, the same way everywhere (agent runs, launch, demo, search, ES).

- an overall bar (tqdm.auto: a terminal bar, or a widget in a notebook) with counts and ETA,
  shown where a person watches (a terminal or a notebook), never in a log file;
- lines (one per generation, cycle or trial) written above the bars, so bars stay whole;
- ``eta_text`` for the lines of a run without bars (``-q``, a log file): the time left at the
  average pace so far;
- :class:`StagedPace`: the time left of work in stages of rounds run on parallel workers (the
  demo: singlepath cycles, then the multipath stage), every stage counted;
- :class:`Heartbeat`: in a log, where no bar shows, a plain status line every few seconds
  (what runs, for how long, and the time left of every live :class:`Pace` or status source).

Nothing here imports torch; tqdm is imported when a bar is made.
"""

from __future__ import annotations

import contextlib
import heapq
import logging
import math
import os
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Stage:
    """Work in ``rounds``: each round runs ``units`` like jobs on ``workers`` parallel workers
    and ends when all of them did (the demo: a round is one cycle of every agent).

    A stage never measured is costed at the pace of the last stage measured (a multipath
    agent's cycle trains as many examples as a singlepath one's, through its subpaths'
    forward passes), until its own first job ends.
    """

    name: str
    rounds: int
    units: int
    workers: int

    @property
    def total(self) -> int:
        return self.rounds * self.units

    @property
    def lanes(self) -> int:
        """The workers a round keeps busy."""
        return max(1, min(self.workers, self.units))

    @property
    def waves(self) -> int:
        """Jobs one after the other on a worker per round (equal jobs: a round's length in jobs)."""
        return math.ceil(self.units / self.lanes) if self.units else 0


class StagedPace:
    """The time left of work in stages (:class:`Stage`), run one after the other.

    Each worker is a lane: a round starts ``lanes`` jobs at once, and each job that ends starts
    the next queued one on its lane. A job's length is the worker's own measure of it, where
    the caller has one; a stage's *start-up* is what its first job took beyond that, as the
    caller saw it (a worker process starting and importing torch: the demo starts a pool per
    stage), counted once per stage. The time left is the current round's lanes played
    forward at the stage's mean job length (a job in flight counts as partly done, not as a
    whole one to do), then every round and stage still to run, in waves of jobs.

    Args:
        stages: the stages in the order they run (empty ones are left out).
        unit: what a job is, for :meth:`describe` (``"agent cycles"``).
        clock: seconds, monotonic.
    """

    def __init__(
        self,
        stages: Sequence[Stage],
        unit: str = "jobs",
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.unit = unit
        self.stages = [stage for stage in stages if stage.total > 0]
        names = [stage.name for stage in self.stages]
        if len(set(names)) != len(names):
            raise ValueError(f"stage names must differ, got {names}")
        self.clock = clock
        self.start = clock()
        self.done = {name: 0 for name in names}
        self.rounds_started = {name: 0 for name in names}
        self.job_seconds: dict[str, list[float]] = {name: [] for name in names}
        self.startup_seconds: dict[str, float] = {}
        self._stage: Stage | None = None
        # The jobs in flight: (start time, whether the job is its worker's first of the stage).
        self._lanes: list[tuple[float, bool]] = []
        self._queued = 0

    def stage(self, name: str) -> Stage:
        for stage in self.stages:
            if stage.name == name:
                return stage
        raise KeyError(f"no stage {name!r}; stages: {[s.name for s in self.stages]}")

    @property
    def total(self) -> int:
        return sum(stage.total for stage in self.stages)

    @property
    def total_done(self) -> int:
        return sum(self.done.values())

    def start_round(self, name: str) -> None:
        """The next round of stage ``name`` starts now: its first jobs go to the workers."""
        stage = self.stage(name)
        if self.rounds_started[name] >= stage.rounds:
            raise ValueError(f"stage {name!r} has {stage.rounds} round(s), all started")
        fresh = self.rounds_started[name] == 0
        self.rounds_started[name] += 1
        self._stage = stage
        self._lanes = [(self.clock(), fresh)] * stage.lanes
        self._queued = stage.units - stage.lanes

    def finish_job(self, name: str, measured: bool = True, seconds: float | None = None) -> None:
        """A job of the current round ended now.

        Args:
            name: its stage.
            measured: False where it had nothing to do (a resumed agent's cycle already
                done): its length is not a job's.
            seconds: the job's length as its worker measured it (None: as seen from here).
        """
        if self._stage is None or self._stage.name != name or not self._lanes:
            raise ValueError(f"no job of stage {name!r} in flight")
        now = self.clock()
        lane = min(self._lanes)  # Like jobs: the oldest in flight ends first.
        self._lanes.remove(lane)
        started, fresh = lane
        if measured:
            seen = now - started
            length = seen if seconds is None else min(seen, max(0.0, seconds))
            self.job_seconds[name].append(length)
            if fresh and name not in self.startup_seconds:
                self.startup_seconds[name] = seen - length
        if self._queued:
            self._queued -= 1
            self._lanes.append((now, False))
        self.done[name] += 1

    def _measured_near(self, name: str, measures: dict[str, Any]) -> Any:
        """``measures[name]``, else that of the last stage measured before it, else of the
        first one measured after it; None where none is."""
        order = [stage.name for stage in self.stages]
        index = order.index(name)
        for candidate in [*order[index::-1], *order[index + 1 :]]:
            if measures.get(candidate):
                return measures[candidate]
        return None

    def job_estimate(self, name: str) -> float | None:
        """The mean job length of stage ``name``, else of the last stage measured before it,
        else of the first one measured after it; None before any job ended."""
        times = self._measured_near(name, self.job_seconds)
        return None if times is None else sum(times) / len(times)

    def startup_estimate(self, name: str) -> float:
        """The start-up of stage ``name`` (as :meth:`job_estimate` finds it; 0 if none)."""
        found = self._measured_near(name, self.startup_seconds)
        return float(found or 0.0)

    def seconds_left(self) -> float | None:
        """Seconds until every stage is done; None before a job ended (nothing measured)."""
        left = 0.0
        now = self.clock()
        for stage in self.stages:
            job = self.job_estimate(stage.name)
            if job is None:
                return None
            startup = self.startup_estimate(stage.name)
            if self.rounds_started[stage.name] == 0:
                left += startup
            rounds_to_start = stage.rounds - self.rounds_started[stage.name]
            if self._stage is not None and self._stage.name == stage.name:
                # The lanes' ends: each job in flight's remainder, then the queued jobs, each
                # on the lane that frees first.
                lanes = [
                    max(0.0, job + (startup if fresh else 0.0) - (now - started))
                    for started, fresh in self._lanes
                ]
                heapq.heapify(lanes)
                for _ in range(self._queued):
                    heapq.heappush(lanes, heapq.heappop(lanes) + job if lanes else job)
                left += max(lanes, default=0.0)
            left += rounds_to_start * stage.waves * job
        return left

    def eta_text(self) -> str:
        """``elapsed 1m02s, about 3m10s left`` (no estimate before the first job ended)."""
        text = f"elapsed {format_duration(self.clock() - self.start)}"
        left = self.seconds_left()
        if left is not None and self.total_done < self.total:
            text += f", about {format_duration(left)} left"
        return text

    def describe(self) -> str:
        """``3/8 singlepath, 0/2 multipath agent cycles, elapsed 4m, about 9m left``."""
        counts = ", ".join(f"{self.done[s.name]}/{s.total} {s.name}" for s in self.stages)
        return f"{counts} {self.unit}, {self.eta_text()}"
