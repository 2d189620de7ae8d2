"""An agent's run: cycles until the asked number is complete, under the agent's lock, with
the overall progress bar, the per-cycle lines, the tracker and the end-of-cycle commits.

The generations of a cycle are :class:`munet.agents.cycle.Agent`'s; this mixin is the loop
around them, apart so that each module keeps one job.
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING

from munet.agents.reports import GenerationReport, RunReport, start_block
from munet.agents.tracked import cycle_point, open_tracker
from munet.progress import Pace, bars_enabled, progress_bar, write_line
from munet.training.threads import apply_thread_policy

if TYPE_CHECKING:
    from munet.system import Path

#: Per ``detail``, the kinds of line a run writes: ``start`` (resuming from a state),
#: ``generation`` (one line per generation), ``detail`` (the full per-path report) and ``cycle``
#: (cycle ends, and a run with nothing to do).
LINES_SHOWN = {
    "generation": frozenset({"start", "generation", "cycle"}),
    "full": frozenset({"start", "detail", "cycle"}),
    "cycle": frozenset({"cycle"}),
}


class RunLoop:
    """Mixin of :class:`munet.agents.cycle.Agent`: ``run`` and the lines it writes."""

    def _say(self, kind: str, line: str) -> None:
        """Writes ``line`` when this agent's ``detail`` shows lines of ``kind``."""
        if not self.quiet and kind in LINES_SHOWN[self.detail]:
            write_line(self.echo, line)

    # The run --------------------------------------------------------------------------------
    @property
    def num_generations(self) -> int:
        """Generations per cycle: ``ceil(num_samples_per_cycle / devices)``."""
        return math.ceil(self.config.num_samples_per_cycle / len(self.devices))

    def run(self, num_cycles: int, planned_cycles: int | None = None) -> RunReport:
        """Runs cycles until ``num_cycles`` are complete (resuming from the committed state).

        Other agents' published paths are re-read at the start of every cycle.

        Args:
            num_cycles: total completed cycles to reach.
            planned_cycles: the total shown in progress messages, when the caller runs the
                agent in several steps (default ``num_cycles``).

        Raises:
            AgentError: the system cannot feed this agent (no root model; for a multipath
                agent, no state of its task's singlepath agent).
            munet.system.AgentLockedError: another process runs this agent.
        """
        if num_cycles < 0:
            raise ValueError(f"num_cycles must be >= 0, got {num_cycles}")
        # A state dir that cannot feed a new agent is refused before its folder (the lock) exists.
        self.check_store()
        apply_thread_policy(self.config.num_threads)
        with self.store.lock(self.agent_id):
            # Opened under the lock: an agent already running elsewhere starts no tracker run.
            self._tracker, owned = open_tracker(
                self.tracking, self.agent_id, self.config.to_dict()
            )
            try:
                return self._run_cycles(num_cycles, planned_cycles)
            finally:
                if owned and self._tracker is not None:
                    self._tracker.close()
                self._tracker = None

    def _run_cycles(self, num_cycles: int, planned_cycles: int | None) -> RunReport:
        reports: list[GenerationReport] = []
        best: Path | None = None
        cycle = 0
        total = planned_cycles or num_cycles
        population, cycle, generation = self._load()
        if cycle >= num_cycles:
            self._say("cycle", self._nothing_to_do(cycle, num_cycles))
            return RunReport(self.agent_id, cycle, reports, population.get_best_path())
        for line in self._start_block():
            self._say("start", line)
        per_cycle = self.num_generations
        done = cycle * per_cycle + generation
        self._pace = Pace(num_cycles * per_cycle - done)
        self._bar = progress_bar(
            num_cycles * per_cycle,
            self.agent_id,
            "gen",
            bars_enabled(self.progress),
            initial=done,
        )
        try:
            while True:
                best = population.get_best_path()
                if cycle >= num_cycles:
                    break
                self._bar.set_postfix_str(f"cycle {cycle + 1}/{total}", refresh=True)
                self._say("detail", f"==== {self.agent_id}: cycle [{cycle + 1}/{total}]")
                population.start_cycle()
                best = self._run_cycle(population, cycle, generation, reports, total)
                population.end_cycle()
                save_start = time.perf_counter()
                self.store.save_state(population, cycle + 1, 0, self.config.to_dict())
                if reports:
                    reports[-1].save += time.perf_counter() - save_start
                    reports[-1].wall += time.perf_counter() - save_start
                self._say(
                    "cycle",
                    f"{self.agent_id}: cycle {cycle + 1}/{total} done; best path "
                    f"{best.full_id} test quality "
                    f"{best.metrics.get('test_quality', float('nan')):.4f} "
                    f"({self._pace.eta_text()})",
                )
                if self._tracker is not None:
                    score = self._score(population, best)
                    self._tracker.cycle_done(cycle_point(best, score, cycle + 1))
                population, cycle, generation = self._load(announce=False)
        finally:
            self._bar.close()
        return RunReport(self.agent_id, cycle, reports, best)

    def _start_block(self) -> list[str]:
        from munet.agents.task_data import task_source_label

        roots = [
            agent_id
            for agent_id in self.store.agent_ids(self.agent_classes_to_load())
            if "~root_model~" in agent_id
        ]
        devices = sorted({str(device) for device in self.devices})
        return start_block(
            self.agent_id,
            self.task,
            task_source_label(self.task_name, self.config.data),
            roots,
            self.config.name,
            self.config.model,
            self.num_generations,
            f"{len(self.devices)} x {', '.join(devices)}" if len(self.devices) > 1 else devices[0],
        )

    def _nothing_to_do(self, cycle: int, num_cycles: int) -> str:
        return (
            f"{self.agent_id}: already {cycle} cycle(s) done (asked for {num_cycles}); nothing "
            f"to run: ask for more than {cycle} cycles to continue"
        )

