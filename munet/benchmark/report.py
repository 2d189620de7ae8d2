"""Writes a benchmark's summary: ``results.json``, ``results.md`` (a Markdown table) and
``results.png`` (test accuracy against parameters added, one panel per task, log x: the
shape of the µNet paper's figures)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from munet.benchmark.cells import write_json_atomic
from munet.benchmark.summary import ratio_lines, verdict_lines

MARKERS = {"system": "o", "finetune": "s", "linear": "D", "adapters": "^", "cnn": "v"}


def _params_text(value: float) -> str:
    if not math.isfinite(value):
        return "-"
    if value >= 1e6:
        return f"{value / 1e6:.2f}M"
    if value >= 1e3:
        return f"{value / 1e3:.1f}k"
    return f"{value:.0f}"


def _interval_text(entry: dict[str, Any]) -> str:
    half = entry.get("ci95")
    return f"{entry['mean']:.3f}" if half is None else f"{entry['mean']:.3f} ± {half:.3f}"


def markdown(summary: dict[str, Any]) -> str:
    """The Markdown report: a table of test accuracy (params added) per task and method."""
    settings = summary["settings"]
    methods = list(summary["methods"])
    seeds = ", ".join(map(str, settings["seeds"]))
    steps = sorted({b["steps"] for b in summary["budgets"].values()})
    system_budget = int(settings.get("system_budget", 1))
    unequal = (
        f" (the system: {system_budget} times that, --system-budget {system_budget})"
        if system_budget > 1 and "system" in methods
        else ""
    )
    lines = [
        "# munet benchmark"
        + (" (quick: CI-sized, not the full budget)" if settings["quick"] else ""),  # fmt: skip
        "",
        f"Preset {settings['preset']}, root {settings['root']}; "
        f"{'/'.join(map(str, steps))} train steps per task and method{unequal}; "
        f"seeds {seeds}.",
        "Cells: test accuracy, mean ± 95% interval (Student t over seeds), and parameters "
        "added for the task (mean).",
        "",
        "| task | " + " | ".join(methods) + " |",
        "|---|" + "---|" * len(methods),
    ]
    for task in settings["tasks"]:
        cells = []
        for method in methods:
            entry = summary["methods"][method]["tasks"][task]
            cells.append(
                f"{_interval_text(entry['test_quality'])} ({_params_text(entry['params_added'])})"
            )
        lines.append(f"| {task} | " + " | ".join(cells) + " |")
    overall = {m: summary["methods"][m]["overall"] for m in methods}
    rows = {
        "**mean accuracy**": lambda m: _interval_text(overall[m]["test_quality"]),
        "params added per task": lambda m: _params_text(overall[m]["params_added_per_task"]),
        "FLOPs per example": lambda m: _params_text(overall[m]["flops"]),
        "wall time per cell (s)": lambda m: f"{overall[m]['seconds_per_cell']:.0f}",
        "CPU time, all cells (s)": lambda m: f"{overall[m]['cpu_seconds_total']:.0f}",
    }
    for label, cell in rows.items():
        lines.append(f"| {label} | " + " | ".join(cell(m) for m in methods) + " |")
    if "system" in overall:
        lines += [
            "",
            f"System accounted parameters per task (the scorer's count, each shared component "
            f"divided by the agents holding it): "
            f"{_params_text(overall['system']['accounted_params_per_task'])}.",
        ]
    lines += ["", "```", *ratio_lines(summary), "```", ""]
    verdicts = verdict_lines(summary)
    if verdicts:  # Last: what a reader looks for first.
        lines += ["```", *verdicts, "```", ""]
    return "\n".join(lines)


def write_plot(summary: dict[str, Any], filename: str | Path) -> None:
    """Test accuracy against parameters added (log x), one panel per task plus the mean over
    tasks; one point per method (mean over seeds, bars: 95% interval)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = list(summary["settings"]["tasks"])
    panels = [*tasks, "mean over tasks"]
    columns = min(4, len(panels))
    rows = math.ceil(len(panels) / columns)
    fig, axes = plt.subplots(rows, columns, figsize=(3.6 * columns, 3.0 * rows), squeeze=False)
    for index, panel in enumerate(panels):
        ax = axes[index // columns][index % columns]
        for method, data in summary["methods"].items():
            if panel in data["tasks"]:
                entry = data["tasks"][panel]
                quality, params = entry["test_quality"], entry["params_added"]
            else:
                quality, params = data["overall"]["test_quality"], data["overall"][
                    "params_added_per_task"]  # fmt: skip
            error = quality["ci95"] if quality["ci95"] is not None else 0.0
            ax.errorbar([max(params, 1.0)], [quality["mean"]], yerr=[error],
                        fmt=MARKERS.get(method, "x"), capsize=3, label=method)  # fmt: skip
        ax.set_xscale("log")
        ax.set_ylim(0, 1.02)
        ax.set_title(panel, fontsize=9)
        ax.grid(True, alpha=0.3)
        ax.tick_params(labelsize=7)
        if index % columns == 0:
            ax.set_ylabel("test accuracy", fontsize=8)
        if index // columns == rows - 1:
            ax.set_xlabel("params added per task", fontsize=8)
    for index in range(len(panels), rows * columns):
        axes[index // columns][index % columns].axis("off")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8)
    settings = summary["settings"]
    fig.suptitle(
        f"munet benchmark{' (quick)' if settings['quick'] else ''}: {settings['preset']}, "
        f"{len(settings['seeds'])} seeds",
        fontsize=10,
    )
    fig.tight_layout(rect=(0, 0.05, 1, 0.96))
    Path(filename).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(filename, dpi=100)
    plt.close(fig)


def write_report(summary: dict[str, Any], cells: list[dict], out: str | Path) -> dict[str, Path]:
    """Writes results.json (the summary and every cell), results.md and results.png."""
    out = Path(out)
    files = {"json": out / "results.json", "md": out / "results.md", "png": out / "results.png"}
    write_json_atomic(files["json"], {**summary, "cells": cells})
    text = markdown(summary)
    tmp = files["md"].with_suffix(".md.tmp")
    tmp.write_text(text)
    tmp.replace(files["md"])
    write_plot(summary, files["png"])
    return files
