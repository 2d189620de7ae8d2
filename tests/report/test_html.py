import os
import re

import pytest

from munet.report.collect import collect_system
from munet.report.html import render_report, watch_report, write_report
from munet.report.sections import SECTION_IDS
from munet.system import SystemStore
from tests.report.html_check import external_references, parse_page
from tests.report.systems import ROOT, grow_agent

DIGITS, SHAPE, MULTI = "VitCpu~digits", "VitCpu~synth~shape", "MultiVitCpu~synth~shape"


def _sections(parser):
    return [attrs.get("id") for tag, attrs in parser.elements if tag == "section"]


def _section_html(html: str, section_id: str) -> str:
    start = html.index(f'<section id="{section_id}">')
    return html[start : html.index("</section>", start)]


@pytest.fixture(scope="module")
def page(synthetic_state):
    return render_report(collect_system(str(synthetic_state)))


# Without per-class metrics (render_report alone evaluates nothing) that section is left out.
SHOWN = [sid for sid in SECTION_IDS if sid != "classes"]


def test_page_parses_holds_every_section_and_nothing_external(page):
    parser = parse_page(page)
    assert parser.errors == [] and parser.stack == []
    assert _sections(parser) == SHOWN
    assert external_references(page, parser) == []
    # One inline script and one inline style, nothing else executable or loaded.
    tags = [tag for tag, _ in parser.elements]
    assert tags.count("script") == 1 and tags.count("style") == 1
    assert not any(tag in ("img", "iframe", "object", "embed", "link") for tag in tags)
    # The navigation points at every section.
    hrefs = {attrs["href"] for tag, attrs in parser.elements if tag == "a"}
    assert {f"#{sid}" for sid in SHOWN} <= hrefs and "#classes" not in hrefs
    # Every in-page link lands on an element of the page.
    ids = {attrs.get("id") for _, attrs in parser.elements}
    assert {h[1:] for h in hrefs} <= ids


def test_leaderboard_rows_and_sorting_hooks(synthetic_state, page):
    view = collect_system(str(synthetic_state))
    board = _section_html(page, "leaderboard")
    rows = re.findall(r"<tr( class=\"best\")?><td data-v=\"([^\"]+)\"", board)
    published = sorted(len(a.published) for a in view.agents.values())
    assert len(rows) == sum(published)
    # Each task's best in bold, as the legend says: synth/shape has two agents, and only the
    # better-scoring one's best row is bold.
    assert [agent for best, agent in rows if best] == [MULTI, DIGITS]
    assert view.agents[MULTI].best.score > view.agents[SHAPE].best.score
    assert view.agents[MULTI].task_name == view.agents[SHAPE].task_name
    assert board.count('data-kind="num"') == 8 and 'class="sortable"' in board
    best = view.agents[DIGITS].best
    assert f'data-v="{best.metrics["score"]!r}"' in board


def test_history_plots_every_candidate(synthetic_state, page):
    view = collect_system(str(synthetic_state))
    section = _section_html(page, "history")
    for agent in view.tasks:
        card = section[section.index(f'id="task-{agent.agent_id.replace("~", "-")}"') :]
        card = card[
            : card.find('<div class="card"', 10) if '<div class="card"' in card[10:] else None
        ]
        admitted = sum(c.admitted for c in agent.history)
        rejected = len(agent.history) - admitted
        # Two plots (quality, score), each with every candidate.
        assert card.count('<circle class="admitted"') == 2 * admitted
        assert card.count('<circle class="rejected"') == 2 * rejected
        assert card.count('<path class="test"') == len(agent.cycles)
        assert card.count('class="best-line"') == 1


def test_system_graph_marks_owned_shared_cloned_and_subpaths(page):
    section = _section_html(page, "system")
    shape_row = section[section.index(f'<th title="{SHAPE}">') :]
    shape_row = shape_row[: shape_row.index("</tr>")]
    assert re.findall(r'class="comp (\w+)"', shape_row) == [
        "cloned", "cloned", "shared", "cloned", "owned"
    ]  # fmt: skip
    # One label scheme: a task with two agents makes every label `task (AgentClass)`.
    assert "cloned from another task, then trained (digits (VitCpu))" in shape_row
    multi_row = section[section.index(f'<th title="{MULTI}">') :]
    multi_row = multi_row[: multi_row.index("</tr>")]
    assert re.findall(r'class="comp (\w+)"', multi_row) == ["owned", "owned", "subpath", "subpath"]
    # The matrix: one column per agent components come from, the root first.
    matrix = section[section.index('<table class="matrix">') :]
    columns = re.findall(r'<th class="rot" title="([^"]+)"', matrix)
    assert columns[0] == ROOT and set(columns) == {ROOT, DIGITS, SHAPE, MULTI}


def test_params_multipath_and_mutation_sections(page):
    params = _section_html(page, "params")
    assert params.count('class="bar-label"') == 3
    multipath = _section_html(page, "multipath")
    assert "path_0" in multipath and "path_1" in multipath
    assert re.search(rf"<td>{SHAPE}:\d+</td>", multipath)
    assert re.search(rf"<td>{DIGITS}:\d+</td>", multipath)
    mutations = _section_html(page, "mutations")
    names = re.findall(r'<td data-v="([^"]+)">\1', mutations)
    # By mean score change over same-task parents: clone:cls fired only in admitted children.
    assert names == ["clone:cls", "clone:encoder_norm", "opt_lr"]
    assert "+0.0500" in mutations and mutations.count('class="badge">forced') == 2


def test_reload_script_only_when_watching(synthetic_state):
    view = collect_system(str(synthetic_state))
    assert "location.reload" not in render_report(view)
    watched = render_report(view, refresh_seconds=2.5)
    assert "location.reload" in watched and "},2500);" in watched


def test_empty_system_has_every_section(tmp_path):
    store = SystemStore(str(tmp_path / "state"))
    os.makedirs(store.root)
    html = render_report(collect_system(store))
    parser = parse_page(html)
    # Every section but those with nothing to show at all (per-class metrics, multipath
    # paths), which are left out with their links.
    shown = [sid for sid in SECTION_IDS if sid not in ("classes", "multipath")]
    assert parser.errors == [] and _sections(parser) == shown
    assert html.count('class="empty"') == len(shown)
    assert 'href="#multipath"' not in html and "Multipath paths" not in html


def test_write_report_and_pngs(synthetic_state, tmp_path):
    out = tmp_path / "out" / "report.html"
    write_report(str(synthetic_state), str(out), png=True)
    assert out.read_text().startswith("<!DOCTYPE html>")
    pngs = sorted(p.name for p in out.parent.glob("*.png"))
    assert pngs == [
        f"report-{n}.png" for n in ("curves", "history", "mutations", "params", "system")
    ]
    from PIL import Image

    for name in pngs:
        with Image.open(out.parent / name) as image:
            assert image.format == "PNG" and image.size[0] > 300 and image.size[1] > 100
    assert [p.name for p in out.parent.iterdir() if p.name.startswith(".")] == []


def test_watch_rewrites_when_an_agent_commits(synthetic_state, tmp_path):
    import shutil

    root = tmp_path / "state"
    shutil.copytree(synthetic_state, root)
    out = tmp_path / "report.html"
    seen = []

    def sleep(seconds):
        assert seconds == 7
        if len(seen) == 1 and not getattr(sleep, "grown", False):
            sleep.grown = True
            grow_agent(SystemStore(str(root)), SHAPE, 1, 0.6)

    written = watch_report(str(root), str(out), 7, rounds=4, sleep=sleep,
                           on_write=lambda v: seen.append(v.agents[SHAPE].cycle))  # fmt: skip
    assert written == 2 and seen == [1, 2]
    assert "},7000);" in out.read_text()
    with pytest.raises(ValueError, match="watch interval 0"):
        watch_report(str(root), str(out), 0)
