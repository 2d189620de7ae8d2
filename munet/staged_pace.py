"""The time left of work done in stages by parallel workers: the demo's estimate (its
singlepath rounds, then its multipath stage, each on a pool of workers).

A plain :class:`munet.progress.Pace` divides the elapsed time by the jobs done; with workers
running jobs side by side, and stages of different lengths, that is off by the number of
workers and leaves the later stages out. A :class:`StagedPace` counts each stage's rounds and
lanes, a job in flight as partly done, and each stage's worker start-up once.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from munet.progress import format_duration


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
