"""The report's research sections: each task against chance and its baselines, with the best
path's hparams and data source; learning curves of the best path's lineage; mutations ranked
by their effect on the child's score.

Every function returns the inner HTML of a section (``munet.report.sections`` wraps it).
"""

from __future__ import annotations

import json
from html import escape

from munet.report.analysis import (
    LearningCurve,
    chance_level,
    data_source,
    is_multipath_agent,
    learning_curve,
    mutation_effects,
    quality_range,
    task_groups,
)
from munet.report.collect import AgentView, SystemView, as_float
from munet.report.svg import Plot, fmt_number

# Hyperparameters a reader of the best path cares about; the rest are in the details list.
_SKIP_HPARAMS_PREFIX = "_mu_"


def _slug(agent_id: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in agent_id)


def _q(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def _num_cell(value: float | None, signed: bool = False) -> str:
    shown = "-" if value is None else (f"{value:+.4f}" if signed else f"{value:.4f}")
    sort_value = "" if value is None else repr(value)
    return f'<td class="num" data-v="{sort_value}">{shown}</td>'


def _hparams_html(agent: AgentView) -> str:
    best = agent.best
    if best is None or not best.hparams:
        return ""
    items = []
    for key in sorted(best.hparams):
        if key.startswith(_SKIP_HPARAMS_PREFIX):
            continue
        value = best.hparams[key]
        text = json.dumps(value, sort_keys=True) if isinstance(value, (dict, list)) else str(value)
        if len(text) > 80:
            text = text[:77] + "..."
        items.append(f"<tr><th>{escape(key)}</th><td>{escape(text)}</td></tr>")
    tuned = sum(key.startswith(_SKIP_HPARAMS_PREFIX) for key in best.hparams)
    tuned_note = f" (+{tuned} self-tuned mutation probabilities)" if tuned else ""
    return (
        f'<details class="hparams"><summary>hparams of {escape(best.full_id)}{tuned_note}'
        f'</summary><table class="kv">{"".join(items)}</table></details>'
    )


def tasks_overview(view: SystemView, labels: dict[str, str]) -> str:
    """Per task, each agent's best path against chance and the baselines given, the data
    source, and the best path's hparams; a task's agents (singlepath, multipath) together."""
    groups = task_groups(view)
    if not groups:
        return '<p class="empty">No task agent yet.</p>'
    methods = sorted({b.method for task in view.baselines.values() for b in task})
    # One column per baseline (its test quality, the difference below it) and a wrapping data
    # column keep the table inside a 1,400 px window with several baselines.
    head = (
        "<th>task</th><th>best path of each agent</th>"
        '<th data-kind="num">test quality</th><th data-kind="num">validation</th>'
        '<th data-kind="num">chance</th>'
        + "".join(
            f'<th data-kind="num" class="method" title="{escape(m)}: its test quality, and '
            f'below it test quality − {escape(m)}">{escape(m).replace("_", "_<wbr>")}</th>'
            for m in methods
        )
        + '<th class="data">data</th>'
    )
    rows, details = [], []
    for task, agents in groups.items():
        baselines = {b.method: b for b in view.baselines.get(task, [])}
        for index, agent in enumerate(agents):
            best = agent.best
            test = as_float(best.metrics.get("test_quality")) if best else None
            quality = as_float(best.metrics.get("quality")) if best else None
            chance = chance_level(agent)
            cells = []
            for method in methods:
                baseline = baselines.get(method)
                mean = baseline.mean if baseline else None
                tip = (
                    f' title="mean of {baseline.count} file(s), std {baseline.std:.4f}"'
                    if baseline
                    else ""
                )
                delta = None if mean is None or test is None else test - mean
                shown = "-" if mean is None else f"{mean:.4f}"
                if delta is not None:
                    sign = "gain" if delta >= 0 else "loss"
                    shown += f'<br><small class="delta {sign}">Δ {delta:+.4f}</small>'
                sort_value = "" if mean is None else repr(mean)
                cells.append(f'<td class="num"{tip} data-v="{sort_value}">{shown}</td>')
            task_cell = (
                f'<td rowspan="{len(agents)}" data-v="{escape(task)}"><b>{escape(task)}</b></td>'
                if index == 0
                else ""
            )
            kind = " <small>(multipath)</small>" if is_multipath_agent(agent) else ""
            path_cell = (
                f'<a href="#task-{_slug(agent.agent_id)}">{escape(best.full_id)}</a>'
                if best
                else "-"
            )
            start = ' class="task-start"' if index == 0 and rows else ""
            rows.append(
                f"<tr{start}>{task_cell}"
                f'<td title="{escape(agent.agent_id)}">{path_cell}{kind}</td>'
                f"{_num_cell(test)}{_num_cell(quality)}{_num_cell(chance)}{''.join(cells)}"
                f'<td class="data">{escape(data_source(agent))}</td></tr>'
            )
            hparams = _hparams_html(agent)
            if hparams:
                details.append(f"<div>{escape(labels.get(agent.agent_id, agent.agent_id))}: "
                               f"{hparams}</div>")  # fmt: skip
    baseline_note = (
        "Baselines: " + ", ".join(escape(m) for m in methods) + " (from --baseline files)."
        if methods
        else "No baseline given (munet report --baseline FILE.json adds one)."
    )
    return (
        f'<p class="note">Chance: 1 / number of classes. {baseline_note}</p>'
        f'<div class="scroll"><table class="tasks" id="tasks-table"><thead><tr>{head}</tr>'
        f"</thead><tbody>{''.join(rows)}</tbody></table></div>"
        f'<h3>Best paths\' hyperparameters</h3><div class="hp-list">{"".join(details)}</div>'
    )


def reference_lines(plot: Plot, view: SystemView, agent: AgentView, x_end: float) -> None:
    """Chance (dotted grey) and each baseline's mean test quality (dashed) across a plot."""
    x_start = plot.x_range[0]
    low, high = plot.y_range
    off_axis = []
    chance = chance_level(agent)
    if chance is not None and low <= chance <= high:
        plot.line([x_start, x_end], [chance, chance], "chance-line", title=f"chance {chance:.4f}")
    elif chance is not None:
        off_axis.append(f"chance {fmt_number(chance)} ({'below' if chance < low else 'above'})")
    for index, baseline in enumerate(view.baselines.get(agent.task_name, [])):
        if not low <= baseline.mean <= high:
            where = "below" if baseline.mean < low else "above"
            off_axis.append(f"{baseline.method} {fmt_number(baseline.mean)} ({where})")
            continue
        plot.line(
            [x_start, x_end],
            [baseline.mean, baseline.mean],
            f"baseline-line baseline-{index % 3}",
            title=f"{baseline.method}: test quality {baseline.mean:.4f} "
            f"(mean of {baseline.count} file(s))",
        )
    for text in off_axis:
        # The axis is fitted to the data; a level far from it is named (above the plot area)
        # instead of drawn.
        plot.note(text)


def reference_values(view: SystemView, agent: AgentView) -> list[float]:
    """The chance and baseline levels drawn on the agent's quality plots."""
    chance = chance_level(agent)
    levels = [b.mean for b in view.baselines.get(agent.task_name, [])]
    return levels + ([chance] if chance is not None else [])


def quality_axis(view: SystemView, agent: AgentView, values) -> tuple[float, float]:
    """The y range of one of the agent's quality plots (page and PNG): fitted to the values
    and the baselines asked for; chance only when it lies near them (else named, not drawn)."""
    baselines = [b.mean for b in view.baselines.get(agent.task_name, [])]
    return quality_range([*values, *baselines], [chance_level(agent)])


def _curve_plots(view: SystemView, agent: AgentView, curve: LearningCurve) -> str:
    total = curve.total_steps or 1.0
    x_label = "train steps" if curve.steps_recorded else "train steps (from the config)"
    qualities = [q for s in curve.segments for q in s.qualities]
    quality = Plot(
        (0, total),
        quality_axis(view, agent, qualities),
        title="validation quality (lineage)",
        x_label=x_label,
    )
    reference_lines(quality, view, agent, total)
    for index, segment in enumerate(curve.segments):
        css = f"curve curve-{index % 2}"
        points = [(x, y) for x, y in zip(segment.steps, segment.qualities, strict=True)
                  if y is not None]  # fmt: skip
        quality.line([x for x, _ in points], [y for _, y in points], css)
        quality.points(
            [x for x, _ in points],
            [y for _, y in points],
            css,
            [
                f"{segment.path} (cycle {segment.cycle + 1} generation {segment.generation + 1})"
                f": step {fmt_number(x)}, validation quality {y:.4f}"
                for x, y in points
            ],
            radius=2.4,
        )
    plots = [quality.render()]
    if curve.has_loss:
        losses = [v for s in curve.segments for v in (s.losses or []) if v is not None]
        loss = Plot(
            (0, total),
            (0.0, max(losses, default=1.0) * 1.05 or 1.0),
            title="mean train loss",
            x_label=x_label,
        )
        for index, segment in enumerate(curve.segments):
            if segment.losses is None:
                continue
            css = f"curve curve-{index % 2}"
            points = [(x, y) for x, y in zip(segment.steps, segment.losses, strict=True)
                      if y is not None]  # fmt: skip
            loss.line([x for x, _ in points], [y for _, y in points], css)
            loss.points(
                [x for x, _ in points],
                [y for _, y in points],
                css,
                [f"{segment.path}: step {fmt_number(x)}, train loss {y:.4f}" for x, y in points],
                radius=2.4,
            )
        plots.append(loss.render())
    return "".join(plots)


def learning(view: SystemView, labels: dict[str, str]) -> str:
    """Per agent, the validation quality (and train loss, when recorded) of its best path's
    lineage over cumulative train steps, with chance and baselines."""
    cards = []
    for agent in view.tasks:
        curve = learning_curve(view, agent)
        if not curve.segments:
            continue
        facts = (
            f"{len(curve.segments)} paths in the lineage · {fmt_number(curve.total_steps)} "
            "train steps" + ("" if curve.has_loss else " · no train loss recorded")
        )
        cards.append(
            f'<div class="card" id="curve-{_slug(agent.agent_id)}"><h3 title="'
            f'{escape(agent.agent_id)}">{escape(labels[agent.agent_id])}</h3>'
            f'<p class="facts">{escape(facts)}</p><div class="plots">'
            f"{_curve_plots(view, agent, curve)}</div></div>"
        )
    if not cards:
        return '<p class="empty">No validation curve recorded yet.</p>'
    legend = (
        '<p class="legend"><span class="sw curve"></span>one path of the lineage (alternating '
        'shades; each starts where its parent stopped) <span class="sw chance-line"></span>'
        'chance <span class="sw baseline-line"></span>baseline test quality (hover a line for its '
        "method)</p>"
    )
    return legend + f'<div class="cards">{"".join(cards)}</div>'


def mutation_effects_table(view: SystemView, labels: dict[str, str], top: int = 30) -> str:
    """Mutations ranked by the mean change of score from parent to child over the children
    they fired in; forced mutations marked."""
    effects = mutation_effects(view, view.tasks)
    if not effects:
        return '<p class="empty">No mutation fired in a scored child yet.</p>'
    shown = effects[:top]
    scale = max(abs(e.mean_delta) for e in shown) or 1.0
    rows = []
    for rank, effect in enumerate(shown, 1):
        width = 60 * abs(effect.mean_delta) / scale
        side = "gain" if effect.mean_delta >= 0 else "loss"
        badge = ' <span class="badge">forced</span>' if effect.forced else ""
        rows.append(
            f'<tr><td class="num" data-v="{rank}">{rank}</td>'
            f'<td data-v="{escape(effect.name)}">{escape(effect.name)}{badge}</td>'
            f"{_num_cell(effect.mean_delta, signed=True)}"
            f'<td><span class="effect {side}" style="width:{width:.0f}px"></span></td>'
            f"{_num_cell(effect.mean_quality_delta, signed=True)}"
            f'<td class="num" data-v="{effect.count}">{effect.count}</td>'
            f'<td class="num" data-v="{effect.admitted}">{effect.admitted}</td></tr>'
        )
    head = (
        '<th data-kind="num">rank</th><th data-kind="text">mutation</th>'
        '<th data-kind="num">mean Δ score</th><th></th><th data-kind="num">mean Δ quality</th>'
        '<th data-kind="num">children</th><th data-kind="num">admitted</th>'
    )
    return (
        '<p class="note">Child score − parent score, averaged over the scored children each '
        "mutation fired in (several fire together, so this is what came with a mutation, "
        'not its isolated effect). Only children of a same-task parent count. <span class="badge">'
        "forced</span> mutations (force_mutations) fire whenever they apply, not by chance. "
        f"Top {len(shown)} of {len(effects)}.</p>"
        f'<div class="scroll"><table class="sortable" id="mutations-table"><thead><tr>{head}'
        f"</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
    )
