"""An agent's run: cycles until the asked number is complete, under the agent's lock, with
the overall progress bar, the per-cycle lines, the tracker and the end-of-cycle commits.

The generations of a cycle are :class:`munet.agents.cycle.Agent`'s; the agent holds a
:class:`RunLoop` that drives them through the small :class:`CycleRunner` interface, and an
:class:`AgentLines` that every part of it writes its lines through.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from munet.agents.reports import GenerationReport, RunReport
from munet.agents.tracked import cycle_point, open_tracker
from munet.config import AgentConfig
from munet.progress import Pace, bars_enabled, progress_bar, write_line
from munet.system import Path, Population, SystemStore
from munet.tracking import Tracker
from munet.training.threads import apply_thread_policy

#: Per ``detail``, the kinds of line a run writes: ``start`` (resuming from a state),
#: ``generation`` (one line per generation), ``detail`` (the full per-path report) and ``cycle``
#: (cycle ends, and a run with nothing to do).
LINES_SHOWN = {
    "generation": frozenset({"start", "generation", "cycle"}),
    "full": frozenset({"start", "detail", "cycle"}),
    "cycle": frozenset({"cycle"}),
}


class AgentLines:
    """Where an agent's lines go: ``say(kind, line)`` writes the line when the agent's
    ``detail`` shows lines of that ``kind`` (nothing when quiet)."""

    def __init__(self, quiet: bool, detail: str, echo: Callable[[str], None]) -> None:
        self.quiet = quiet
        self.detail = detail
        self.echo = echo

    def say(self, kind: str, line: str) -> None:
        if not self.quiet and kind in LINES_SHOWN[self.detail]:
            write_line(self.echo, line)


@dataclass
class RunProgress:
    """What one run shows while it goes: the time-left estimate, the bar over every
    generation of the run, and the tracker (None: no tracking)."""

    pace: Pace
    bar: Any
    tracker: Tracker | None


class CycleRunner(Protocol):
    """What :class:`RunLoop` drives: an agent (munet.agents.cycle.Agent)."""

    agent_id: str
    config: AgentConfig
    store: SystemStore
    num_generations: int

    def check_store(self) -> None: ...

    def load_population(self, announce: bool = True) -> tuple[Population, int, int]: ...

    def run_cycle(
        self,
        population: Population,
        cycle: int,
        first_generation: int,
        reports: list[GenerationReport],
        total_cycles: int,
        progress: RunProgress,
    ) -> Path: ...

    def score(self, population: Population, path: Path) -> float: ...

    def start_block(self) -> list[str]: ...


class RunLoop:
    """An agent's run: cycles until the asked number is complete, each committed.

    Args:
        agent: the agent whose cycles run.
        lines: the agent's lines.
        progress: the bars (None: when stderr is a terminal).
        tracking: the run's tracker settings, or an open tracker (None: none).
    """

    def __init__(
        self, agent: CycleRunner, lines: AgentLines, progress: bool | None, tracking: Any
    ) -> None:
        self.agent = agent
        self.lines = lines
        self.progress = progress
        self.tracking = tracking

    def run(self, num_cycles: int, planned_cycles: int | None = None) -> RunReport:
        """Runs cycles until ``num_cycles`` are complete (resuming from the committed state);
        see :meth:`munet.agents.cycle.Agent.run`."""
        if num_cycles < 0:
            raise ValueError(f"num_cycles must be >= 0, got {num_cycles}")
        agent = self.agent
        # A state dir that cannot feed a new agent is refused before its folder (the lock) exists.
        agent.check_store()
        apply_thread_policy(agent.config.num_threads)
        with agent.store.lock(agent.agent_id):
            # Opened under the lock: an agent already running elsewhere starts no tracker run.
            tracker, owned = open_tracker(self.tracking, agent.agent_id, agent.config.to_dict())
            try:
                return self._run_cycles(num_cycles, planned_cycles, tracker)
            finally:
                if owned and tracker is not None:
                    tracker.close()

    def _run_cycles(
        self, num_cycles: int, planned_cycles: int | None, tracker: Tracker | None
    ) -> RunReport:
        agent, say = self.agent, self.lines.say
        reports: list[GenerationReport] = []
        best: Path | None = None
        total = planned_cycles or num_cycles
        population, cycle, generation = agent.load_population()
        if cycle >= num_cycles:
            say("cycle", self._nothing_to_do(cycle, num_cycles))
            return RunReport(agent.agent_id, cycle, reports, population.get_best_path())
        for line in agent.start_block():
            say("start", line)
        per_cycle = agent.num_generations
        done = cycle * per_cycle + generation
        bar = progress_bar(
            num_cycles * per_cycle,
            agent.agent_id,
            "gen",
            bars_enabled(self.progress),
            initial=done,
        )
        pace = Pace(num_cycles * per_cycle - done, label=f"{agent.agent_id} generations")
        progress = RunProgress(pace, bar, tracker)
        try:
            while True:
                best = population.get_best_path()
                if cycle >= num_cycles:
                    break
                bar.set_postfix_str(f"cycle {cycle + 1}/{total}", refresh=True)
                say("detail", f"==== {agent.agent_id}: cycle [{cycle + 1}/{total}]")
                population.start_cycle()
                best = agent.run_cycle(population, cycle, generation, reports, total, progress)
                population.end_cycle()
                save_start = time.perf_counter()
                agent.store.save_state(population, cycle + 1, 0, agent.config.to_dict())
                if reports:
                    reports[-1].save += time.perf_counter() - save_start
                    reports[-1].wall += time.perf_counter() - save_start
                say(
                    "cycle",
                    f"{agent.agent_id}: cycle {cycle + 1}/{total} done; best path "
                    f"{best.full_id} test quality "
                    f"{best.metrics.get('test_quality', float('nan')):.4f} "
                    f"({progress.pace.eta_text()})",
                )
                if tracker is not None:
                    score = agent.score(population, best)
                    tracker.cycle_done(cycle_point(best, score, cycle + 1))
                population, cycle, generation = agent.load_population(announce=False)
        finally:
            bar.close()
        return RunReport(agent.agent_id, cycle, reports, best)

    def _nothing_to_do(self, cycle: int, num_cycles: int) -> str:
        return (
            f"{self.agent.agent_id}: already {cycle} cycle(s) done (asked for {num_cycles}); "
            f"nothing to run: ask for more than {cycle} cycles to continue"
        )
