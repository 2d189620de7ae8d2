"""Objectives for searches that train (or look up) models: NAS-Bench-101 cells and ViTs.

- `NASBenchObjective(dataset, epochs=108, seed_lengths=(1, 2))`: cells of a table; growth adds
  a vertex or an edge; cost = parameters; simulated training time from the table.
- `VitObjective(task, layers=..., widths=..., image_sizes=..., ...)`: ViTs trained on a munet
  task; growth adds an identity-initialised encoder block; cost = FLOPs.
- `parse_objective("nasbench:FILE" | "vit:TASK", **settings)`, `objective_from_json(obj)`.
- `GrowthObjective` (the interface), `GrowthError`, `derived_seed`.
"""

from __future__ import annotations

from typing import Any

from .base import GrowthError, GrowthObjective, derived_seed

OBJECTIVE_KINDS = ("nasbench", "vit")


def _class_of(kind: str) -> type[GrowthObjective]:
    if kind == "nasbench":
        from .nasbench import NASBenchObjective

        return NASBenchObjective
    if kind == "vit":
        from .vit import VitObjective

        return VitObjective
    raise ValueError(f"unknown objective kind {kind!r}; known: {', '.join(OBJECTIVE_KINDS)}")


def parse_objective(spec: str, **settings: Any) -> GrowthObjective:
    """Build an objective from `KIND:ARG` ("nasbench:table.tfrecord", "vit:digits").

    Raises:
        ValueError: no colon, an unknown kind, or bad settings.
    """
    kind, colon, argument = str(spec).partition(":")
    if not colon or not argument:
        raise ValueError(
            f"objective {spec!r} is not KIND:ARG; expected nasbench:FILE.tfrecord or vit:TASK"
        )
    return _class_of(kind)(argument, **settings)


def objective_from_json(obj: dict[str, Any]) -> GrowthObjective:
    """Inverse of `objective.to_json()` (how a Ray worker rebuilds its objective)."""
    if not isinstance(obj, dict) or "kind" not in obj:
        raise ValueError(f"objective settings must be a dict with a 'kind', got {obj!r}")
    return _class_of(obj["kind"]).from_json(obj)


__all__ = [
    "OBJECTIVE_KINDS",
    "GrowthError",
    "GrowthObjective",
    "derived_seed",
    "objective_from_json",
    "parse_objective",
]
