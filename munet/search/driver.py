"""Run any ask/tell strategy on an objective, W trials in flight, told as results arrive.

`SearchRun` keeps `executor.num_workers` trials in flight: it asks the strategy whenever a
worker is free and tells it each result the moment it comes back, in whatever order (NNI's
and Petridish's asynchronous loop). After every result the strategy's `state_dict()`, the
results so far and the run's counters are written atomically to `out_dir/state.json`; a run
started with `resume=True` reloads them and re-submits only the trials that were in flight
(`strategy.pending`), so no finished trial runs twice.

With the in-process executor trials run first-in first-out, so a seeded run replays exactly,
whatever `num_workers`; each trial's own randomness (initialisation, data order, the table's
repeat) comes from `derived_seed(seed, trial id)`, not from the order trials finish in.

Stop rules: the strategy is done, `max_trials` trials were asked and told, or the finished
trials' training seconds (simulated on NAS-Bench) exceed `time_budget`; what is still in
flight then is cancelled. A finished run resumed with a larger `max_trials` or `time_budget`
(the only settings that may change on resume) goes on from where it stopped, re-submitting
the cancelled trials first.

Objectives with weights (`uses_weights`, e.g. ViTs) write each trial's trained model to
`out_dir/models/trial-NNNNN.safetensors`, so `munet export --search` can export it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .base import Strategy
from .executors import Executor
from .jobs import run_objective_job
from .objectives.base import GrowthObjective, cost_text, derived_seed
from .run_state import load_run_state, refuse_existing_state, save_run_state

# The settings a resumed run may change: its budgets (a finished run then goes on).
EXTENDABLE = frozenset({"max_trials", "time_budget"})
MODELS_DIR = "models"


@dataclass
class SearchReport:
    """The outcome of a run: every result in the order it arrived, and why it stopped."""

    results: list[dict[str, Any]]
    stop_reason: str
    simulated_seconds: float
    best: dict[str, Any] | None


class SearchRun:
    """An asynchronous ask/tell search writing into `out_dir` (see the module docstring).

    Args:
        strategy: a fresh strategy (its seed and options are checked against a resumed state).
        objective: evaluates candidates (`objective.evaluate`), in the strategy's space.
        executor: where trials run; `num_workers` of them are kept in flight.
        out_dir: folder for state.json.
        max_trials: stop after this many trials; None = until the strategy is done.
        time_budget: stop once finished trials' training seconds exceed this.
        seed: seed of each trial's own randomness (with the trial id).
        resume: continue from out_dir/state.json.
        progress: called with one line per finished trial.

    Raises:
        ValueError: bad limits; resume without a state or with another objective/strategy.
    """

    def __init__(
        self,
        strategy: Strategy,
        objective: GrowthObjective,
        executor: Executor,
        out_dir: str | os.PathLike,
        *,
        max_trials: int | None = None,
        time_budget: float | None = None,
        seed: int = 0,
        resume: bool = False,
        progress: Callable[[str], None] | None = None,
    ) -> None:
        if max_trials is not None and max_trials < 1:
            raise ValueError(f"max_trials must be >= 1, got {max_trials!r}")
        if time_budget is not None and not time_budget > 0:
            raise ValueError(f"time_budget must be > 0 seconds, got {time_budget!r}")
        self.strategy = strategy
        self.objective = objective
        self.executor = executor
        self.out_dir = os.path.abspath(out_dir)
        self.max_trials = max_trials
        self.time_budget = time_budget
        self.seed = int(seed)
        self.progress = progress or (lambda line: None)
        self.results: list[dict[str, Any]] = []
        self.simulated_seconds = 0.0
        self.stop_reason: str | None = None
        self._in_flight: dict[int, Any] = {}  # trial id -> candidate
        if resume:
            self._load()
        else:
            refuse_existing_state(self.out_dir)
        os.makedirs(self.out_dir, exist_ok=True)

    # ---------------------------------------------------------------------------- the loop

    def run(self, max_results: int | None = None) -> SearchReport:
        """Run to a stop rule (or until `max_results` more results: an interruption)."""
        warning = small_budget_warning(self.strategy, self.max_trials)
        if warning and self.stop_reason is None:
            self.progress(f"warning: {warning}")
        if self.stop_reason is None:
            for trial in self.strategy.pending:  # in flight when the state was saved
                self._submit(trial.id, trial.candidate)
        handled = 0
        while self.stop_reason is None:
            self.stop_reason = self._stop_rule()
            if self.stop_reason is not None:
                break
            self._fill()
            if not self._in_flight:
                self.stop_reason = (
                    self._done_reason() if self.strategy.is_done else f"{self._asked()} trials run"
                )
                break
            if max_results is not None and handled >= max_results:
                return self._report()
            for outcome in self.executor.wait():
                self._tell(outcome.job_id, outcome.result if outcome.ok else None, outcome.error)
                handled += 1
        cancelled = self.executor.cancel_all()
        if cancelled:
            self.progress(f"cancelled {len(cancelled)} trial(s) still in flight: {cancelled}")
        self._checkpoint()
        self.progress(f"stopped: {self.stop_reason}")
        population = getattr(self.strategy, "population_size", None)
        if not warning and isinstance(population, int) and len(self.results) < population:
            self.progress(
                f"warning: the run stopped after {len(self.results)} trials, below "
                f"population_size {population}: every trial was a random sample (no mutation)"
            )
        return self._report()

    def _asked(self) -> int:
        return len(self.results) + len(self._in_flight)

    def _fill(self) -> None:
        while len(self._in_flight) < self.executor.num_workers:
            if self.max_trials is not None and self._asked() >= self.max_trials:
                return
            trial = self.strategy.ask()
            if trial is None:
                return
            self._submit(trial.id, trial.candidate)

    def _submit(self, trial_id: int, candidate: Any) -> None:
        self._in_flight[trial_id] = candidate
        payload = {
            "objective": self.objective.to_json(),
            "stage": "evaluate",
            "candidate": self._encode(candidate),
            "seed": derived_seed(self.seed, trial_id),
        }
        if getattr(self.objective, "uses_weights", False):
            payload["out_weights"] = os.path.join(self.out_dir, trial_weights(trial_id))
        self.executor.submit(trial_id, run_objective_job, payload)

    def _tell(self, trial_id: int, result: dict[str, Any] | None, failure: str | None) -> None:
        candidate = self._in_flight.pop(trial_id)
        record: dict[str, Any] = {
            "trial": trial_id,
            "candidate": self._encode(candidate),
            "parent": self.strategy.parent_of(trial_id),
            "failure": failure,
        }
        if result is None:
            self.strategy.tell(trial_id, None)
            line = f"trial {trial_id:>4} FAILED: {failure}"
        else:
            accuracy = 1.0 - float(result["error"])
            self.strategy.tell(trial_id, accuracy, cost=float(result["cost"]))
            self.simulated_seconds += float(result.get("train_seconds") or 0.0)
            record.update(
                {
                    "objective": accuracy,
                    "cost": float(result["cost"]),
                    "train_seconds": float(result.get("train_seconds") or 0.0),
                    "metrics": result.get("metrics") or {},
                }
            )
            if result.get("weights"):
                record["weights"] = os.path.relpath(result["weights"], self.out_dir)
            best = self.strategy.best
            unit = getattr(self.objective, "cost_unit", "")
            line = (
                f"trial {trial_id:>4} {self.objective.describe(result['candidate'])}"
                f"  accuracy {accuracy:.4f}  cost {cost_text(float(result['cost']), unit)}"
                f"  best {best[1]:.4f}  train {record['train_seconds']:.1f}s"
                f" (all trials {self.simulated_seconds:.1f}s)  in flight {len(self._in_flight)}"
            )
        record["elapsed_seconds"] = self.simulated_seconds
        self.results.append(record)
        self._checkpoint()
        self.progress(line)

    def _done_reason(self) -> str:
        """Why a done strategy stops: its own end, or a space with no new candidate left."""
        if getattr(self.strategy, "exhausted", False):
            distinct = len(self.results)
            return (
                f"search space exhausted: {self.strategy.dedup_retries} proposals in a row were "
                f"models already tried ({distinct} distinct models evaluated); more trials need "
                "a larger space (--set) or the strategy option dedup=false"
            )
        return "strategy is done"

    def _stop_rule(self) -> str | None:
        if self.strategy.is_done and not self._in_flight:
            return self._done_reason()
        if self.max_trials is not None and len(self.results) >= self.max_trials:
            return f"{len(self.results)} trials (max_trials {self.max_trials})"
        if self.time_budget is not None and self.simulated_seconds > self.time_budget:
            return f"{self.simulated_seconds:.1f} training seconds > budget {self.time_budget:g}"
        return None

    def _report(self) -> SearchReport:
        successes = [r for r in self.results if r["failure"] is None]
        best = max(successes, key=lambda r: r["objective"], default=None)
        return SearchReport(
            list(self.results), self.stop_reason or "interrupted", self.simulated_seconds, best
        )

    # ------------------------------------------------------------------------------- state

    def _encode(self, candidate: Any) -> Any:
        to_json = getattr(self.strategy.space, "to_json", None)
        return to_json(candidate) if callable(to_json) else candidate

    def _identity(self) -> dict[str, Any]:
        return {
            "objective": self.objective.to_json(),
            "strategy": self.strategy.name,
            "strategy_seed": self.strategy.seed,
            "strategy_options": self.strategy.options(),
            "seed": self.seed,
            "max_trials": self.max_trials,
            "time_budget": self.time_budget,
        }

    def _checkpoint(self) -> None:
        save_run_state(
            self.out_dir,
            self._identity(),
            {
                "strategy_state": self.strategy.state_dict(),
                "results": self.results,
                "simulated_seconds": self.simulated_seconds,
                "stop_reason": self.stop_reason,
            },
        )

    def _load(self) -> None:
        state = load_run_state(self.out_dir, self._identity(), EXTENDABLE)
        self.strategy.load_state_dict(state["strategy_state"])
        self.results = list(state["results"])
        self.simulated_seconds = float(state["simulated_seconds"])
        self.stop_reason = state.get("stop_reason")
        if self.stop_reason is not None and self._stop_rule() is None:
            # A finished run with a budget it no longer meets: it goes on (the loop works out
            # again whether the strategy has anything left).
            self.progress(
                f"extending a finished run ({self.stop_reason}) to max_trials "
                f"{self.max_trials}, time_budget {self.time_budget}"
            )
            self.stop_reason = None
        elif self.stop_reason is not None and getattr(self.strategy, "exhausted", False):
            # Extending a run whose space has nothing new: say so, not only "done".
            self.progress(f"nothing to extend: {self._done_reason()}")


def small_budget_warning(strategy: Strategy, max_trials: int | None) -> str | None:
    """One line when `max_trials` is below the strategy's `population_size`: population
    strategies sample that many random candidates before mutating any, so such a run is a
    random search. None otherwise."""
    population = getattr(strategy, "population_size", None)
    if max_trials is None or not isinstance(population, int) or max_trials >= population:
        return None
    return (
        f"max_trials {max_trials} is below {strategy.name}'s population_size {population}: "
        f"its first {population} trials are random samples, so this run is a random search "
        "(raise --max-trials or lower --option population_size)"
    )


def trial_weights(trial_id: int) -> str:
    """Where a trial's trained model lies, relative to the run's folder."""
    return os.path.join(MODELS_DIR, f"trial-{trial_id:05d}.safetensors")


def best_so_far(results: list[dict[str, Any]], metric: str = "test_accuracy") -> list[tuple]:
    """(elapsed seconds, best objective so far, `metric` of that best) after each success."""
    curve, best = [], None
    for record in results:
        if record["failure"] is not None:
            continue
        if best is None or record["objective"] > best["objective"]:
            best = record
        curve.append((record["elapsed_seconds"], best["objective"], best["metrics"].get(metric)))
    return curve
