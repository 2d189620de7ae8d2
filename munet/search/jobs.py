"""The functions executors run: plain JSON in, plain JSON out, importable by any worker.

`run_objective_job(payload)` rebuilds the objective from its JSON settings (once per process)
and runs one job of it:

    {"objective": {...}, "stage": "seed" | "train" | "search" | "evaluate",
     "candidate": ..., "init_weights": path | None, "out_weights": path | None, "seed": int}

seed / train -> `objective.train`, search -> `objective.grow`, evaluate -> `objective.evaluate`
(an ask/tell trial, with the candidate in the space's JSON form; with `out_weights` the trained
model is written there).
"""

from __future__ import annotations

import functools
import json
from typing import Any

JOB_STAGES = ("seed", "train", "search", "evaluate")


@functools.lru_cache(maxsize=8)
def _objective(settings_json: str):
    from munet.search.objectives import objective_from_json

    return objective_from_json(json.loads(settings_json))


def objective_of(settings: dict[str, Any]):
    """The objective for JSON `settings`, built once per process (tables load once)."""
    return _objective(json.dumps(settings, sort_keys=True))


def run_objective_job(payload: dict[str, Any]) -> dict[str, Any]:
    """Run one job (see the module docstring); returns the objective's result record.

    Raises:
        ValueError: an unknown stage.
        Whatever the objective raises (a failed job).
    """
    stage = payload["stage"]
    objective = objective_of(payload["objective"])
    candidate, seed = payload["candidate"], int(payload["seed"])
    if stage in ("seed", "train"):
        return objective.train(
            candidate, payload.get("init_weights"), payload.get("out_weights"), seed
        )
    if stage == "search":
        return objective.grow(
            candidate, payload.get("init_weights"), payload.get("out_weights"), seed
        )
    if stage == "evaluate":
        space = objective.search_space()
        from_json = getattr(space, "from_json", None)
        decoded = from_json(candidate) if callable(from_json) else candidate
        out_weights = payload.get("out_weights")
        if out_weights is None:
            return objective.evaluate(decoded, seed)
        return objective.evaluate(decoded, seed, out_weights=out_weights)
    raise ValueError(f"unknown job stage {stage!r}; known: {', '.join(JOB_STAGES)}")
