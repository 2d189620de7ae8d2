"""The report in headless Chromium: renders without console errors, fetches nothing, sorts.

Writes screenshots for review to $MUNET_TEST_ARTIFACTS (default: the test's tmp dir) and
prints where. Chromium is installed by `make test` with the slow tests (`make browser`); the
test skips, saying so, only when no Chromium can be found.
"""

import json
import os

import pytest

from munet.agents.class_evaluation import best_paths_class_metrics
from munet.report.baseline import load_baselines
from munet.report.browser import find_chromium, open_page
from munet.report.html import write_report
from munet.system import SystemStore
from tests.report.systems import _root, build_system, grow_agent

pytestmark = pytest.mark.slow


@pytest.fixture
def artifacts(tmp_path):
    folder = os.environ.get("MUNET_TEST_ARTIFACTS") or str(tmp_path)
    os.makedirs(folder, exist_ok=True)
    return folder


@pytest.fixture(scope="module")
def chromium():
    found = find_chromium()
    if found is None:
        pytest.skip(
            "no Chromium on this machine (tried $MUNET_CHROMIUM, chromium, chromium-browser, "
            "google-chrome); `make browser` installs it where apt-get runs as root"
        )
    return found


# Six baselines for every task: the widest tasks table the report makes today.
METHODS = ("independent", "random_search", "finetune", "linear_probe", "adapters", "cnn_scratch")

# What the page shows, measured in the browser (each item of the report's polish list).
MEASURE = """(function(){
  var q=(s,e)=>[...(e||document).querySelectorAll(s)];
  var board=q('#leaderboard-table tbody tr');
  var bold=board.filter(r=>parseInt(getComputedStyle(r.cells[0]).fontWeight)>=600)
    .map(r=>r.cells[0].dataset.v);
  var heads=q('table.matrix th.rot div').map(d=>{var r=d.getBoundingClientRect(),
    t=d.parentElement.getBoundingClientRect();
    return {text:d.textContent, cut:d.scrollHeight>d.clientHeight+1||d.scrollWidth>d.clientWidth+1
      ||r.top<t.top-1||r.bottom>t.bottom+1}});
  var qualityTicks=q('svg.plot').filter(s=>s.getAttribute('aria-label').startsWith('validation'))
    .map(s=>Math.max(...q('text.tick:not(.plot-note)',s)
      .filter(t=>t.getAttribute('text-anchor')==='end')
      .map(t=>parseFloat(t.textContent))));
  var stat=q('header .stats span').map(s=>s.textContent);
  return {bold: bold, heads: heads, qualityTicks: qualityTicks, stats: stat,
    taskCells: q('#tasks-table td[rowspan]').map(t=>t.textContent),
    cardTitles: q('#history .card h3').map(h=>h.textContent),
    multipathLink: !!document.querySelector('nav a[href="#multipath"]'),
    multipathRows: q('#multipath tbody tr').length,
    scrolling: q('.scroll').filter(e=>e.scrollWidth>e.clientWidth+1)
      .map(e=>e.closest('section').id),
    heatMaps: q('#classes svg.heat').length,
    width: document.documentElement.scrollWidth};
})()"""


@pytest.mark.parametrize("system", ["grown_state", "synthetic_state"])
def test_report_renders_without_errors(system, request, chromium, artifacts, tmp_path):
    state = request.getfixturevalue(system)
    out = tmp_path / "report.html"
    write_report(str(state), str(out), refresh_seconds=600)
    shot = os.path.join(artifacts, f"report-{system}.png")
    # Sort the leaderboard by score (twice: descending) and read the first row's agent.
    sort_and_read = (
        "(function(){var th=[...document.querySelectorAll('#leaderboard-table th')]"
        ".find(h=>h.textContent==='score');th.click();th.click();"
        "var rows=document.querySelectorAll('#leaderboard-table tbody tr');"
        "return {first: rows[0].cells[0].dataset.v, scores: [...rows].map(r=>r.cells[3]"
        ".dataset.v), svgs: document.querySelectorAll('svg').length,"
        " width: document.documentElement.scrollWidth};})()"
    )
    result = open_page(out, screenshot=shot, evaluate=sort_and_read, chromium=chromium)
    print(f"screenshot: {shot} (load {result.load_ms:.0f} ms)")
    assert result.errors == []
    assert result.external_requests == []
    scores = [float(s) for s in result.value["scores"] if s != ""]
    assert scores == sorted(scores, reverse=True) and len(scores) >= 2
    assert result.value["svgs"] >= 4
    # Nothing wider than a laptop screen: tables scroll inside their sections.
    assert result.value["width"] <= 1440
    with open(shot, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_report_reads_right_at_1400_px(grown_state, chromium, artifacts, tmp_path):
    """The report's rough edges, each measured in the browser on a grown system (two tasks,
    digits grown by a singlepath and a multipath agent), with six baselines and heat maps."""
    baselines = tmp_path / "baselines.json"
    tasks = {"digits": 0.3, "synth/shape": 0.27}
    baselines.write_text(json.dumps({m: tasks for m in METHODS}))
    out = tmp_path / "report.html"
    store = SystemStore(str(grown_state))
    view = write_report(
        str(grown_state), str(out), baselines=load_baselines([baselines]),
        class_metrics=lambda: best_paths_class_metrics(store),
    )  # fmt: skip
    shot = os.path.join(artifacts, "report-1400px.png")
    page = open_page(out, screenshot=shot, width=1400, evaluate=MEASURE, chromium=chromium)
    print(f"screenshot: {shot}")
    assert page.errors == [] and page.external_requests == []
    seen = page.value
    # Only each task's best row is bold (the legend's promise): one per task.
    assert sorted(seen["bold"]) == ["MultiVitCpu~digits", "VitCpu~synth~shape"]
    # One label scheme: a task with two agents makes every card `task (AgentClass)`.
    assert seen["cardTitles"] == ["digits (VitCpu)", "digits (MultiVitCpu)", "synth/shape (VitCpu)"]
    # The task x owner matrix's rotated headers are whole.
    assert seen["heads"] and not [h["text"] for h in seen["heads"] if h["cut"]]
    assert "root_model/random_init (VitCpu)" in [h["text"] for h in seen["heads"]]
    # Quality axes fit the data (qualities near 0.3 here), not always 0-1.
    assert seen["qualityTicks"] and max(seen["qualityTicks"]) < 0.6
    # One count of tasks: the header's, the tasks table's and the CLI line's (view.task_names).
    assert "2tasks" in seen["stats"] and "3task agents" in seen["stats"]
    assert seen["taskCells"] == ["digits", "synth/shape"] == view.task_names
    # A multipath section (and link) because there are multipath paths.
    assert seen["multipathLink"] and seen["multipathRows"] > 0
    # Six baselines: no table scrolls sideways, the page fits the window.
    assert seen["scrolling"] == [] and seen["width"] <= 1400
    assert seen["heatMaps"] == 3


def test_no_multipath_link_without_multipath_paths(tmp_path, chromium):
    state = tmp_path / "state"
    build_system(state, multipath=False)
    out = tmp_path / "report.html"
    write_report(str(state), str(out))
    page = open_page(out, width=1400, evaluate=MEASURE, chromium=chromium)
    assert page.errors == []
    assert not page.value["multipathLink"] and page.value["multipathRows"] == 0
    assert page.value["scrolling"] == []


def test_a_page_error_is_reported(chromium, tmp_path):
    """The check can fail: a page with a script error and a console error is caught."""
    page = tmp_path / "bad.html"
    page.write_text("<html><body><script>console.error('boom'); undefinedName();</script>")
    result = open_page(page, chromium=chromium)
    assert any("boom" in e for e in result.errors)
    assert any("undefinedName" in e for e in result.errors)


# Each plot's notes against its title and its data, as the browser lays out the text.
NOTE_OVERLAPS = """(function(){
  var box=e=>{var b=e.getBBox();return [b.x,b.y,b.x+b.width,b.y+b.height]};
  var hit=(a,b)=>a[0]<b[2]&&b[0]<a[2]&&a[1]<b[3]&&b[1]<a[3];
  var out={notes:[],overlaps:[]};
  for (const svg of document.querySelectorAll('svg.plot')) {
    var others=[...svg.querySelectorAll('circle,path,polyline,text.plot-title')].map(box);
    for (const note of svg.querySelectorAll('text.plot-note')) {
      var b=box(note); out.notes.push(note.textContent);
      if (b[0]<0||others.some(o=>hit(b,o))) out.overlaps.push(note.textContent+' '+b);
    }
  }
  return out;
})()"""


def test_plot_notes_overlap_nothing_as_drawn(tmp_path, chromium):
    """Issue 53: chance far below the data is named above the plot area, clear of the data
    climbing to the top right and of the title, in the browser's own text boxes."""
    store = SystemStore(str(tmp_path / "state"))
    _root(store)
    grow_agent(store, "VitCpu~digits", 3, 0.75, curves=True)
    out = tmp_path / "report.html"
    write_report(str(tmp_path / "state"), str(out))
    page = open_page(out, evaluate=NOTE_OVERLAPS, chromium=chromium)
    assert page.errors == []
    assert page.value["notes"] == ["chance 0.1 (below)"] * 2
    assert page.value["overlaps"] == []
