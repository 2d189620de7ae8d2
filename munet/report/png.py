"""The report's figures as PNG files (matplotlib), for papers and notes.

    write_pngs(collect_system("state"), "report")   # report-history.png, report-system.png, ...

Figures are built with ``matplotlib.figure.Figure`` directly (no pyplot, no global backend
state), in the page's colours.
"""

from __future__ import annotations

import math
from collections import Counter

from munet.report.collect import SUBPATH, SystemView, mutation_counts
from munet.report.sections import _unique_params, short_names
from munet.report.system_graph import slot_label

COLOURS = {
    "owned": "#3b6fd8",
    "cloned": "#8e5cc4",
    "shared": "#2a9d8f",
    "subpath": "#e39b2d",
    "rejected": "#9aa5b1",
    "test": "#d9480f",
    "light": "#c8cfd6",
}
FIGURES = ("history", "system", "params", "mutations")


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
            if metric == "quality":
                tested = [r for r in agent.cycles if r.test_quality is not None]
                ax.plot(
                    [r.cycle for r in tested],
                    [r.test_quality for r in tested],
                    "D--",
                    color=COLOURS["test"],
                    markersize=3.5,
                    linewidth=1,
                    label="test (best path)",
                )
            name = "validation quality" if col == 0 else "score"
            ax.set_title(f"{labels[agent.agent_id]}: {name}", fontsize=8.5)
            ax.tick_params(labelsize=7)
            ax.grid(alpha=0.3)
            if index == 0 and col == 0:
                ax.legend(fontsize=6.5, loc="lower right")
    for ax in axes[-1]:
        ax.set_xlabel("cycle", fontsize=8)
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
    ax.legend(fontsize=7, loc="lower right")
    ax.grid(axis="x", alpha=0.3)
    return fig


def figures(view: SystemView) -> dict:
    """The report's figures by name (``history``, ``system``, ``params``, ``mutations``);
    a figure with nothing to show is left out."""
    labels = _labels(view)
    out = {}
    if any(a.history for a in view.tasks):
        out["history"] = _history_figure(view, labels)
    if any(a.best is not None for a in view.tasks):
        out["system"] = _system_figure(view, labels)
    tasks = [a for a in view.tasks if a.published]
    if tasks:
        added, reused = zip(*(_unique_params(a.published, view) for a in tasks), strict=True)
        out["params"] = _bars_figure(
            "Parameters per task",
            [labels[a.agent_id] for a in tasks],
            [("added", list(added), COLOURS["owned"]), ("reused", list(reused), COLOURS["shared"])],
            "parameters",
        )
    counts = mutation_counts(view.tasks)[:20]
    if counts:
        out["mutations"] = _bars_figure(
            "Mutations in admitted paths",
            [name for name, _, _ in counts],
            [
                ("in admitted paths", [a for _, a, _ in counts], COLOURS["owned"]),
                ("in rejected paths", [s - a for _, a, s in counts], COLOURS["light"]),
            ],
            "times fired",
        )
    return out


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
        fig.savefig(path, dpi=min(dpi, max(40, int(math.floor(12000 / max(height, 1))))))
        written.append(path)
    return written
