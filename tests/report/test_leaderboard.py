import csv
import io
import json
from dataclasses import dataclass, field

import pytest

from munet.report.leaderboard import COLUMNS, format_leaderboard, path_row


@dataclass
class FakePath:
    id: int
    agent_id: str
    task_name: str
    metrics: dict = field(default_factory=dict)
    parent: "FakePath | None" = None


ROOT = FakePath(0, "VitCpu~root_model~random_init", "root_model/random_init")
ROWS = [
    path_row(ROOT),
    path_row(
        FakePath(3, "VitCpu~digits", "digits", {"score": 0.9, "quality": 0.91,
                 "test_quality": 0.95, "accounted_params": 120000.0, "flops": 3.2e6}, ROOT),
        "embedding:VitCpu~digits:1",
    ),
    path_row(FakePath(5, "VitCpu~digits", "digits", {"score": 0.95, "quality": 0.96}, ROOT)),
]  # fmt: skip


def test_table_sorted_by_agent_then_score_with_seed_columns():
    text = format_leaderboard(ROWS)
    lines = text.splitlines()
    assert lines[0].split()[:7] == [
        "agent_id", "task_name", "test_quality", "score", "quality", "accounted_params", "flops"
    ]  # fmt: skip
    assert lines[1].split()[:2] == ["VitCpu~digits", "digits"]
    assert lines[1].split()[3] == "0.9500"  # Best score first within the agent.
    assert "120k" in lines[2] and "3.2M" in lines[2]
    assert lines[3].startswith("VitCpu~root_model~random_init")
    assert lines[-1] == "avg score: 0.9250  avg quality: 0.9350  avg test_quality: 0.9500"


def test_csv_and_json_carry_the_same_rows():
    parsed = list(csv.DictReader(io.StringIO(format_leaderboard(ROWS, "csv"))))
    assert [r["id"] for r in parsed] == ["5", "3", "0"]
    assert list(parsed[0]) == list(COLUMNS)
    data = json.loads(format_leaderboard(ROWS, "json"))
    assert [r["id"] for r in data] == [5, 3, 0]
    assert data[1]["parent_agent_id"] == "VitCpu~root_model~random_init"
    assert data[2]["parent_id"] == -1 and data[2]["score"] is None


def test_unknown_format_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown leaderboard format 'xml'; known: table, csv"):
        format_leaderboard(ROWS, "xml")


def test_empty_table():
    assert format_leaderboard([]) == "(no published paths)"


def test_table_headings_say_what_the_columns_hold():
    """The parent is one `agent:id` cell (mostly another agent's path, e.g. the root), and the
    seed's `num_cycles` is headed by what it counts: cycles that ended with the path as best."""
    rows = [{**ROWS[1], "num_cycles": 2}, ROWS[0]]
    lines = format_leaderboard(rows).splitlines()
    header = lines[0].split()
    assert "parent" in header and "parent_id" not in header and "parent_agent_id" not in header
    assert "cycles_as_best" in header and "num_cycles" not in header
    cells = dict(zip(header, lines[1].split(), strict=False))
    assert cells["parent"] == "VitCpu~root_model~random_init:0"
    assert cells["cycles_as_best"] == "2"
    root = dict(zip(header, lines[2].split(), strict=False))
    assert root["parent"] == "-"
