"""The path history: one flat row per sampled path, written as CSV for analysis.

Columns: agent_id, task_name, id, parent_id (-1 for none), parent_agent_id, components
(`agent_id:id,...`, plain components only), then `hparams.<k>` and `metrics.<k>`. Dicts and
lists are JSON-encoded, None is an empty cell (as the seed's `paths_to_df`).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable
from typing import Any

from munet.system.path import Path

FIXED_COLUMNS = ("agent_id", "task_name", "id", "parent_id", "parent_agent_id", "components")


def _cell(value: Any) -> Any:
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, sort_keys=True)
    return value


def path_row(path: Path) -> dict[str, Any]:
    """The history row of a path (metrics as they are now)."""
    row: dict[str, Any] = {
        "agent_id": path.agent_id,
        "task_name": path.task_name,
        "id": path.id,
        "parent_id": path.parent.id if path.parent is not None else -1,
        "parent_agent_id": path.parent.agent_id if path.parent is not None else None,
        "components": ",".join(c.source_id for c in path.comps_only()),
    }
    for key, value in path.hparams.items():
        row[f"hparams.{key}"] = _cell(value)
    for key, value in path.metrics.items():
        row[f"metrics.{key}"] = _cell(value)
    return row


def rows_to_csv(rows: Iterable[dict[str, Any]]) -> str:
    """CSV text of rows: fixed columns first, then the union of the others, sorted."""
    rows = list(rows)
    extra = sorted({k for row in rows for k in row} - set(FIXED_COLUMNS))
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=[*FIXED_COLUMNS, *extra], lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: ("" if v is None else v) for k, v in row.items()})
    return out.getvalue()


def csv_to_rows(text: str) -> list[dict[str, str]]:
    """Rows of a history CSV as strings (empty cells stay empty strings)."""
    return list(csv.DictReader(io.StringIO(text)))


def check_history_rows(text: str, agent_id: str, next_path_id: int | None = None) -> int:
    """Checks the text of a history CSV as a state holds it; returns its row count.

    Args:
        text: the CSV text.
        agent_id: the agent whose state holds it (every row is one of its paths).
        next_path_id: the state's next path id (every row's id is below it), if known.

    Raises:
        ValueError: naming the line and what is wrong (a missing fixed column, a row with
            too many or too few cells, another agent's row, a path id that is no integer).
    """
    try:
        reader = csv.DictReader(io.StringIO(text))
        header = reader.fieldnames or []
        missing = [c for c in FIXED_COLUMNS if c not in header]
        if missing:
            raise ValueError(f"header lacks the columns {', '.join(missing)}")
        count = 0
        for row in reader:
            count += 1
            line = reader.line_num
            if None in row or None in row.values():
                more = "more" if None in row else "fewer"
                raise ValueError(f"line {line} has {more} cells than the header's {len(header)}")
            if row["agent_id"] != agent_id:
                raise ValueError(f"line {line} is a path of {row['agent_id']!r}, not {agent_id!r}")
            try:
                path_id, parent_id = int(row["id"]), int(row["parent_id"])
            except ValueError:
                raise ValueError(
                    f"line {line}: id {row['id']!r} / parent_id {row['parent_id']!r} are no "
                    "integers"
                ) from None
            if path_id < 0 or parent_id < -1:
                raise ValueError(f"line {line}: id {path_id} / parent_id {parent_id} < 0")
            if next_path_id is not None and path_id >= next_path_id:
                raise ValueError(
                    f"line {line}: path id {path_id} was never given out (next id {next_path_id})"
                )
    except csv.Error as error:
        raise ValueError(f"not parseable as CSV ({error})") from None
    return count
