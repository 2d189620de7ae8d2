"""The path history as the report reads it: a ``paths.csv`` row (strings) or a manifest's
metric values turned into typed :class:`Candidate` records, tolerant of missing and NaN values
and of older states that lack the newer columns."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Candidate:
    """One sampled path of the history (a row of ``paths.csv``)."""

    path_id: int
    cycle: int
    generation: int
    quality: float | None
    score: float | None
    admitted: bool
    failure: str | None
    mutations: list[str]
    agent_id: str = ""
    parent: tuple[str, int] | None = None  # (agent id, path id) of the parent at sampling.
    evals: list[float | None] = field(default_factory=list)  # Validation quality, in order.
    # One per validation when the state records them (older states: None).
    eval_steps: list[float] | None = None  # Train steps done at each validation.
    train_losses: list[float | None] | None = None  # Mean train loss since the last one.



def as_float(value: Any) -> float | None:
    """A number from a metric value (CSV strings included); None for missing or NaN."""
    if value is None or value == "" or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number


def as_int(value: Any, default: int = 0) -> int:
    """A whole number from a metric value; ``default`` for missing or NaN."""
    number = as_float(value)
    return default if number is None else int(number)


def _parse_list(value: Any) -> list[str]:
    if isinstance(value, list):
        return [str(v) for v in value]
    if not value:
        return []
    try:
        parsed = json.loads(value)
    except (TypeError, ValueError):
        return [str(value)]
    return [str(v) for v in parsed] if isinstance(parsed, list) else [str(parsed)]


def parse_numbers(value: Any) -> list[float | None] | None:
    """A JSON list of numbers (a CSV cell, or a list) as floats, NaN and null as None; None
    when the value is missing or not a list."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    if not isinstance(value, list):
        return None
    return [as_float(v) for v in value]


def candidate_from_row(row: Mapping[str, Any]) -> Candidate:
    """A history row (strings from the CSV, or values) as a :class:`Candidate`."""
    improved = row.get("metrics.improved")
    parent_id = as_int(row.get("parent_id"), -1)
    parent_agent = row.get("parent_agent_id") or None
    steps = parse_numbers(row.get("metrics.eval_steps"))
    return Candidate(
        path_id=as_int(row.get("id"), -1),
        cycle=as_int(row.get("metrics.cycle_id")),
        generation=as_int(row.get("metrics.generation_id")),
        quality=as_float(row.get("metrics.quality")),
        score=as_float(row.get("metrics.score")),
        admitted=improved is True or str(improved).lower() == "true",
        failure=row.get("metrics.failure") or None,
        mutations=_parse_list(row.get("metrics.mutations")),
        agent_id=str(row.get("agent_id") or ""),
        parent=(str(parent_agent), parent_id) if parent_agent and parent_id >= 0 else None,
        evals=parse_numbers(row.get("metrics.evals")) or [],
        eval_steps=None if steps is None or None in steps else [float(s) for s in steps],
        train_losses=parse_numbers(row.get("metrics.train_losses")),
    )


def mutation_name(line: str) -> str | None:
    """The mutated quantity of a fired mutation line (``opt_lr``, ``clone:cls``); None for
    parent-selection lines and mutations that did not fire."""
    if line.startswith("parent "):
        return None
    name, sep, rest = line.partition(" : ")
    if not sep or not (" --> " in rest or rest.startswith("fired")):
        return None
    return name.strip()
