"""The report's sections, each a function of a :class:`SystemView` returning an HTML fragment.

Every section is an ``<section id=...>`` (the ids in :data:`SECTION_IDS`), so the page's
navigation and the tests can find them; a section with nothing to show says so.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from html import escape

from munet.report import research
from munet.report.analysis import quality_range
from munet.report.collect import (
    SHARED,
    AgentView,
    PathView,
    SystemView,
    as_float,
)
from munet.report.svg import Plot, fmt_number, hbar_chart
from munet.report.system_graph import graph_body
from munet.system.naming import agent_class_name

SECTION_IDS = (
    "tasks", "leaderboard", "classes", "learning", "history", "system", "params", "multipath",
    "mutations",
)  # fmt: skip
SECTION_TITLES = {
    "tasks": "Tasks against chance and baselines",
    "leaderboard": "Leaderboard",
    "classes": "Per-class test accuracy",
    "learning": "Learning curves of the best paths",
    "history": "Quality and score over cycles",
    "system": "System graph",
    "params": "Parameters per task",
    "multipath": "Multipath paths",
    "mutations": "Mutations ranked by effect on score",
}


def short_names(agent_ids: Iterable[str], tasks: dict[str, str]) -> dict[str, str]:
    """A readable label per agent, one scheme for the whole page: the task name when every
    task has one agent, else `task (AgentClass)` for every agent (`digits (VitCpu)`,
    `digits (MultiVitCpu)`, `synth/shape (VitCpu)`). Columns that hold ids show ids."""
    agent_ids = list(agent_ids)
    counts = Counter(tasks.get(a, a) for a in agent_ids)
    if all(n == 1 for n in counts.values()):
        return {a: tasks.get(a, a) for a in agent_ids}
    return {a: f"{tasks.get(a, a)} ({agent_class_name(a)})" for a in agent_ids}


def best_of_tasks(view: SystemView) -> set[str]:
    """The full id of each task's best published path over all its agents: the highest score
    (ties: the first agent by id), as `munet export --task` picks it."""
    best: dict[str, PathView] = {}
    for agent in sorted(view.tasks, key=lambda a: a.agent_id):
        path = agent.best
        if path is None or path.score is None:
            continue
        current = best.get(agent.task_name)
        if current is None or path.score > current.score:
            best[agent.task_name] = path
    return {p.full_id for p in best.values()}


def _section(section_id: str, body: str, note: str = "") -> str:
    note_html = f'<p class="note">{note}</p>' if note else ""
    return (
        f'<section id="{section_id}"><h2>{escape(SECTION_TITLES[section_id])}</h2>'
        f"{note_html}{body}</section>"
    )


def _cell(value, kind: str = "num") -> str:
    """A table cell with a sortable ``data-v`` value."""
    if kind == "text":
        return f'<td data-v="{escape(str(value or ""))}">{escape(str(value or "-"))}</td>'
    number = as_float(value)
    shown = "-" if number is None else f"{number:.4f}" if kind == "q" else fmt_number(number)
    sort_value = "" if number is None else repr(number)
    return f'<td class="num" data-v="{sort_value}">{shown}</td>'


def leaderboard(view: SystemView, labels: dict[str, str]) -> str:
    """Every published path of every agent; the headers sort the table (inline script)."""
    headers = [
        ("agent", "text"), ("task", "text"), ("test quality", "num"), ("score", "num"),
        ("quality", "num"), ("accounted params", "num"), ("params", "num"), ("flops", "num"),
        ("cycles", "num"), ("path", "num"), ("parent", "text"), ("kept ancestor", "text"),
    ]  # fmt: skip
    head = "".join(
        f'<th data-kind="{kind}" tabindex="0">{escape(name)}</th>' for name, kind in headers
    )
    rows = []
    agents = sorted(view.agents.values(), key=lambda a: (a.is_root, a.agent_id))
    task_best = best_of_tasks(view)
    for agent in agents:
        ordered = sorted(agent.published, key=lambda p: -(p.score or -1.0))
        for path in ordered:
            m = path.metrics
            cls = ' class="best"' if path.full_id in task_best else ""
            anchor = escape(agent.task_name)  # The agent column tells same-task agents apart.
            if not agent.is_root:  # Root models have no history card to link to.
                anchor = f'<a href="#task-{_slug(agent.agent_id)}">{anchor}</a>'
            rows.append(
                f"<tr{cls}>{_cell(agent.agent_id, 'text')}"
                f'<td data-v="{escape(agent.task_name)}">{anchor}</td>'
                f"{_cell(m.get('test_quality'), 'q')}{_cell(m.get('score'), 'q')}"
                f"{_cell(m.get('quality'), 'q')}{_cell(m.get('accounted_params'))}"
                f"{_cell(m.get('num_params'))}{_cell(m.get('flops'))}"
                f"{_cell(m.get('num_cycles'))}{_cell(path.full_id.rpartition(':')[2])}"
                f"{_parent_cell(path.parent, labels)}"
                f"{_parent_cell(path.kept_ancestor, labels)}</tr>"
            )
    if not rows:
        return _section("leaderboard", '<p class="empty">No published paths yet.</p>')
    table = (
        f'<div class="scroll"><table class="sortable" id="leaderboard-table"><thead><tr>{head}'
        f"</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
    )
    return _section(
        "leaderboard", table, "Published paths of every agent; each task's best in bold. "
        "Parent: the path it was mutated from; kept ancestor: its nearest ancestor still in "
        "the system (older than the parent once the parent was pruned). Click a header to sort."
    )  # fmt: skip


def _parent_cell(parent: str | None, labels: dict[str, str]) -> str:
    """A parent's or ancestor's full path id (`agent id:path id`, as the tasks table's best
    paths); its agent's label on hover. The id may break after a `~` (`VitCpu~root_model~` /
    `random_init:0`) where the table would otherwise not fit the window: two such columns of
    root-model ids would make the leaderboard scroll sideways at 1,400 px."""
    if not parent:
        return '<td data-v="">-</td>'
    agent = parent.rpartition(":")[0]
    tip = labels.get(agent, agent)
    shown = escape(parent).replace("~", "~<wbr>")
    return f'<td data-v="{escape(parent)}" title="{escape(tip)}">{shown}</td>'


def _slug(agent_id: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in agent_id)


def tasks(view: SystemView, labels: dict[str, str]) -> str:
    """Each task's agents against chance and baselines, with data source and hparams."""
    return _section("tasks", research.tasks_overview(view, labels))


def learning(view: SystemView, labels: dict[str, str]) -> str:
    """Learning curves of each agent's best path's lineage."""
    return _section("learning", research.learning(view, labels))


def history_y_range(view: SystemView, agent: AgentView, metric: str) -> tuple[float, float]:
    """The y range of an agent's quality or score plot (the PNG figures use the same)."""
    values = [getattr(c, metric) for c in agent.history] + [
        v for r in agent.cycles for v in (r.test_quality, getattr(r, metric))
    ]
    if metric == "quality":
        return research.quality_axis(view, agent, values)
    return quality_range(values)


def _history_plots(view: SystemView, agent: AgentView) -> str:
    """Validation quality and score of every sampled candidate against cycle/generation."""
    history = agent.history
    per_cycle = Counter()
    for c in history:
        per_cycle[c.cycle] = max(per_cycle[c.cycle], c.generation + 1)

    def x_of(c) -> float:
        return c.cycle + (c.generation + 0.5) / max(per_cycle[c.cycle], 1)

    last_cycle = max([c.cycle + 1 for c in history] + [r.cycle for r in agent.cycles] + [1])
    plots = []
    for metric, title in (("quality", "validation quality"), ("score", "score")):
        plot = Plot(
            (0, last_cycle), history_y_range(view, agent, metric), title=title, x_label="cycle"
        )
        if metric == "quality":
            research.reference_lines(plot, view, agent, last_cycle)
        for admitted, css in ((False, "rejected"), (True, "admitted")):
            chosen = [
                c for c in history if c.admitted == admitted and getattr(c, metric) is not None
            ]
            plot.points(
                [x_of(c) for c in chosen],
                [getattr(c, metric) for c in chosen],
                css,
                [
                    f"path {c.path_id}: cycle {c.cycle + 1} generation {c.generation + 1}, "
                    f"quality {fmt_number(c.quality)}, score {fmt_number(c.score)}, "
                    f"{'admitted' if c.admitted else 'rejected'}"
                    + (f" ({c.failure})" if c.failure else "")
                    for c in chosen
                ],
            )
        if metric == "score":
            xs, ys, best = [], [], None
            for c in sorted(history, key=x_of):
                if c.admitted and c.score is not None and (best is None or c.score > best):
                    best = c.score
                    xs.append(x_of(c))
                    ys.append(best)
            if xs:
                xs.append(last_cycle)
                ys.append(ys[-1])
            plot.line(xs, ys, "best-line", step=True)
        else:
            tested = [r for r in agent.cycles if r.test_quality is not None]
            plot.line([r.cycle for r in tested], [r.test_quality for r in tested], "test-line")
            plot.points(
                [r.cycle for r in tested],
                [r.test_quality for r in tested],
                "test",
                [
                    f"end of cycle {r.cycle}: best {r.full_id} test quality "
                    f"{fmt_number(r.test_quality)}"
                    for r in tested
                ],
                shape="diamond",
            )
        ticks = list(range(0, last_cycle + 1)) if last_cycle <= 12 else None
        plots.append(plot.render(ticks))
    return "".join(plots)


def history(view: SystemView, labels: dict[str, str]) -> str:
    """Per task, every sampled candidate's validation quality and score (admitted filled,
    rejected hollow), the best score so far and the test quality at the end of each cycle."""
    cards = []
    for agent in view.tasks:
        admitted = sum(c.admitted for c in agent.history)
        failed = sum(c.quality is None for c in agent.history)
        best = agent.best
        test = as_float(best.metrics.get("test_quality")) if best else None
        facts = (
            f"{len(agent.history)} sampled, {admitted} admitted"
            + (f", {failed} failed" if failed else "")
            + f" · cycle {agent.cycle}"
            + (f" gen {agent.generation}" if agent.generation else "")
            + (f" · test {test:.4f}" if test is not None else "")
        )
        cards.append(
            f'<div class="card" id="task-{_slug(agent.agent_id)}"><h3 title="'
            f'{escape(agent.agent_id)}">{escape(labels[agent.agent_id])}</h3>'
            f'<p class="facts">{escape(facts)}</p><div class="plots">'
            f"{_history_plots(view, agent)}</div></div>"
        )
    if not cards:
        return _section("history", '<p class="empty">No task agent has sampled a path yet.</p>')
    legend = (
        '<p class="legend"><span class="sw admitted"></span>admitted candidate '
        '<span class="sw rejected"></span>rejected candidate '
        '<span class="sw best-line"></span>best score so far '
        '<span class="sw test"></span>test quality of the best path at the end of a cycle '
        '<span class="sw chance-line"></span>chance <span class="sw baseline-line"></span>'
        "baseline test quality (hover a line for its method)</p>"
    )
    return _section("history", legend + f'<div class="cards">{"".join(cards)}</div>')


def system_graph(view: SystemView, labels: dict[str, str]) -> str:
    """Each task's best path as a strip of its components (colour: how the task got it), then
    a task x owner matrix (see :mod:`munet.report.system_graph`)."""
    return _section("system", graph_body(view, labels))


def unique_params(paths: Sequence[PathView], view: SystemView) -> tuple[int, int]:
    """(params the agent added, params it reuses) over the components of its paths."""
    added: dict[str, int] = {}
    reused: dict[str, int] = {}
    for path in paths:
        for use in path.components:
            target = reused if use.status == SHARED else added
            target[use.key] = use.num_params
        for _slot, sub_id in path.subpaths:
            for use in view.paths[sub_id].components if sub_id in view.paths else []:
                reused[use.key] = use.num_params
    return sum(added.values()), sum(reused.values())


def params_per_task(view: SystemView, labels: dict[str, str]) -> str:
    """Stacked bars: parameters each task added to the system vs reused from it."""
    tasks = [a for a in view.tasks if a.published]
    if not tasks:
        return _section("params", '<p class="empty">No task has a published path yet.</p>')
    added, reused = zip(*(unique_params(a.published, view) for a in tasks), strict=True)
    chart = hbar_chart(
        [labels[a.agent_id] for a in tasks],
        [("added", added, "added"), ("reused", reused, "reused")],
    )
    total = sum(added) + sum(
        unique_params(a.published, view)[0] for a in view.agents.values() if a.is_root
    )
    legend = (
        '<p class="legend"><span class="sw added"></span>added (components the task owns: '
        'trained from scratch or cloned) <span class="sw reused"></span>reused (frozen '
        f"components of other agents) · system total {fmt_number(total)} params</p>"
    )
    return _section("params", legend + chart, "Over the components of each task's published paths.")


def multipath(view: SystemView, labels: dict[str, str]) -> str:
    """Each multipath path's slots: the subpath, its task and its quality."""
    rows = []
    routed: Counter = Counter()
    for agent in view.tasks:
        for path in agent.published:
            if not path.subpaths:
                continue
            for i, (slot, sub_id) in enumerate(path.subpaths):
                sub = view.paths.get(sub_id)
                sub_agent = sub_id.rpartition(":")[0]
                routed[sub_agent] += 1
                first = (
                    f'<td rowspan="{len(path.subpaths)}"><b>{escape(labels[agent.agent_id])}</b>'
                    f"<br><small>{escape(path.full_id)} · score "
                    f"{fmt_number(path.score)} · test "
                    f"{fmt_number(as_float(path.metrics.get('test_quality')))}</small></td>"
                    if i == 0
                    else ""
                )
                quality = as_float(sub.metrics.get("test_quality")) if sub else None
                params = sum(u.num_params for u in sub.components) if sub else None
                rows.append(
                    f"<tr>{first}<td>{escape(slot)}</td><td>{escape(sub_id)}</td>"
                    f"<td>{escape(labels.get(sub_agent, sub.task_name if sub else '-'))}</td>"
                    f'<td class="num">{fmt_number(quality)}</td>'
                    f'<td class="num">{fmt_number(params)}</td></tr>'
                )
    if not rows:
        return ""  # No section, and no link to it (render_report skips empty sections).
    summary = ", ".join(
        f"{escape(labels.get(a, a))} ({n})" for a, n in sorted(routed.items(), key=lambda x: -x[1])
    )
    table = (
        '<div class="scroll"><table class="multipath"><thead><tr><th>multipath path</th>'
        "<th>slot</th><th>subpath</th><th>task</th><th>subpath test quality</th>"
        f"<th>subpath params</th></tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
    )
    return _section("multipath", f"<p>Tasks routed through: {summary}.</p>{table}")


def mutations(view: SystemView, labels: dict[str, str]) -> str:
    """Mutations ranked by the mean change of score from parent to child (forced marked)."""
    return _section("mutations", research.mutation_effects_table(view, labels))
