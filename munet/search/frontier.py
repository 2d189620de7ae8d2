"""Petridish's outputs: the frontier plot, the frontier's models, and the whole pool.

After Archai's `plot_frontier`, `save_hull_frontier` and `save_hull`: `frontier.png` shows every
pool model (error vs cost), the lower convex hull and the eps band; `frontier.json` lists the
hull's models by cost (with their weights files) and the band; `pool.json` holds every model.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from .hull import eps_band, lower_convex_hull
from .objectives.base import atomic_target


def frontier_indices(pool: Sequence[Any], eps: float) -> tuple[list[int], list[int]]:
    """(hull indices, band indices) of pool points, each ordered by cost."""
    if not pool:
        return [], []
    costs = [p.cost for p in pool]
    errors = [p.error for p in pool]
    return lower_convex_hull(costs, errors), eps_band(costs, errors, eps)


def _point_json(point: Any, objective: Any) -> dict[str, Any]:
    row = asdict(point)
    row["description"] = objective.describe(point.candidate)
    return row


def _write_json(path: str, data: Any) -> None:
    temporary = atomic_target(path)
    with open(temporary, "w") as handle:
        json.dump(data, handle, indent=1, allow_nan=False)
    os.replace(temporary, path)


def write_outputs(out_dir: str, pool: Sequence[Any], eps: float, objective: Any) -> dict[str, str]:
    """Write frontier.png, frontier.json and pool.json into `out_dir`; returns their paths."""
    hull, band = frontier_indices(pool, eps)
    paths = {
        "frontier_plot": os.path.join(out_dir, "frontier.png"),
        "frontier": os.path.join(out_dir, "frontier.json"),
        "pool": os.path.join(out_dir, "pool.json"),
    }
    best = min(range(len(pool)), key=lambda i: (pool[i].error, pool[i].cost), default=None)
    _write_json(
        paths["frontier"],
        {
            "eps": eps,
            "hull": [_point_json(pool[i], objective) for i in hull],
            "band": [_point_json(pool[i], objective) for i in band],
            "best": None if best is None else _point_json(pool[best], objective),
        },
    )
    _write_json(paths["pool"], [_point_json(p, objective) for p in pool])
    plot_frontier(
        paths["frontier_plot"], pool, hull, band, eps, title=objective.kind,
        cost_unit=getattr(objective, "cost_unit", ""),
    )
    return paths


def plot_frontier(
    path: str,
    pool: Sequence[Any],
    hull: list[int],
    band: list[int],
    eps: float,
    title: str = "",
    cost_unit: str = "",
) -> None:
    """Error vs cost of every pool model, the hull (line) and the eps band (marked); the x
    axis says the cost's unit (``cost (FLOPs)``) when given."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    seeds = [p for p in pool if p.stage == "seed"]
    grown = [p for p in pool if p.stage != "seed"]
    ax.scatter([p.cost for p in grown], [p.error for p in grown], s=14, c="tab:gray",
               label="grown models")
    ax.scatter([p.cost for p in seeds], [p.error for p in seeds], s=24, marker="s",
               c="tab:green", label="seed models")
    if band:
        ax.scatter([pool[i].cost for i in band], [pool[i].error for i in band], s=50,
                   facecolors="none", edgecolors="tab:orange", label=f"eps band ({eps:g})")
    if hull:
        ax.plot([pool[i].cost for i in hull], [pool[i].error for i in hull], "-o", c="tab:blue",
                ms=4, label="lower convex hull")
    costs = [p.cost for p in pool]
    if costs and min(costs) > 0 and max(costs) / min(costs) > 20:
        ax.set_xscale("log")
    ax.set_xlabel(f"cost ({cost_unit})" if cost_unit else "cost")
    ax.set_ylabel("error (1 - validation accuracy)")
    ax.set_title(f"Petridish frontier {title} ({len(pool)} models)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
