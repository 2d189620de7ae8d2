"""The report of a system grown by the real singlepath agent (tiny config)."""

import re

import pytest

from munet.agents.runner import leaderboard_rows
from munet.report.collect import SHARED, collect_system
from munet.report.html import write_report
from munet.report.sections import SECTION_IDS
from munet.system import SystemStore
from tests.report.html_check import external_references, parse_page

MULTI = "MultiVitCpu~digits"


def best_hparams(view):
    """The multipath best path's `paths` hparam, as its manifest record holds it."""
    store = SystemStore(view.state_dir)
    manifest = store.read_manifest(store.latest_state(MULTI, end_of_cycle=True))
    return manifest["paths"][view.agents[MULTI].best.full_id]["hparams"]["paths"]


def test_report_of_a_grown_system(grown_state, tmp_path):
    out = tmp_path / "report.html"
    view = write_report(str(grown_state), str(out))
    html = out.read_text()
    parser = parse_page(html)
    assert parser.errors == [] and parser.stack == []
    shown = [sid for sid in SECTION_IDS if sid != "classes"]  # No class metrics asked for.
    assert [a.get("id") for t, a in parser.elements if t == "section"] == shown
    assert external_references(html, parser) == []
    # A task's agents together, singlepath first.
    assert [a.agent_id for a in view.tasks] == ["VitCpu~digits", MULTI, "VitCpu~synth~shape"]
    # The leaderboard shows what `munet leaderboard` shows.
    rows = leaderboard_rows(SystemStore(str(grown_state)))
    board = html[html.index('<section id="leaderboard">') : html.index('<section id="history">')]
    for row in rows:
        if row["score"] is not None:
            assert f'data-v="{row["score"]!r}"' in board
    assert len(re.findall(r"<tr[ >]", board)) == len(rows) + 1
    from munet.report.analysis import learning_curve

    for agent in [a for a in view.tasks if a.agent_id != MULTI]:
        # The real agents record `evals`: the best path's lineage has a learning curve, and the
        # best path's quality is the best of its own validations (its capped quality when
        # VitCpu re-scored it on the whole validation split: rescore_finalists).
        curve = learning_curve(view, agent)
        assert curve.segments and curve.segments[-1].path == agent.best.full_id
        last = [q for q in curve.segments[-1].qualities if q is not None]
        metrics = agent.best.metrics
        assert max(last) == pytest.approx(metrics.get("capped_quality", metrics["quality"]))
        # Every sampled path of the history is a candidate on the charts.
        assert len(agent.history) == 2 * agent.cycle  # 2 samples per cycle (tiny config)
        assert [r.cycle for r in agent.cycles] == list(range(1, agent.cycle + 1))
        assert all(r.test_quality is not None for r in agent.cycles)
        # Singlepath paths: a full ViT, every component counted with its parameters.
        best = agent.best
        assert best.subpaths == [] and best.components
        assert all(u.num_params > 0 for u in best.components)
        total = sum(u.num_params for u in best.components)
        assert total == best.metrics["num_params"]
        # Frozen components come from other agents; the agent's own ones are not shared.
        assert all((u.owner != agent.agent_id) == (u.status == SHARED) for u in best.components)


def test_report_of_a_grown_multipath_agent(grown_state, tmp_path):
    out = tmp_path / "report.html"
    view = write_report(str(grown_state), str(out))
    multi = view.agents[MULTI]
    best = multi.best
    # Its slots are the paths its hparams name, path_0 from the task's singlepath agent.
    named = {slot: f"{ref['agent_id']}:{ref['id']}" for slot, ref in best_hparams(view).items()}
    assert dict(best.subpaths) == named
    assert best.subpaths[0][1].startswith("VitCpu~digits:")
    assert {u.slot for u in best.components} >= {"multipath_router"}
    assert all(u.owner == MULTI for u in best.components)
    assert len(multi.history) >= 1 and multi.cycles[0].test_quality is not None
    html = out.read_text()
    section = html[html.index('<section id="multipath">') : html.index('<section id="mutations">')]
    for slot, sub_id in best.subpaths:
        assert f"<td>{slot}</td><td>{sub_id}</td>" in section


def test_figures_of_a_grown_system(grown_state):
    from munet.report.png import FIGURES, figures

    assert list(figures(collect_system(str(grown_state)))) == list(FIGURES)


def test_the_report_reads_no_tensors(grown_state, tmp_path, monkeypatch):
    """Manifests and histories only: any shard access (header or tensor bytes) would fail."""
    from munet.system import shards

    def no_shards(self, *args, **kwargs):
        raise AssertionError(f"the report opened the shard {self.display}")

    monkeypatch.setattr(shards.ShardReader, "_load_header", no_shards)
    monkeypatch.setattr(shards.ShardReader, "_read_span", no_shards)
    view = write_report(str(grown_state), str(tmp_path / "report.html"))
    assert MULTI in view.agents and (tmp_path / "report.html").stat().st_size > 0
