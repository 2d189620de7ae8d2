"""Petridish loop settings (Archai's `petridish` config section) and the stop rule they define:
the seed's `_is_search_done` plus optional budgets. Used by munet.search.petridish_loop.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

# The settings a resumed loop may change: its stop limits (a finished loop then goes on).
EXTENDABLE = frozenset(
    f"settings.{name}" for name in ("max_cost", "max_pool_size", "max_trained", "time_budget")
)


@dataclass(frozen=True)
class PetridishSettings:
    """Settings of the loop (Archai's `petridish` config section).

    Attributes:
        eps: relative width of the band above the hull (`convex_hull_eps`, 0.025).
        max_cost: stop once a pool model's cost exceeds this (`max_madd`); None = never.
        max_pool_size: stop once the pool holds more models (`max_hull_points`, 100).
        max_trained: also stop after this many trained models; None = no such budget.
        time_budget: also stop once finished jobs' training seconds add up past this.
        seed: randomness of parent sampling and of every job's seed.
        max_consecutive_failures: stop after this many failed jobs in a row.
    """

    eps: float = 0.025
    max_cost: float | None = None
    max_pool_size: int = 100
    max_trained: int | None = None
    time_budget: float | None = None
    seed: int = 0
    max_consecutive_failures: int = 10

    def __post_init__(self) -> None:
        if not (math.isfinite(self.eps) and self.eps >= 0):
            raise ValueError(f"eps must be a finite number >= 0, got {self.eps!r}")
        if self.max_pool_size < 1:
            raise ValueError(f"max_pool_size must be >= 1, got {self.max_pool_size!r}")
        if self.max_trained is not None and self.max_trained < 1:
            raise ValueError(f"max_trained must be >= 1, got {self.max_trained!r}")
        if self.time_budget is not None and not self.time_budget > 0:
            raise ValueError(f"time_budget must be > 0 seconds, got {self.time_budget!r}")
        if self.max_consecutive_failures < 1:
            raise ValueError(
                f"max_consecutive_failures must be >= 1, got {self.max_consecutive_failures!r}"
            )


def stop_reason(
    settings: PetridishSettings,
    pool_costs: Sequence[float],
    simulated_seconds: float,
    consecutive_failures: int,
) -> str | None:
    """Why the loop stops now, or None: the seed's `_is_search_done`, plus the optional budgets.

    Args:
        settings: the loop's settings.
        pool_costs: the cost of every model in the pool.
        simulated_seconds: finished jobs' training seconds so far.
        consecutive_failures: jobs failed in a row.
    """
    s = settings
    if pool_costs:
        costliest = max(pool_costs)
        if s.max_cost is not None and costliest > s.max_cost:
            return f"a model's cost {costliest:.6g} exceeds max_cost {s.max_cost:.6g}"
        if len(pool_costs) > s.max_pool_size:
            return f"pool holds {len(pool_costs)} models > max_pool_size {s.max_pool_size}"
    if s.max_trained is not None and len(pool_costs) >= s.max_trained:
        return f"trained {len(pool_costs)} models (max_trained {s.max_trained})"
    if s.time_budget is not None and simulated_seconds > s.time_budget:
        return f"{simulated_seconds:.1f} training seconds > budget {s.time_budget:g}"
    if consecutive_failures >= s.max_consecutive_failures:
        return f"{consecutive_failures} jobs failed in a row"
    return None
