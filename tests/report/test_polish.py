"""The report's per-class section, fitted quality axes and one label scheme."""

import re

import pytest

from munet.agents.class_evaluation import best_paths_class_metrics
from munet.models.class_metrics import ClassMetrics
from munet.report.analysis import quality_range
from munet.report.classes import heat_map
from munet.report.html import write_report
from munet.report.sections import short_names
from munet.system import SystemStore
from tests.report.html_check import parse_page


def test_quality_axis_fits_the_data_not_always_0_to_1():
    low, high = quality_range([0.981, 0.99, 1.0])
    assert 0.95 <= low < 0.981 and high == 1.0  # 0.98-1.00 fills the plot
    # Chance far below the data is left off the axis; a baseline near it widens it.
    assert quality_range([0.981, 1.0], [0.1]) == (low, high)
    widened = quality_range([0.981, 1.0], [0.93])
    assert widened[0] <= 0.93 and widened[1] == 1.0
    # Early systems near chance: chance is on the axis.
    low, high = quality_range([0.12, 0.31], [0.1])
    assert low <= 0.1 and 0.31 < high < 0.5
    # Inside [0, 1] for data inside it; nothing to fit gives 0-1; one value gets some room.
    assert quality_range([0.0, 0.02])[0] == 0.0
    assert quality_range([]) == (0.0, 1.0) and quality_range([None]) == (0.0, 1.0)
    low, high = quality_range([0.5])
    assert low < 0.5 < high and high - low < 0.1


def test_labels_are_task_names_or_task_and_class_for_every_agent():
    one_each = {"VitCpu~digits": "digits", "VitCpu~synth~shape": "synth/shape"}
    assert short_names(one_each, one_each) == one_each
    shared = {**one_each, "MultiVitCpu~digits": "digits"}
    assert short_names(shared, shared) == {
        "VitCpu~digits": "digits (VitCpu)",
        "VitCpu~synth~shape": "synth/shape (VitCpu)",
        "MultiVitCpu~digits": "digits (MultiVitCpu)",
    }


def test_heat_map_has_a_cell_per_pair_with_counts_and_shares():
    metrics = ClassMetrics(((3, 1), (0, 4)), ("cat", "dog"))
    svg = heat_map(metrics)
    cells = re.findall(r'<rect class="(hit|miss)"[^>]*fill-opacity="([0-9.]+)"', svg)
    assert [c for c, _ in cells] == ["hit", "miss", "miss", "hit"]
    assert float(cells[2][1]) == 0.0 and float(cells[3][1]) == 1.0  # dog: 4 of 4 right
    assert "true cat -&gt; predicted dog: 1 of 4 (25.0%)" in svg
    assert ">cat</text>" in svg and parse_page(svg).errors == []


@pytest.fixture(scope="module")
def class_page(grown_state, tmp_path_factory):
    out = tmp_path_factory.mktemp("classes") / "report.html"
    store = SystemStore(str(grown_state))
    view = write_report(
        str(grown_state), str(out), class_metrics=lambda: best_paths_class_metrics(store)
    )
    return view, out.read_text()


def test_the_report_shows_a_heat_map_per_task_agent(class_page):
    view, html = class_page
    assert view.warnings == []
    section = html[html.index('<section id="classes">') : html.index('<section id="learning">')]
    assert 'href="#classes"' in html
    for agent in view.tasks:
        full_id, metrics = view.class_metrics[agent.agent_id]
        assert full_id == agent.best.full_id
        card = section[section.index(f'id="classes-{agent.agent_id.replace("~", "-")}"') :]
        card = card[
            : card.find('<div class="card', 10) if '<div class="card' in card[10:] else None
        ]
        assert len(re.findall(r'<rect class="(?:hit|miss)"', card)) == metrics.num_classes**2
        assert f"{metrics.num_examples} test examples · accuracy {metrics.accuracy:.4f}" in card
        # The best path's recorded test quality is the evaluated accuracy.
        assert metrics.accuracy == pytest.approx(agent.best.metrics["test_quality"], rel=1e-3)
        if metrics.num_classes > 5:  # digits: 10 classes, top-5 shown
            assert f"top-5 {metrics.top5_accuracy:.4f}" in card
        else:
            assert "top-5" not in card
