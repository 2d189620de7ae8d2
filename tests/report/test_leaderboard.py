import csv
import io
import json
import re
from dataclasses import dataclass, field

import pytest

from munet.agents.runner import leaderboard_rows
from munet.report.collect import collect_system
from munet.report.html import render_report
from munet.report.leaderboard import COLUMNS, format_leaderboard, path_row, recorded_parent
from munet.system import SystemStore


@dataclass
class FakePath:
    id: int
    agent_id: str
    task_name: str
    metrics: dict = field(default_factory=dict)
    parent: "FakePath | None" = None

    @property
    def full_id(self) -> str:
        return f"{self.agent_id}:{self.id}"


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


DIGITS = "VitCpu~digits"


def test_parent_is_the_recorded_one_and_the_kept_ancestor_its_own_column(synthetic_state):
    """Issue 53: in the tiny system, digits' best path was mutated from a digits path pruned
    at the end of the cycle; its record now links it to the root model. The leaderboard shows
    the recorded parent as `parent` and the root under `kept_ancestor`, in every format and in
    the HTML report."""
    store = SystemStore(str(synthetic_state))
    history = {r["id"]: r for r in store.read_path_history(DIGITS)}
    _state, manifest = store.latest_good_state(DIGITS, end_of_cycle=True)
    (best_id,) = [p for p in manifest["published"] if p.startswith(f"{DIGITS}:")]
    record = manifest["paths"][best_id]
    sampled = history[str(record["id"])]
    recorded = f"{sampled['parent_agent_id']}:{sampled['parent_id']}"
    # The premise: the parent was not kept (no agent publishes it) and the record relinked.
    assert recorded == f"{DIGITS}:4" and record["parent"] == ROOT.full_id
    kept = set()
    for agent in store.agent_ids():
        kept.update(store.latest_good_state(agent, end_of_cycle=True)[1]["paths"])
    assert recorded not in kept and record["parent"] in kept

    rows = leaderboard_rows(store)
    lines = format_leaderboard(rows).splitlines()
    header = lines[0].split()
    table = {line.split()[0]: dict(zip(header, line.split(), strict=False)) for line in lines[1:]}
    assert table[DIGITS]["parent"] == recorded
    assert table[DIGITS]["kept_ancestor"] == ROOT.full_id
    assert table[ROOT.agent_id]["parent"] == "-" and table[ROOT.agent_id]["kept_ancestor"] == "-"
    # synth/shape's best: mutated from its own first path, which was pruned; that one's
    # parent (digits' best, which digits still publishes) is the kept ancestor.
    shape = table["VitCpu~synth~shape"]
    assert shape["parent"].startswith("VitCpu~synth~shape:")
    assert shape["kept_ancestor"] == table[DIGITS]["agent_id"] + ":" + table[DIGITS]["id"]

    (data,) = [r for r in json.loads(format_leaderboard(rows, "json")) if r["agent_id"] == DIGITS]
    assert (data["parent_agent_id"], data["parent_id"]) == (DIGITS, 4)
    assert data["kept_ancestor"] == ROOT.full_id
    parsed = list(csv.DictReader(io.StringIO(format_leaderboard(rows, "csv"))))
    (row,) = [r for r in parsed if r["agent_id"] == DIGITS]
    assert (row["parent_agent_id"], row["parent_id"], row["kept_ancestor"]) == (
        DIGITS, "4", ROOT.full_id
    )  # fmt: skip

    html = _leaderboard_section(render_report(collect_system(str(synthetic_state))))
    heads = re.findall(r"<th[^>]*>([^<]*)</th>", html)
    assert heads[-2:] == ["parent", "kept ancestor"]
    best_row = next(r for r in re.findall(r"<tr.*?</tr>", html) if f">{DIGITS}<" in r)
    cells = re.findall(r'<td[^>]*data-v="([^"]*)"', best_row)
    assert cells[-2:] == [recorded, ROOT.full_id]


def _leaderboard_section(page: str) -> str:
    start = page.index('<section id="leaderboard">')
    return page[start : page.index("</section>", start)]


def test_recorded_parent_without_a_history_row_comes_from_the_record():
    record = {"parent": ROOT.full_id, "orphaned_parent": None}
    assert recorded_parent(record, None) == ROOT.full_id
    # A parent lost on load: the record keeps its id apart from the fallback root.
    assert recorded_parent({**record, "orphaned_parent": "B~x:3"}, None) == "B~x:3"
    assert recorded_parent(record, {"parent_agent_id": "A~x", "parent_id": "7"}) == "A~x:7"
    assert recorded_parent(record, {"parent_agent_id": "", "parent_id": "-1"}) is None


def test_path_row_takes_the_recorded_parent_apart_from_the_kept_one():
    child = FakePath(9, DIGITS, "digits", {}, ROOT)
    row = path_row(child, parent=f"{DIGITS}:4")
    assert (row["parent_agent_id"], row["parent_id"]) == (DIGITS, 4)
    assert row["kept_ancestor"] == ROOT.full_id
    plain = path_row(child)
    assert (plain["parent_agent_id"], plain["parent_id"], plain["kept_ancestor"]) == (
        ROOT.agent_id, 0, ROOT.full_id
    )  # fmt: skip
