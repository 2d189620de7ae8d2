"""The report's figures as PNG files (matplotlib), for papers and notes.

    write_pngs(collect_system("state"), "report")   # report-history.png, report-system.png, ...

Figures are built with ``matplotlib.figure.Figure`` directly (no pyplot, no global backend
state), in the page's colours, with the page's y ranges (``sections.history_y_range``), and
saved with a tight bounding box so no tick label or title is cut off. Legends sit outside the
axes, where they hide no data.
"""

from __future__ import annotations

import math
from collections import Counter

from munet.report.analysis import chance_level, learning_curve, mutation_effects
from munet.report.collect import SUBPATH, SystemView
from munet.report.research import quality_axis
from munet.report.sections import history_y_range, short_names, unique_params
from munet.report.system_graph import slot_label

COLOURS = {
    "owned": "#3b6fd8",
    "cloned": "#8e5cc4",
    "shared": "#2a9d8f",
    "subpath": "#e39b2d",
    "rejected": "#9aa5b1",
    "test": "#d9480f",
    "light": "#c8cfd6",
    "chance": "#6b7785",
    "baseline": "#2a9d8f",
    "curve_alt": "#8fb0ee",
}
FIGURES = ("history", "curves", "system", "params", "mutations")


def _labels(view: SystemView) -> dict[str, str]:
    names = {a.agent_id: a.task_name for a in view.agents.values()}
    return short_names(names, names)


def _history_figure(view: SystemView, labels: dict[str, str]):
    from matplotlib.figure import Figure

    tasks = view.tasks
    per_row = 2 if len(tasks) > 1 else 1  # Tasks side by side, each a quality + score pair.
    rows = max(math.ceil(len(tasks) / per_row), 1)
    height = 2.0 * rows + 0.5
    fig = Figure(figsize=(5.6 * per_row, height))
    # Fixed margins: matplotlib's layout engines take a minute for a hundred axes.
    fig.subplots_adjust(
        left=0.06 / per_row, right=0.99, top=1 - 0.3 / height, bottom=0.45 / height,
        hspace=0.75, wspace=0.3,
    )  # fmt: skip
    axes = fig.subplots(rows, 2 * per_row, squeeze=False)
    for ax in axes.flat[2 * len(tasks) :]:
        ax.set_visible(False)
    for index, agent in enumerate(tasks):
        per_cycle = Counter()
        for c in agent.history:
            per_cycle[c.cycle] = max(per_cycle[c.cycle], c.generation + 1)

        def x_of(c, per_cycle=per_cycle) -> float:
            return c.cycle + (c.generation + 0.5) / max(per_cycle[c.cycle], 1)

        for col, metric in enumerate(("quality", "score")):
            ax = axes[index // per_row][2 * (index % per_row) + col]
            for admitted in (False, True):
                chosen = [
                    c
                    for c in agent.history
                    if c.admitted == admitted and getattr(c, metric) is not None
                ]
                ax.scatter(
                    [x_of(c) for c in chosen],
                    [getattr(c, metric) for c in chosen],
                    s=12,
                    facecolors=COLOURS["owned"] if admitted else "none",
                    edgecolors=COLOURS["owned"] if admitted else COLOURS["rejected"],
                    label="admitted" if admitted else "rejected",
                )
            ax.set_ylim(*history_y_range(view, agent, metric))
            last = max([c.cycle + 1 for c in agent.history] + [r.cycle for r in agent.cycles] + [1])
            ax.set_xlim(0, last)
            if metric == "quality":
                _reference_lines(ax, view, agent)
                tested = [r for r in agent.cycles if r.test_quality is not None]
                ax.plot(
                    [r.cycle for r in tested],
                    [r.test_quality for r in tested],
                    "D--",
                    color=COLOURS["test"],
                    markersize=3.5,
                    linewidth=1,
                    label="test (best path)",
                    clip_on=False,  # A cycle's end sits on the axis edge.
                )
            name = "validation quality" if col == 0 else "score"
            ax.set_title(f"{labels[agent.agent_id]}: {name}", fontsize=8.5)
            ax.tick_params(labelsize=7)
            ax.grid(alpha=0.3)
    for ax in axes[-1]:
        ax.set_xlabel("cycle", fontsize=8)
    _figure_legend(fig, axes[0][0], 0.3 / height)
    return fig


def _reference_lines(ax, view: SystemView, agent) -> None:
    """Chance (dotted) and each baseline's mean test quality (dashed), as on the page."""
    chance = chance_level(agent)
    if chance is not None:
        ax.axhline(chance, color=COLOURS["chance"], linestyle=":", linewidth=1, label="chance")
    styles = ((COLOURS["baseline"], "--"), (COLOURS["cloned"], "-."), ("#b7791f", ":"))
    for index, baseline in enumerate(view.baselines.get(agent.task_name, [])):
        colour, style = styles[index % len(styles)]
        ax.axhline(baseline.mean, color=colour, linestyle=style, linewidth=1,
                   label=f"baseline: {baseline.method}")  # fmt: skip


def _figure_legend(fig, ax, top_fraction: float) -> None:
    """One legend for the figure, above the axes (it hides no marker); labels once each."""
    handles, names = [], []
    for axis in fig.axes:
        for handle, name in zip(*axis.get_legend_handles_labels(), strict=True):
            if name not in names:
                handles.append(handle)
                names.append(name)
    if handles:
        fig.legend(handles, names, loc="lower center", ncol=min(len(names), 4), fontsize=7,
                   frameon=False, bbox_to_anchor=(0.5, 1 - top_fraction * 0.2))  # fmt: skip


def _curves_figure(view: SystemView, labels: dict[str, str]):
    """Per agent, validation quality (and train loss when recorded) of the best path's
    lineage over cumulative train steps, with chance and baselines."""
    from matplotlib.figure import Figure

    curves = [(a, learning_curve(view, a)) for a in view.tasks]
    curves = [(a, c) for a, c in curves if c.segments]
    columns = 2 if any(c.has_loss for _, c in curves) else 1
    height = 2.0 * len(curves) + 0.5
    fig = Figure(figsize=(5.2 * columns, height))
    fig.subplots_adjust(left=0.1, right=0.98, top=1 - 0.3 / height, bottom=0.45 / height,
                        hspace=0.8, wspace=0.25)  # fmt: skip
    axes = fig.subplots(len(curves), columns, squeeze=False)
    for row, (agent, curve) in enumerate(curves):
        ax = axes[row][0]
        qualities = [q for s in curve.segments for q in s.qualities]
        ax.set_ylim(*quality_axis(view, agent, qualities))
        ax.set_xlim(0, curve.total_steps or 1)
        _reference_lines(ax, view, agent)
        for index, segment in enumerate(curve.segments):
            colour = COLOURS["owned"] if index % 2 == 0 else COLOURS["curve_alt"]
            ax.plot(segment.steps, [float("nan") if q is None else q for q in segment.qualities],
                    "o-", color=colour, markersize=2.5, linewidth=1.2,
                    label="lineage (one shade per path)" if index == 0 else None)  # fmt: skip
        ax.set_title(f"{labels[agent.agent_id]}: validation quality", fontsize=8.5)
        x_label = "train steps" if curve.steps_recorded else "train steps (from the config)"
        ax.set_xlabel(x_label, fontsize=7.5)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
        if columns == 2:
            loss_ax = axes[row][1]
            if curve.has_loss:
                for index, segment in enumerate(curve.segments):
                    if segment.losses is None:
                        continue
                    colour = COLOURS["owned"] if index % 2 == 0 else COLOURS["curve_alt"]
                    loss_ax.plot(segment.steps,
                                 [float("nan") if v is None else v for v in segment.losses],
                                 "o-", color=colour, markersize=2.5, linewidth=1.2)  # fmt: skip
                loss_ax.set_xlim(0, curve.total_steps or 1)
                top = max([v for s in curve.segments for v in (s.losses or []) if v is not None]
                          + [0.0])  # fmt: skip
                loss_ax.set_ylim(0, top * 1.08 or 1.0)
                loss_ax.set_title(f"{labels[agent.agent_id]}: mean train loss", fontsize=8.5)
                loss_ax.set_xlabel(x_label, fontsize=7.5)
                loss_ax.tick_params(labelsize=7)
                loss_ax.grid(alpha=0.3)
            else:
                loss_ax.set_visible(False)
    _figure_legend(fig, axes[0][0], 0.3 / height)
    return fig


def _system_figure(view: SystemView, labels: dict[str, str]):
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch, Rectangle

    tasks = [a for a in view.tasks if a.best is not None]
    slots = max([len(a.best.components) + len(a.best.subpaths) for a in tasks] + [1])
    width = max(6.0, 0.62 * slots + 2.5)
    height = 0.38 * max(len(tasks), 1) + 1.0
    fig = Figure(figsize=(width, height))
    label_inches = 0.075 * max([len(labels[a.agent_id]) for a in tasks] + [4]) + 0.2
    fig.subplots_adjust(left=label_inches / width, right=0.99, top=1 - 0.35 / height,
                        bottom=0.45 / height)  # fmt: skip
    ax = fig.subplots()
    for row, agent in enumerate(tasks):
        y = len(tasks) - 1 - row
        boxes = [(u.slot, u.status) for u in agent.best.components] + [
            (slot, SUBPATH) for slot, _ in agent.best.subpaths
        ]
        for col, (slot, status) in enumerate(boxes):
            ax.add_patch(Rectangle((col, y + 0.1), 0.92, 0.8, color=COLOURS[status]))
            ax.text(
                col + 0.46,
                y + 0.5,
                slot_label(slot),
                ha="center",
                va="center",
                color="white",
                fontsize=7,
            )
    ax.set_xlim(0, slots)
    ax.set_ylim(0, max(len(tasks), 1))
    ax.set_yticks([len(tasks) - 1 - i + 0.5 for i in range(len(tasks))])
    ax.set_yticklabels([labels[a.agent_id] for a in tasks], fontsize=8)
    ax.set_xticks([])
    for side in ("top", "right", "bottom", "left"):
        ax.spines[side].set_visible(False)
    ax.set_title("Components of each task's best path", fontsize=10)
    ax.legend(
        handles=[
            Patch(color=COLOURS[s], label=s) for s in ("owned", "cloned", "shared", "subpath")
        ],
        fontsize=7,
        loc="upper center",
        bbox_to_anchor=(0.5, 0.0),
        ncol=4,
        frameon=False,
    )
    return fig


def _bars_figure(
    title: str, labels: list[str], stacks: list[tuple[str, list[float], str]], xlabel: str
):
    from matplotlib.figure import Figure

    width, height = 7.0, 0.3 * max(len(labels), 1) + 1.2
    fig = Figure(figsize=(width, height))
    label_inches = 0.075 * max([len(label) for label in labels] + [4]) + 0.2
    fig.subplots_adjust(left=label_inches / width, right=0.97, top=1 - 0.35 / height,
                        bottom=0.55 / height)  # fmt: skip
    ax = fig.subplots()
    positions = list(range(len(labels)))[::-1]
    left = [0.0] * len(labels)
    for name, values, colour in stacks:
        ax.barh(positions, values, left=left, color=colour, label=name, height=0.7)
        left = [a + b for a, b in zip(left, values, strict=True)]
    ax.set_yticks(positions)
    ax.set_yticklabels(labels, fontsize=8)
    ax.set_xlabel(xlabel, fontsize=8)
    ax.tick_params(axis="x", labelsize=7)
    ax.set_title(title, fontsize=10)
    if len(stacks) > 1:  # Below the figure's x label: a legend inside would hide bars.
        fig.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, 0.0),
                   ncol=len(stacks), frameon=False)  # fmt: skip
    ax.grid(axis="x", alpha=0.3)
    return fig


def figures(view: SystemView) -> dict:
    """The report's figures by name (``history``, ``system``, ``params``, ``mutations``);
    a figure with nothing to show is left out."""
    labels = _labels(view)
    out = {}
    if any(a.history for a in view.tasks):
        out["history"] = _history_figure(view, labels)
    if any(learning_curve(view, a).segments for a in view.tasks):
        out["curves"] = _curves_figure(view, labels)
    if any(a.best is not None for a in view.tasks):
        out["system"] = _system_figure(view, labels)
    tasks = [a for a in view.tasks if a.published]
    if tasks:
        added, reused = zip(*(unique_params(a.published, view) for a in tasks), strict=True)
        out["params"] = _bars_figure(
            "Parameters per task",
            [labels[a.agent_id] for a in tasks],
            [("added", list(added), COLOURS["owned"]), ("reused", list(reused), COLOURS["shared"])],
            "parameters",
        )
    effects = mutation_effects(view, view.tasks)[:20]
    if effects:
        out["mutations"] = _effects_figure(effects)
    return out


def _effects_figure(effects):
    """Mean change of score from parent to child per mutation (forced ones marked)."""
    from matplotlib.figure import Figure

    names = [f"{e.name}{' (forced)' if e.forced else ''}  n={e.count}" for e in effects]
    width, height = 7.0, 0.3 * len(effects) + 1.2
    fig = Figure(figsize=(width, height))
    ax = fig.subplots()
    positions = list(range(len(effects)))[::-1]
    ax.barh(
        positions,
        [e.mean_delta for e in effects],
        height=0.7,
        color=[COLOURS["owned"] if e.mean_delta >= 0 else COLOURS["test"] for e in effects],
    )
    ax.axvline(0, color=COLOURS["chance"], linewidth=0.8)
    ax.set_yticks(positions)
    ax.set_yticklabels(names, fontsize=8)
    ax.set_xlabel("mean score change, child − parent (same task)", fontsize=8)
    ax.tick_params(axis="x", labelsize=7)
    ax.set_title("Mutations ranked by effect on score", fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    ax.margins(x=0.15)
    return fig


def write_pngs(view: SystemView, prefix: str, dpi: int = 120) -> list[str]:
    """Writes ``<prefix>-<figure>.png`` for every figure with something to show.

    Returns:
        The files written.
    """
    written = []
    for name, fig in figures(view).items():
        path = f"{prefix}-{name}.png"
        height = fig.get_size_inches()[1]
        # Very tall figures (hundreds of tasks) get a lower resolution to stay a sane size.
        # A tight box: tick labels, titles and legends outside the axes are all kept.
        fig.savefig(path, dpi=min(dpi, max(40, int(math.floor(12000 / max(height, 1))))),
                    bbox_inches="tight", pad_inches=0.08)  # fmt: skip
        written.append(path)
    return written
