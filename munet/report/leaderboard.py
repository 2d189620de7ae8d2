"""The system leaderboard: one row per published path, the seed's first columns (seed 000,
``df_leaderboard``): agent, task, test quality, score, quality, accounted params, flops, ids.

Rows are plain dicts; :func:`format_leaderboard` renders them as an aligned text table, CSV or
JSON. Rows are sorted by agent, then by decreasing score (the seed's order).
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

COLUMNS = (
    "agent_id",
    "task_name",
    "test_quality",
    "score",
    "quality",
    "accounted_params",
    "flops",
    "id",
    "parent_id",
    "parent_agent_id",
    "num_cycles",
    # After the seed's columns: where the task's data come from (a bound source spec,
    # embedded, tfds).
    "source",
    "paths",
    "components",
)
# The text table leaves out the long component list (CSV and JSON keep it), and shows the
# parent as one `agent:id` column: the seed's `parent_id` alone reads as a path of the row's own
# agent, while it is mostly another agent's (the root model's, another task's).
TABLE_COLUMNS = tuple(
    "parent" if c == "parent_id" else c
    for c in COLUMNS
    if c not in ("components", "parent_agent_id")
)
# Table headings that say what a seed-named column holds: `num_cycles` counts the cycles that
# ended with this path as its agent's best (not the cycles the agent ran).
TABLE_HEADINGS = {"num_cycles": "cycles_as_best"}
FORMATS = ("table", "csv", "json")


class PathLike(Protocol):
    id: int
    agent_id: str
    task_name: str
    metrics: dict[str, Any]
    parent: Any


def path_row(path: PathLike, components: str = "", paths: str = "") -> dict[str, Any]:
    """A leaderboard row of one path (missing metrics are None); ``paths`` lists a multipath
    path's subpaths (``agent:id`` separated by spaces)."""
    metrics = path.metrics
    return {
        "agent_id": path.agent_id,
        "task_name": path.task_name,
        "test_quality": metrics.get("test_quality"),
        "score": metrics.get("score"),
        "quality": metrics.get("quality"),
        "accounted_params": metrics.get("accounted_params"),
        "flops": metrics.get("flops"),
        "id": path.id,
        "parent_id": path.parent.id if path.parent is not None else -1,
        "parent_agent_id": path.parent.agent_id if path.parent is not None else None,
        "num_cycles": metrics.get("num_cycles"),
        "source": None,
        "paths": paths,
        "components": components,
    }


def _sort_key(row: dict[str, Any]) -> tuple:
    score = row.get("score")
    missing = score is None or (isinstance(score, float) and math.isnan(score))
    return (row["agent_id"], missing, -(score or 0.0), row["id"])


def sort_rows(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """By agent, then by decreasing score (rows without a score last)."""
    return sorted(rows, key=_sort_key)


def _value(row: dict[str, Any], column: str) -> Any:
    """A row's value of a column; ``parent`` is ``agent:id`` (None for a root model)."""
    if column == "parent":
        parent_id = row.get("parent_id")
        if parent_id is None or parent_id < 0:
            return None
        return f"{row.get('parent_agent_id')}:{parent_id}"
    return row.get(column)


def _cell(value: Any, column: str) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if math.isnan(value):
            return "-"
        if column in ("accounted_params", "flops"):
            return _si(value)
        return f"{value:.4f}"
    if isinstance(value, int) and column in ("accounted_params", "flops"):
        return _si(float(value))
    return str(value)


def _si(value: float) -> str:
    for unit, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.3g}{unit}"
    return f"{value:.3g}"


def averages(rows: Sequence[dict[str, Any]]) -> dict[str, float]:
    """Mean score, quality and test quality over rows that have them (the seed's footer)."""
    out = {}
    for column in ("score", "quality", "test_quality"):
        values = [r[column] for r in rows if isinstance(r.get(column), int | float)]
        values = [v for v in values if not math.isnan(v)]
        if values:
            out[column] = sum(values) / len(values)
    return out


def format_leaderboard(
    rows: Iterable[dict[str, Any]], fmt: str = "table", columns: Sequence[str] | None = None
) -> str:
    """Renders rows as ``table`` (aligned text with averages), ``csv`` or ``json``.

    Args:
        rows: leaderboard rows (see :func:`path_row`).
        fmt: ``table``, ``csv`` or ``json``.
        columns: columns to show (default: ``TABLE_COLUMNS`` for the table, else ``COLUMNS``).

    Raises:
        ValueError: unknown format.
    """
    rows = sort_rows(rows)
    if columns is None:
        columns = TABLE_COLUMNS if fmt == "table" else COLUMNS
    if fmt == "json":
        return json.dumps([{c: r.get(c) for c in columns} for r in rows], indent=2)
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=list(columns), extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow({c: "" if row.get(c) is None else row.get(c) for c in columns})
        return out.getvalue()
    if fmt != "table":
        raise ValueError(f"unknown leaderboard format {fmt!r}; known: {', '.join(FORMATS)}")
    if not rows:
        return "(no published paths)"
    cells = [[_cell(_value(r, c), c) for c in columns] for r in rows]
    headings = [TABLE_HEADINGS.get(c, c) for c in columns]
    widths = [max(len(h), *(len(line[i]) for line in cells)) for i, h in enumerate(headings)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headings, widths, strict=True)).rstrip()]
    for line in cells:
        lines.append("  ".join(v.ljust(w) for v, w in zip(line, widths, strict=True)).rstrip())
    means = averages(rows)
    if means:
        lines.append("  ".join(f"avg {k}: {v:.4f}" for k, v in means.items()))
    return "\n".join(lines)
