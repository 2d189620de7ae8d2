"""The ask/tell contract every search strategy follows.

A *search space* (the problem side) samples, mutates and identifies candidates; a *strategy*
only decides which candidate to evaluate next from the objectives (and costs) it is told.
Strategies never look inside candidates.

Candidates and checkpoints: a strategy's `state_dict()` is plain JSON. Candidates go into it
as-is, so they must be JSON values (dicts with string keys, lists, str, int, float, bool,
None) -- *unless* the space defines both `to_json(candidate)` and `from_json(obj)`, which the
strategy then uses to encode and decode them. `space.key(candidate)` must return a JSON value
too (str, int, or a tuple/list of them): deduplication stores keys in the checkpoint.
"""

from __future__ import annotations

import json
import math
import numbers
import random
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, runtime_checkable

# The checks and JSON helpers live in .checks; they stay importable from here.
from .checks import (  # noqa: F401
    check_bool,
    check_choice,
    check_int,
    check_objective,
    check_probability,
    key_token,
    rng_state_from_json,
    rng_state_to_json,
)

Candidate = Any

STATE_FORMAT_VERSION = 1


@runtime_checkable
class SearchSpace(Protocol):
    """What a strategy may do with candidates: sample, mutate, identify."""

    def sample(self, rng: random.Random) -> Candidate:
        """Return a fresh random candidate, drawing randomness only from `rng`."""
        ...

    def mutate(self, candidate: Candidate, rng: random.Random, mutation_prob: float) -> Candidate:
        """Return a new candidate derived from `candidate` (left unchanged).

        `mutation_prob` is the per-dimension probability of resampling (NNI's meaning); a space
        whose candidates have no dimensions may interpret it as the strength of the change.
        """
        ...

    def key(self, candidate: Candidate) -> Hashable:
        """Identity of a candidate for deduplication (e.g. a graph hash)."""
        ...


@dataclass(frozen=True)
class Trial:
    """One proposed evaluation: tell its result back under the same `id`."""

    id: int
    candidate: Candidate


class Strategy(ABC):
    """Base of all search strategies: an ask/tell loop over trials.

    The driver calls `ask()` whenever it can start an evaluation and `tell()` when one ends, in
    any order and with several trials in flight. The objective is MAXIMISED (e.g. validation
    accuracy); `None` means the trial failed. All randomness comes from one `random.Random`
    owned by the strategy, whose state is part of `state_dict()`, so a run replays exactly.

    Args:
        space: the search space (see `SearchSpace`).
        seed: seed of the strategy's random generator.
        dedup: never propose a candidate whose `space.key` was proposed before.
        dedup_retries: how many fresh proposals to try before concluding the space is exhausted
            (the strategy is then done). NNI's default is 500.

    Subclasses implement `_propose` and `_record` and may extend the saved state through
    `_extra_state` / `_load_extra_state`. A subclass that derives a candidate from an earlier
    trial sets `self._proposal_parent` to that trial's id while proposing (`parent_of`).
    """

    name: ClassVar[str] = ""

    def __init__(
        self, space: SearchSpace, seed: int, *, dedup: bool = True, dedup_retries: int = 500
    ) -> None:
        for method in ("sample", "mutate", "key"):
            if not callable(getattr(space, method, None)):
                raise TypeError(
                    f"search space {type(space).__name__} has no {method}() method; "
                    "expected sample(rng), mutate(candidate, rng, mutation_prob), key(candidate)"
                )
        if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
            raise TypeError(f"seed must be an int, got {seed!r}")
        self.space = space
        self.seed = int(seed)
        self.dedup = check_bool("dedup", dedup)
        self.dedup_retries = check_int("dedup_retries", dedup_retries, minimum=1)
        self._rng = random.Random(seed)
        self._next_id = 0
        self._pending: dict[int, Candidate] = {}
        self._seen_keys: set[str] = set()
        self._exhausted = False
        self._num_told = 0
        self._num_failed = 0
        self._num_duplicates = 0
        self._best: tuple[int, Candidate, float] | None = None
        # trial id -> id of the trial it was derived from (mutation parent); a replayable record
        self._parents: dict[int, int] = {}
        self._proposal_parent: int | None = None  # set by subclasses while proposing

    # ----------------------------------------------------------------------------- public API

    def options(self) -> dict[str, Any]:
        """The constructor options (besides space and seed), as JSON values."""
        return {"dedup": self.dedup, "dedup_retries": self.dedup_retries}

    def ask(self) -> Trial | None:
        """Propose the next trial, or None when there is nothing to propose now.

        None means either "wait for results" (e.g. the initial population is still being
        evaluated) or "done" (`is_done` tells which). Waiting consumes no randomness.
        """
        if self.is_done:
            return None
        self._proposal_parent = None
        candidate = self._propose()
        if candidate is None:
            return None
        trial = Trial(self._next_id, candidate)
        self._next_id += 1
        self._pending[trial.id] = candidate
        if self._proposal_parent is not None:
            self._parents[trial.id] = self._proposal_parent
        self._on_ask(trial)
        return trial

    def tell(self, trial_id: int, objective: float | None, cost: float | None = None) -> None:
        """Report the result of a trial returned by `ask()`.

        Args:
            trial_id: the `Trial.id`.
            objective: the measured objective, maximised; None if the trial failed. A NaN or
                infinite objective is treated as a failure (with a warning).
            cost: optional finite cost of the candidate (parameters, training time, ...).

        Raises:
            ValueError: unknown or already-told trial id, a non-numeric objective or cost, or a
                result the strategy cannot use (e.g. petridish without a cost); the strategy
                is then unchanged.
        """
        if trial_id not in self._pending:
            pending = sorted(self._pending)
            raise ValueError(
                f"unknown trial id {trial_id!r}; pending trials: {pending[:20]}"
                + (" ..." if len(pending) > 20 else "")
            )
        objective = check_objective(trial_id, objective)
        if cost is not None:
            if (
                isinstance(cost, bool)
                or not isinstance(cost, numbers.Real)
                or not math.isfinite(cost)
            ):
                raise ValueError(f"cost of trial {trial_id} must be a finite number, got {cost!r}")
            cost = float(cost)
        self._check_result(trial_id, objective, cost)
        candidate = self._pending.pop(trial_id)
        self._num_told += 1
        if objective is None:
            self._num_failed += 1
        elif self._best is None or objective > self._best[2]:
            # Strictly greater: among equal objectives the earliest told stays best.
            self._best = (trial_id, candidate, objective)
        self._record(Trial(trial_id, candidate), objective, cost)

    @property
    def best(self) -> tuple[Trial, float] | None:
        """The best successful trial so far and its objective, or None before any success."""
        if self._best is None:
            return None
        trial_id, candidate, objective = self._best
        return Trial(trial_id, candidate), objective

    def parent_of(self, trial_id: int) -> int | None:
        """The id of the trial that `trial_id` was mutated from; None for random samples."""
        return self._parents.get(trial_id)

    @property
    def is_done(self) -> bool:
        """True once the strategy will propose nothing more (space exhausted or a stop rule)."""
        return self._exhausted or self._is_done()

    @property
    def exhausted(self) -> bool:
        """True once ``dedup_retries`` proposals in a row were candidates already proposed:
        the space has (almost surely) nothing new left."""
        return self._exhausted

    @property
    def pending(self) -> list[Trial]:
        """Trials asked but not yet told, oldest first (e.g. to restart them after a resume)."""
        return [Trial(i, c) for i, c in sorted(self._pending.items())]

    @property
    def num_told(self) -> int:
        """How many results were told (failures included)."""
        return self._num_told

    @property
    def num_failed(self) -> int:
        """How many told results were failures."""
        return self._num_failed

    @property
    def num_duplicates(self) -> int:
        """How many proposals were rejected as duplicates (the notebook's "collisions")."""
        return self._num_duplicates

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue exactly where this strategy is, as plain JSON.

        Raises:
            TypeError: a candidate is not JSON-serialisable and the space has no to_json.
        """
        best = None
        if self._best is not None:
            trial_id, candidate, objective = self._best
            best = {"id": trial_id, "candidate": self._encode(candidate), "objective": objective}
        state = {
            "format_version": STATE_FORMAT_VERSION,
            "strategy": self.name,
            "seed": self.seed,
            "options": self.options(),
            "rng": rng_state_to_json(self._rng),
            "next_id": self._next_id,
            "pending": [[i, self._encode(c)] for i, c in sorted(self._pending.items())],
            "seen_keys": sorted(self._seen_keys),
            "exhausted": self._exhausted,
            "num_told": self._num_told,
            "num_failed": self._num_failed,
            "num_duplicates": self._num_duplicates,
            "best": best,
            "parents": [[child, parent] for child, parent in sorted(self._parents.items())],
            "extra": self._extra_state(),
        }
        try:
            json.dumps(state, allow_nan=False)
        except (TypeError, ValueError) as error:
            raise TypeError(
                f"{self.name} state is not JSON-serialisable ({error}); candidates must be JSON "
                "values or the space must define to_json(candidate) and from_json(obj)"
            ) from error
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a `state_dict()` taken from a strategy built with the same options.

        Raises:
            ValueError: the state belongs to another strategy, format version or options.
        """
        if not isinstance(state, dict):
            raise ValueError(f"strategy state must be a dict, got {type(state).__name__}")
        version = state.get("format_version")
        if version != STATE_FORMAT_VERSION:
            raise ValueError(
                f"unsupported strategy state format_version {version!r}; "
                f"expected {STATE_FORMAT_VERSION}"
            )
        if state.get("strategy") != self.name:
            raise ValueError(f"state is for strategy {state.get('strategy')!r}, not {self.name!r}")
        saved_options = state.get("options")
        if saved_options != self.options():
            raise ValueError(
                f"state was saved with options {saved_options!r}, but this {self.name} "
                f"strategy has {self.options()!r}; build it with the saved options"
            )
        self.seed = state["seed"]
        self._rng.setstate(rng_state_from_json(state["rng"]))
        self._next_id = int(state["next_id"])
        self._pending = {int(i): self._decode(c) for i, c in state["pending"]}
        self._seen_keys = set(state["seen_keys"])
        self._exhausted = bool(state["exhausted"])
        self._num_told = int(state["num_told"])
        self._num_failed = int(state["num_failed"])
        self._num_duplicates = int(state["num_duplicates"])
        best = state["best"]
        self._best = (
            None
            if best is None
            else (int(best["id"]), self._decode(best["candidate"]), float(best["objective"]))
        )
        self._parents = {int(child): int(parent) for child, parent in state["parents"]}
        self._proposal_parent = None
        self._load_extra_state(state["extra"])

    # ------------------------------------------------------------------------- subclass hooks

    @abstractmethod
    def _propose(self) -> Candidate | None:
        """Return the next candidate, or None to make the driver wait (draw no randomness)."""

    @abstractmethod
    def _record(self, trial: Trial, objective: float | None, cost: float | None) -> None:
        """Take in a told result (objective None = failure)."""

    def _on_ask(self, trial: Trial) -> None:
        """Called with each trial `ask()` returns (e.g. to attach the parent to its id)."""
        del trial

    def _check_result(self, trial_id: int, objective: float | None, cost: float | None) -> None:
        """Raise ValueError for a result this strategy cannot use, before any state changes."""
        del trial_id, objective, cost

    def _is_done(self) -> bool:
        return False

    def _extra_state(self) -> dict[str, Any]:
        return {}

    def _load_extra_state(self, state: dict[str, Any]) -> None:
        del state

    # ---------------------------------------------------------------------------- for subclasses

    def _unique(self, make: Callable[[], Candidate]) -> Candidate | None:
        """Call `make` until it returns a candidate not proposed before (when dedup is on).

        Returns None, and marks the strategy exhausted (done), after `dedup_retries` duplicates
        in a row -- NNI's "cannot find a new model to submit, stop".
        """
        for _ in range(self.dedup_retries):
            candidate = make()
            if not self.dedup:
                return candidate
            token = key_token(self.space.key(candidate))
            if token not in self._seen_keys:
                self._seen_keys.add(token)
                return candidate
            self._num_duplicates += 1
        self._exhausted = True
        return None

    def _encode(self, candidate: Candidate) -> Any:
        to_json = getattr(self.space, "to_json", None)
        return to_json(candidate) if callable(to_json) else candidate

    def _decode(self, obj: Any) -> Candidate:
        from_json = getattr(self.space, "from_json", None)
        return from_json(obj) if callable(from_json) else obj
