"""The HTML report of a system: one self-contained file (inline CSS, SVG and a little script).

    html = render_report(collect_system("state"))
    write_report("state", "report.html")          # atomically replaces the file
    watch_report("state", "report.html", 30)      # rewrites it when an agent commits

Nothing in the page refers to anything outside it (no scripts, fonts, images or styles from
elsewhere), so it opens offline and can be mailed around. With ``refresh_seconds`` the page
reloads itself (keeping its scroll position), for a browser tab left open during a long run.
Sections off screen are not laid out until scrolled to (``content-visibility``), so a system
of many agents opens quickly.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from html import escape

from munet.report import classes as class_sections
from munet.report import sections
from munet.report.collect import SystemView, collect_system, store_signature
from munet.report.svg import fmt_number

STYLE = """
:root{--fg:#1f2933;--muted:#6b7785;--line:#d9dee4;--bg:#f6f7f9;--card:#fff;
--owned:#3b6fd8;--cloned:#8e5cc4;--shared:#2a9d8f;--subpath:#e39b2d;--rejected:#9aa5b1;
--test:#d9480f}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;
color:var(--fg);background:var(--bg)}
header{background:#1f2933;color:#fff;padding:14px 24px 10px}
header h1{margin:0 0 4px;font-size:20px;font-weight:600}
header .meta{color:#c5cdd6;font-size:12.5px}
header .stats{margin-top:8px;display:flex;flex-wrap:wrap;gap:6px 22px;font-size:13px}
header .stats b{font-size:17px;font-weight:600;margin-right:4px}
nav{position:sticky;top:0;z-index:2;background:#fff;border-bottom:1px solid var(--line);
padding:7px 24px;display:flex;flex-wrap:wrap;gap:4px 18px;font-size:13px}
nav a{color:var(--fg);text-decoration:none}nav a:hover{color:var(--owned)}
main{padding:4px 24px 30px;max-width:1500px}
section{content-visibility:auto;contain-intrinsic-size:auto 900px;
background:var(--card);border:1px solid var(--line);border-radius:8px;margin:16px 0;
padding:10px 18px 16px}
h2{font-size:17px;margin:6px 0 6px}h3{font-size:14px;margin:10px 0 4px}
.note,.facts,.empty{color:var(--muted);font-size:12.5px;margin:2px 0 8px}
.scroll{overflow:auto;max-height:560px}
table{border-collapse:collapse;font-size:12.5px}
th,td{padding:3px 7px;border-bottom:1px solid #eef0f3;text-align:left;white-space:nowrap}
thead th{position:sticky;top:0;background:#fff;border-bottom:1px solid var(--line)}
td.num{text-align:right;font-variant-numeric:tabular-nums}
table.sortable th{cursor:pointer;user-select:none}
table.sortable th:hover{color:var(--owned)}
table.sortable th.asc::after{content:" \\25B2";font-size:9px}
table.sortable th.desc::after{content:" \\25BC";font-size:9px}
tr.best td{font-weight:600}
a{color:var(--owned)}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(560px,1fr));gap:10px}
.card{content-visibility:auto;contain-intrinsic-size:auto 230px;
border:1px solid #e6e9ed;border-radius:6px;padding:4px 10px 4px}
.card h3{margin:4px 0 0}.plots{display:flex;flex-wrap:wrap;gap:4px}
svg text{font-family:inherit}
.plot-title{font-size:12px;font-weight:600;fill:var(--fg)}
.tick{font-size:10px;fill:var(--muted)}.label{font-size:10.5px;fill:var(--muted)}
.grid{stroke:#eef0f3}.axis{stroke:#aab3bd}
circle.admitted{fill:var(--owned);fill-opacity:.85}
circle.rejected{fill:none;stroke:var(--rejected);stroke-width:1.2}
path.test{fill:var(--test)}
.best-line{fill:none;stroke:var(--owned);stroke-width:1.5;stroke-opacity:.6}
.test-line{fill:none;stroke:var(--test);stroke-width:1.2;stroke-dasharray:3 2}
.legend{font-size:12.5px;color:var(--muted)}
.sw{display:inline-block;width:11px;height:11px;border-radius:2px;margin:0 4px 0 10px;
vertical-align:-1px}.legend .sw:first-child{margin-left:0}
.sw.admitted{background:var(--owned);border-radius:50%}
.sw.rejected{border:1.5px solid var(--rejected);border-radius:50%}
.sw.best-line{height:2px;vertical-align:3px;background:var(--owned)}
.sw.test{background:var(--test);transform:rotate(45deg) scale(.8)}
.owned,.sw.owned,.added,.sw.added,.admitted-bar,.sw.admitted-bar{background:var(--owned);
fill:var(--owned)}
.cloned,.sw.cloned{background:var(--cloned);fill:var(--cloned)}
.shared,.sw.shared,.reused,.sw.reused{background:var(--shared);fill:var(--shared)}
.subpath,.sw.subpath{background:var(--subpath);fill:var(--subpath)}
.rejected-bar,.sw.rejected-bar{background:#c8cfd6;fill:#c8cfd6}
.bar-label{font-size:12px;fill:var(--fg)}.bar-value{font-size:11px;fill:var(--muted)}
.strip{display:flex;gap:2px}
.comp{display:inline-flex;flex-direction:column;align-items:center;min-width:38px;
padding:1px 4px;border-radius:3px;color:#fff;font-size:11.5px;line-height:1.2}
.comp small{font-size:9.5px;opacity:.85;max-width:120px;overflow:hidden;text-overflow:ellipsis;
white-space:nowrap}
table.strips th,table.matrix tbody th{font-weight:500;max-width:220px;overflow:hidden;
text-overflow:ellipsis}
table.matrix td.cell{color:#fff;text-align:center;font-size:12px;line-height:1.15;
border:1px solid #fff;min-width:44px}
table.matrix td.cell small{display:block;font-size:9.5px;opacity:.85}
table.matrix th.rot{vertical-align:bottom;padding:4px 2px}
table.matrix th.rot div{writing-mode:vertical-rl;transform:rotate(180deg);white-space:nowrap;
font-weight:500;margin:0 auto}
rect.hit,.sw.hit{fill:var(--owned);background:var(--owned)}
rect.miss,.sw.miss{fill:var(--test);background:var(--test)}
.heat-frame{fill:none;stroke:#aab3bd}.heat-count{font-size:10px}
.heat-count.light{fill:#fff}.heat-count.dark{fill:var(--fg)}
table.per-class{align-self:flex-start;margin-left:8px}
.problems{border-color:#f0b429;background:#fffbea}
.chance-line{fill:none;stroke:#6b7785;stroke-width:1;stroke-dasharray:1.5 2.5}
.baseline-line{fill:none;stroke:#2a9d8f;stroke-width:1.3;stroke-dasharray:6 3}
.baseline-1{stroke:#8e5cc4;stroke-dasharray:8 2 2 2}.baseline-2{stroke:#b7791f;stroke-dasharray:2 2}
.sw.chance-line{height:0;border-top:2px dotted #6b7785;vertical-align:4px;background:none}
.sw.baseline-line{height:0;border-top:2px dashed #2a9d8f;vertical-align:4px;background:none}
polyline.curve{fill:none;stroke:var(--owned);stroke-width:1.4}
circle.curve{fill:var(--owned)}
polyline.curve-1{stroke:#8fb0ee}circle.curve-1{fill:#8fb0ee}
.sw.curve{height:2px;vertical-align:3px;background:var(--owned)}
table.tasks tr.task-start td{border-top:2px solid var(--line)}
table.tasks td{vertical-align:top}
table.tasks th.method{white-space:normal;max-width:96px}
table.tasks td.data,table.tasks th.data{white-space:normal;min-width:140px;max-width:300px;
overflow-wrap:anywhere}
small.delta{font-size:10.5px}small.delta.gain{color:#1f7a4d}small.delta.loss{color:#b42318}
.hp-list{display:flex;flex-wrap:wrap;gap:4px 24px;font-size:12.5px}
details.hparams{display:inline-block}details.hparams summary{cursor:pointer;color:var(--owned)}
table.kv th{font-weight:500;color:var(--muted)}
.badge{display:inline-block;font-size:10.5px;padding:0 5px;border-radius:8px;
background:#fde8d7;color:#9a3412;margin-left:4px}
.effect{display:inline-block;height:10px;border-radius:2px}
.effect.gain{background:var(--owned)}.effect.loss{background:var(--test)}
"""

# Sortable tables: click (or Enter on) a header; numbers sort as numbers, empty cells last.
SCRIPT_SORT = """
document.querySelectorAll('table.sortable').forEach(function(table){
  var heads=table.tHead.rows[0].cells;
  Array.prototype.forEach.call(heads,function(th,col){
    function sort(){
      var asc=!th.classList.contains('asc');
      Array.prototype.forEach.call(heads,function(h){h.classList.remove('asc','desc');});
      th.classList.add(asc?'asc':'desc');
      var num=th.dataset.kind==='num',body=table.tBodies[0];
      var rows=Array.prototype.slice.call(body.rows);
      rows.sort(function(a,b){
        var x=a.cells[col].dataset.v,y=b.cells[col].dataset.v;
        if(x===y)return 0;if(x==='')return 1;if(y==='')return -1;
        var d=num?parseFloat(x)-parseFloat(y):x.localeCompare(y);
        return asc?d:-d;});
      rows.forEach(function(r){body.appendChild(r);});
    }
    th.addEventListener('click',sort);
    th.addEventListener('keydown',function(e){if(e.key==='Enter')sort();});
  });
});
"""

# Reload every N seconds, coming back to the same scroll position.
SCRIPT_RELOAD = """
(function(){var key='munet-report-scroll';
try{var y=sessionStorage.getItem(key);if(y!==null)window.scrollTo(0,parseFloat(y));}catch(e){}
setTimeout(function(){try{sessionStorage.setItem(key,String(window.scrollY));}catch(e){}
location.reload();},%d);})();
"""


def _header(view: SystemView, labels: dict[str, str], refresh_seconds: float | None) -> str:
    tasks = view.tasks
    components = {
        use.key: use.num_params
        for agent in view.agents.values()
        for path in agent.published
        for use in path.components
    }
    sampled = sum(len(a.history) for a in tasks)
    admitted = sum(c.admitted for a in tasks for c in a.history)
    stats = [
        (len(view.task_names), "tasks" if len(view.task_names) != 1 else "task"),
        (len(tasks), "task agents" if len(tasks) != 1 else "task agent"),
        (sum(len(a.published) for a in tasks), "published paths"),
        (len(components), "components"),
        (fmt_number(sum(components.values())), "parameters"),
        (sampled, "paths sampled"),
        (admitted, "admitted"),
    ]
    watch = f" · reloads every {refresh_seconds:g}s" if refresh_seconds else ""
    stamp = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    return (
        "<header><h1>munet system report</h1>"
        f'<div class="meta">{escape(view.state_dir)} · written {stamp}{watch}</div>'
        '<div class="stats">'
        + "".join(f"<span><b>{value}</b>{escape(text)}</span>" for value, text in stats)
        + "</div></header>"
    )


def render_report(view: SystemView, refresh_seconds: float | None = None) -> str:
    """The report page of a collected system.

    Args:
        view: what :func:`~munet.report.collect.collect_system` read.
        refresh_seconds: when set, the page reloads itself this often.

    Returns:
        The HTML document.
    """
    names = {a.agent_id: a.task_name for a in view.agents.values()}
    for full_id in view.paths:
        agent = full_id.rpartition(":")[0]
        names.setdefault(agent, view.paths[full_id].task_name)
    labels = sections.short_names(names, names)
    rendered = {
        "tasks": sections.tasks(view, labels),
        "leaderboard": sections.leaderboard(view, labels),
        "classes": class_sections.per_class(view, labels),
        "learning": sections.learning(view, labels),
        "history": sections.history(view, labels),
        "system": sections.system_graph(view, labels),
        "params": sections.params_per_task(view, labels),
        "multipath": sections.multipath(view, labels),
        "mutations": sections.mutations(view, labels),
    }
    # A section with nothing to show at all (no multipath paths, no class metrics) is left
    # out, with its link.
    shown = [sid for sid in sections.SECTION_IDS if rendered[sid]]
    body = [rendered[sid] for sid in shown]
    if view.warnings:
        items = "".join(f"<li>{escape(w)}</li>" for w in view.warnings)
        body.append(f'<section class="problems"><h2>Problems met</h2><ul>{items}</ul></section>')
    nav = "".join(f'<a href="#{sid}">{escape(sections.SECTION_TITLES[sid])}</a>' for sid in shown)
    script = SCRIPT_SORT
    if refresh_seconds:
        script += SCRIPT_RELOAD % int(refresh_seconds * 1000)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>munet report · {escape(os.path.basename(view.state_dir.rstrip('/')))}</title>"
        f"<style>{STYLE}</style></head><body>{_header(view, labels, refresh_seconds)}"
        f"<nav>{nav}</nav><main>{''.join(body)}</main><script>{script}</script></body></html>\n"
    )


def _write_atomic(path: str, text: str) -> None:
    """Write via a temporary file and rename, so a reloading browser never reads half a page."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".report-", suffix=".html", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes it private; a report is for reading.
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def write_report(
    state_dir: str,
    out: str = "report.html",
    refresh_seconds: float | None = None,
    png: bool = False,
    cache: dict | None = None,
    baselines: dict | None = None,
    class_metrics: Callable[[], tuple[dict, list[str]]] | None = None,
) -> SystemView:
    """Reads the system and writes its report (and, with ``png``, the figures as PNG files).

    Args:
        state_dir: the system state dir (local path or fsspec URL).
        out: the HTML file to write.
        refresh_seconds: make the page reload itself this often.
        png: also write ``<out stem>-<figure>.png`` next to the HTML file.
        cache: see :func:`~munet.report.collect.collect_system` (kept by :func:`watch_report`).
        baselines: per task, baselines to compare with (:func:`munet.report.baseline.
            load_baselines`).
        class_metrics: returns ({agent id: (path full id, ClassMetrics)}, problems), for the
            per-class section (`munet.agents.class_evaluation.best_paths_class_metrics`); None
            leaves the section out.

    Returns:
        The collected system.

    Raises:
        FileNotFoundError: no state dir there.
    """
    view = collect_system(state_dir, cache)
    view.baselines = dict(baselines or {})
    if class_metrics is not None:
        view.class_metrics, problems = class_metrics()
        view.warnings.extend(problems)
    _write_atomic(out, render_report(view, refresh_seconds))
    if png:
        from munet.report.png import write_pngs

        write_pngs(view, os.path.splitext(out)[0])
    return view


def watch_report(
    state_dir: str,
    out: str,
    interval: float,
    png: bool = False,
    rounds: int | None = None,
    on_write: Callable[[SystemView], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    baselines: dict | None = None,
    class_metrics: Callable[[], tuple[dict, list[str]]] | None = None,
) -> int:
    """Writes the report, then rewrites it whenever an agent commits a state.

    Args:
        state_dir: the system state dir.
        out: the HTML file.
        interval: seconds between checks (also the page's reload period).
        png: rewrite the PNG figures too.
        rounds: stop after this many checks (None: until interrupted).
        on_write: called after every write with the collected system.
        sleep: how to wait (tests pass a fake).
        baselines, class_metrics: see :func:`write_report`.

    Returns:
        The number of times the report was written.
    """
    if interval <= 0:
        raise ValueError(f"watch interval {interval!r}: expected seconds > 0")
    written = 0
    last = None
    checks = 0
    cache: dict = {}
    while rounds is None or checks < rounds:
        signature = store_signature(state_dir)
        if signature != last:
            view = write_report(
                state_dir, out, refresh_seconds=interval, png=png, cache=cache,
                baselines=baselines, class_metrics=class_metrics,
            )  # fmt: skip
            written += 1
            last = signature
            if on_write is not None:
                on_write(view)
        checks += 1
        if rounds is None or checks < rounds:
            sleep(interval)
    return written
