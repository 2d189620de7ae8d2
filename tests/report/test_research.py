"""The researcher's view: chance, baselines, learning curves, mutation effects, figures."""

import json

import pytest

from munet.report.analysis import (
    chance_level,
    data_source,
    learning_curve,
    mutation_effects,
    task_groups,
    validation_interval,
)
from munet.report.baseline import BaselineError, load_baselines
from munet.report.collect import collect_system
from munet.report.html import render_report
from munet.report.sections import history_y_range

DIGITS, SHAPE, MULTI = "VitCpu~digits", "VitCpu~synth~shape", "MultiVitCpu~synth~shape"


@pytest.fixture(scope="module")
def view(synthetic_state):
    return collect_system(str(synthetic_state))


def test_agents_of_a_task_are_grouped(view):
    groups = task_groups(view)
    assert list(groups) == ["digits", "synth/shape"]
    assert [a.agent_id for a in groups["synth/shape"]] == [SHAPE, MULTI]


def test_chance_and_data_source(view):
    assert chance_level(view.agents[DIGITS]) == pytest.approx(0.1)
    assert data_source(view.agents[DIGITS]) == "digits (munet task name)"
    view.agents[DIGITS].config["data"] = "folder:/data/digits"
    try:
        assert data_source(view.agents[DIGITS]) == "folder:/data/digits"
    finally:
        view.agents[DIGITS].config["data"] = ""


def test_learning_curve_with_recorded_steps_and_losses(view):
    curve = learning_curve(view, view.agents[DIGITS])
    # The best path (4th admitted) and its 3 ancestors, each trained 15 steps after its parent.
    assert [s.path for s in curve.segments] == [f"{DIGITS}:{i}" for i in (0, 2, 4, 6)]
    assert curve.segments[1].steps == [20.0, 25.0, 30.0]
    assert curve.steps_recorded and curve.has_loss
    best = view.agents[DIGITS].best
    assert curve.segments[-1].qualities[-1] == pytest.approx(best.metrics["quality"])
    assert curve.segments[-1].losses[-1] == pytest.approx(2.0 - best.metrics["quality"])


def test_learning_curve_falls_back_to_the_config_interval(view):
    """Shape's rows have `evals` only (an older state): steps come from the config (32
    examples / batch 8 = 4 per validation), and there is no loss. The lineage starts in
    digits, whose path shape's first one was cloned from."""
    assert validation_interval(view.agents[SHAPE].config) == 4
    curve = learning_curve(view, view.agents[SHAPE])
    own = [s for s in curve.segments if s.path.startswith(SHAPE)]
    assert [s.path for s in own] == [f"{SHAPE}:0", f"{SHAPE}:2"]
    assert own[0].steps == [64.0, 68.0, 72.0] and own[0].losses is None
    assert curve.segments[0].path == f"{DIGITS}:0" and not curve.steps_recorded


def test_mutations_ranked_by_effect_forced_marked(view):
    effects = {e.name: e for e in mutation_effects(view, view.tasks)}
    # Same-task parents only: digits' 6 children after the first, shape's 2 after its first.
    assert effects["opt_lr"].count == 8 and effects["clone:cls"].count == 4
    assert effects["clone:cls"].mean_delta == pytest.approx(0.05)
    assert effects["opt_lr"].mean_delta == pytest.approx(0.0, abs=1e-9)
    assert effects["clone:encoder_norm"].forced and not effects["opt_lr"].forced
    ranked = [e.name for e in mutation_effects(view, view.tasks)]
    assert ranked[0] == "clone:cls"


def test_tasks_section_shows_chance_hparams_and_learning_curves(view):
    page = render_report(view)
    tasks = page[page.index('<section id="tasks">') : page.index('<section id="leaderboard">')]
    assert tasks.count('data-v="0.1"') == 3  # Chance of each agent.
    assert "hparams of " + view.agents[DIGITS].best.full_id in tasks
    assert "No baseline given" in tasks
    learning = page[page.index('<section id="learning">') : page.index('<section id="history">')]
    # Quality and loss each: shape's lineage starts with digits' paths, which recorded losses.
    assert learning.count("<svg") == 4
    assert "train steps (from the config)" in learning


def test_baseline_files(tmp_path):
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps({"independent": {"digits": 0.5, "synth/shape": 0.25}}))
    bench = tmp_path / "seed_0.json"
    bench.write_text(json.dumps({"methods": {
        "system": {"tasks": {"digits": {"test_quality": 0.9}}},
        "independent": {"tasks": {"digits": {"test_quality": 0.7}}},
        "random_search": {"tasks": {"digits": {"test_quality": 0.6}}},
    }}))  # fmt: skip
    baselines = load_baselines([plain, bench])
    digits = {b.method: b for b in baselines["digits"]}
    assert set(digits) == {"independent", "random_search"}
    assert digits["independent"].mean == pytest.approx(0.6) and digits["independent"].count == 2
    assert baselines["synth/shape"][0].count == 1
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"independent": {"digits": "high"}}))
    with pytest.raises(BaselineError, match="independent/digits: test quality 'high'"):
        load_baselines([bad])
    (tmp_path / "list.json").write_text("[1, 2]")
    with pytest.raises(BaselineError, match="expected a JSON object"):
        load_baselines([tmp_path / "list.json"])


def test_png_figures_use_the_page_ranges_and_keep_legends_off_the_data(view):
    pytest.importorskip("matplotlib")
    from munet.report.png import figures

    figs = figures(view)
    history = figs["history"]
    digits_quality = history.axes[0]
    assert digits_quality.get_ylim() == pytest.approx(
        history_y_range(view, view.agents[DIGITS], "quality")
    )
    for fig in figs.values():
        # No legend inside any axes (where it could hide a marker).
        assert all(ax.get_legend() is None for ax in fig.axes if ax.get_visible()) or (
            fig is figs.get("params") or fig is figs.get("system")
        )
    assert history.legends and "chance" in [t.get_text() for t in history.legends[0].texts]
