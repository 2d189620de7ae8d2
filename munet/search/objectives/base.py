"""What a search objective provides, and the JSON records its jobs return.

An objective is the problem side of a search that *trains* models (or looks them up): it
names its seed models (Petridish's grid of macro settings), trains a candidate, grows one
(Petridish's "search" job) and scores it. Everything crosses process boundaries as JSON:
an objective rebuilds itself from `to_json()` inside a Ray worker (`objective_from_json`),
and weights travel as safetensors files under the run's output folder (shared storage on a
cluster), never as pickles.

Result record of a job (a dict, JSON):

    candidate      the model's candidate (JSON; the grown one for a search job)
    error          1 - validation accuracy (lower is better); None for a search job
    cost           parameters, FLOPs, ... (the hull's x axis)
    train_seconds  simulated (NAS-Bench) or measured training time of this job
    metrics        further numbers (validation/test accuracy, steps, ...)
    weights        path of the model's safetensors file, or None (NAS-Bench has no weights)
"""

from __future__ import annotations

import hashlib
import os
from abc import ABC, abstractmethod
from typing import Any

Candidate = Any
Result = dict[str, Any]


def cost_text(cost: float, unit: str) -> str:
    """A cost with its unit, compact: ``1.23M FLOPs``, ``4.2k params``, ``350 params``."""
    for scale, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(cost) >= scale:
            return f"{cost / scale:.3g}{prefix} {unit}"
    return f"{cost:.3g} {unit}"


class GrowthObjective(ABC):
    """An objective a Petridish loop (and any ask/tell strategy) can run.

    Subclasses set `kind` (the prefix in `KIND:ARG` specs) and implement the methods below;
    every method that a job runs must be deterministic given its `seed` argument.
    """

    kind: str = ""
    uses_weights: bool = True  # False: jobs need no weights files (e.g. a lookup table)
    #: What `cost` counts, shown in progress lines, the summary table and the plot's x axis.
    cost_unit: str = "cost units"

    @abstractmethod
    def to_json(self) -> dict[str, Any]:
        """The objective's settings as JSON, including `"kind"` (inverse: `from_json`)."""

    @classmethod
    @abstractmethod
    def from_json(cls, obj: dict[str, Any]) -> GrowthObjective:
        """Rebuild from `to_json()`."""

    @abstractmethod
    def seed_candidates(self) -> list[Candidate]:
        """Petridish's seed models: one candidate per point of the macro grid."""

    @abstractmethod
    def cost_of(self, candidate: Candidate) -> float:
        """The candidate's cost without training it (cheap)."""

    @abstractmethod
    def describe(self, candidate: Candidate) -> str:
        """A short human-readable form of a candidate (for progress lines and tables)."""

    @abstractmethod
    def train(
        self, candidate: Candidate, init_weights: str | None, out_weights: str | None, seed: int
    ) -> Result:
        """Train `candidate` (from `init_weights` if given, else fresh) and score it.

        Args:
            candidate: the model.
            init_weights: safetensors file to start from (a search job's output), or None.
            out_weights: where to write the trained weights (None: do not write).
            seed: randomness of initialisation, data order, table repeat.

        Returns:
            A result record (see the module docstring) with `error` set.
        """

    @abstractmethod
    def grow(
        self, candidate: Candidate, init_weights: str | None, out_weights: str | None, seed: int
    ) -> Result:
        """Petridish's search job: grow `candidate` by one unit and train what was added.

        Returns:
            A result record of the grown candidate; `error` may be None (not yet scored).

        Raises:
            GrowthError: the candidate cannot grow (e.g. it is at the space's limits).
        """

    def search_space(self) -> Any:
        """A `munet.search` space over the same candidates, for the ask/tell strategies."""
        raise NotImplementedError(f"objective {self.kind!r} has no search space")

    def evaluate(self, candidate: Candidate, seed: int, out_weights: str | None = None) -> Result:
        """Score a candidate from scratch (an ask/tell trial): train it, writing the trained
        model to `out_weights` when given."""
        return self.train(candidate, None, out_weights, seed)


class GrowthError(RuntimeError):
    """A candidate cannot be grown (it is at the limits of the space)."""


def derived_seed(*parts: Any) -> int:
    """A 63-bit seed from any parts (e.g. run seed and job id), stable across processes."""
    digest = hashlib.sha256(repr(parts).encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


def atomic_target(path: str) -> str:
    """A temporary name beside `path`; write there, then `os.replace(tmp, path)`."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    return os.path.join(directory, f".{os.path.basename(path)}.{os.getpid()}.tmp")
