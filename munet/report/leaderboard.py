"""The system leaderboard: one row per published path, the seed's first columns (seed 000,
``df_leaderboard``): agent, task, test quality, score, quality, accounted params, flops, ids.

The parent is the path a row's path was mutated from, as its agent's history recorded it at
sampling. Once that parent is pruned, the system relinks the path to its nearest ancestor still
kept (its manifest record's ``parent``); the leaderboard shows that one apart, as
``kept_ancestor``, so the parent column never names a path the child was not sampled from.

Rows are plain dicts; :func:`format_leaderboard` renders them as an aligned text table, CSV or
JSON. Rows are sorted by agent, then by decreasing score (the seed's order).
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from munet.report.rows import as_int

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
    # The nearest ancestor still in the system (`agent:id`): the parent, or an older ancestor
    # once the parent was pruned.
    "kept_ancestor",
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


def path_row(
    path: PathLike, components: str = "", paths: str = "", parent: str | None = None
) -> dict[str, Any]:
    """A leaderboard row of one path (missing metrics are None).

    Args:
        path: the path; its ``parent`` is its nearest kept ancestor.
        components: its components (``name:agent:id`` separated by commas).
        paths: a multipath path's subpaths (``agent:id`` separated by spaces).
        parent: the full id of the path it was mutated from when that is known apart from
            ``path.parent`` (its history row); default: the parent it lost on load
            (``orphaned_parent``), else ``path.parent``.
    """
    metrics = path.metrics
    kept = path.parent.full_id if path.parent is not None else None
    parent = parent or getattr(path, "orphaned_parent", None) or kept
    parent_agent, parent_id = split_path_id(parent)
    return {
        "agent_id": path.agent_id,
        "task_name": path.task_name,
        "test_quality": metrics.get("test_quality"),
        "score": metrics.get("score"),
        "quality": metrics.get("quality"),
        "accounted_params": metrics.get("accounted_params"),
        "flops": metrics.get("flops"),
        "id": path.id,
        "parent_id": parent_id,
        "parent_agent_id": parent_agent,
        "kept_ancestor": kept,
        "num_cycles": metrics.get("num_cycles"),
        "source": None,
        "paths": paths,
        "components": components,
    }


def split_path_id(full_id: str | None) -> tuple[str | None, int]:
    """``(agent id, path id)`` of ``agent:id``; ``(None, -1)`` for None or an empty id."""
    if not full_id:
        return None, -1
    agent, _, number = full_id.rpartition(":")
    return agent, int(number)


def recorded_parent(
    record: Mapping[str, Any], history_row: Mapping[str, Any] | None
) -> str | None:
    """The full id of the path a published path was mutated from.

    Args:
        record: the path's manifest record (its ``parent`` is the nearest kept ancestor).
        history_row: the path's row in its agent's history (strings, as the CSV holds them),
            which keeps the parent at sampling; None when the history has no row of it.

    Returns:
        The history row's parent; without a row, the parent the record lost on load
        (``orphaned_parent``), else the record's parent; None for a root model.
    """
    if history_row is not None:
        agent = history_row.get("parent_agent_id")
        number = as_int(history_row.get("parent_id"), -1)
        return f"{agent}:{number}" if agent and number >= 0 else None
    return record.get("orphaned_parent") or record.get("parent") or None


def record_row(record: Mapping[str, Any], history_row: Mapping[str, Any] | None = None) -> dict:
    """A leaderboard row from a manifest's path record and the path's history row (see
    :func:`recorded_parent`); ``source`` is left None for the caller."""
    parent_agent, parent_id = split_path_id(recorded_parent(record, history_row))
    metrics = record.get("metrics") or {}
    row: dict[str, Any] = {
        "agent_id": record["agent_id"],
        "task_name": record["task_name"],
        "id": int(record["id"]),
        "parent_id": parent_id,
        "parent_agent_id": parent_agent,
        "kept_ancestor": record.get("parent") or None,
        "source": None,
        "components": ",".join(
            ref["component"].split(":", 1)[1] for ref in record["components"] if "component" in ref
        ),
    }
    for key in ("test_quality", "score", "quality", "accounted_params", "flops", "num_cycles"):
        row[key] = metrics.get(key)
    # A multipath path's subpaths: the agents and path ids it routes through.
    subpaths = (record.get("hparams") or {}).get("paths") or {}
    row["paths"] = " ".join(
        f"{ref['agent_id']}:{ref['id']}" for _, ref in sorted(subpaths.items())
    )
    return row


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
