"""The Petridish loop's pool of trained models: its records (`PoolPoint`, the `LoopReport` a loop
returns) and the seed's `sample_from_hull`, which draws the parent to grow next.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from .hull import eps_band, hull_sampling_weights


@dataclass
class PoolPoint:
    """A trained model in the pool (the seed's `ConvexHullPoint` after its train stage)."""

    id: int  # id of the job that trained it
    candidate: Any
    error: float
    cost: float
    sampling_count: int
    parent_id: int | None  # pool id of the model it was grown from; None for seed models
    stage: str  # "seed" or "train"
    weights: str | None  # relative to the output folder
    train_seconds: float  # its search + train jobs (or its seed job)
    metrics: dict[str, Any] = field(default_factory=dict)


@dataclass
class LoopReport:
    """What a finished (or interrupted) loop returns."""

    pool: list[PoolPoint]
    stop_reason: str
    num_jobs: int
    num_failed: int
    simulated_seconds: float
    outputs: dict[str, str]


def sample_parent(pool: list[PoolPoint], eps: float, rng: random.Random) -> PoolPoint:
    """The seed's `sample_from_hull`: a model from the eps band of the pool's lower convex hull
    of error vs cost, weighted towards less-sampled and cheaper ones; its sampling count rises.

    Args:
        pool: the trained models (not empty).
        eps: relative width of the band above the hull.
        rng: the loop's random state (one draw).
    """
    costs = [p.cost for p in pool]
    errors = [p.error for p in pool]
    band = [pool[i] for i in eps_band(costs, errors, eps)]
    weights = hull_sampling_weights([p.sampling_count for p in band], [p.cost for p in band])
    (parent,) = rng.choices(band, weights=weights)
    parent.sampling_count += 1
    return parent
