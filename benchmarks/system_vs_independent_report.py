"""Table, ratios and plot of benchmarks/system_vs_independent.py, from its per-seed results (a
library module: the script prints the `quality ratio:` and `params ratio:` lines).

A per-seed result is ``{"seed", "settings", "methods": {method: {"tasks": {task:
{"test_quality", "params_added", ...}}, "total_params", "wall_s"}}}``.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

METHODS = ("system", "independent", "random_search")
BASELINES = ("independent", "random_search")


def check_compatible(results: Sequence[dict]) -> None:
    """Raises SystemExit when the results are not of one experiment (other settings, a seed
    twice, no result)."""
    if not results:
        raise SystemExit("no results to combine")
    settings = results[0]["settings"]
    for result in results[1:]:
        if result["settings"] != settings:
            raise SystemExit(
                f"seed {result['seed']} ran with other settings than seed {results[0]['seed']}: "
                f"{result['settings']} != {settings}"
            )
    seeds = [r["seed"] for r in results]
    if len(set(seeds)) != len(seeds):
        raise SystemExit(f"a seed appears twice in the results: {seeds}")


def mean_sd(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (0 for a single value)."""
    values = list(values)
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


def task_accuracies(results: Sequence[dict], method: str, task: str) -> list[float]:
    return [r["methods"][method]["tasks"][task]["test_quality"] for r in results]


def mean_accuracy(result: dict, method: str) -> float:
    """A seed's test accuracy of ``method``, averaged over the tasks."""
    return statistics.fmean(t["test_quality"] for t in result["methods"][method]["tasks"].values())


def ratios(results: Sequence[dict]) -> tuple[float, float]:
    """(quality ratio, params ratio) as the issue defines them: the system's mean test accuracy
    over the best baseline's, and the system's total parameters over the independent models'
    (all means over seeds)."""
    system = statistics.fmean(mean_accuracy(r, "system") for r in results)
    best = max(statistics.fmean(mean_accuracy(r, m) for r in results) for m in BASELINES)
    params = statistics.fmean(r["methods"]["system"]["total_params"] for r in results)
    independent = statistics.fmean(r["methods"]["independent"]["total_params"] for r in results)
    return system / best, params / independent


def budget_text(settings: dict) -> str:
    """The budget of train steps per task: one number, or one per task when they differ."""
    budgets = settings["budget_steps_per_task"]
    if len(set(budgets.values())) == 1:
        return str(next(iter(budgets.values())))
    return ", ".join(f"{task} {steps}" for task, steps in budgets.items())


def format_table(results: Sequence[dict]) -> str:
    settings = results[0]["settings"]
    tasks = settings["tasks"]
    seeds = ", ".join(str(r["seed"]) for r in results)
    width = 26
    lines = [
        f"budget: {budget_text(settings)} train steps per task and method; seeds {seeds}",
        "test accuracy, mean ± sd over seeds (parameters added for the task, mean)",
        f"{'task':<16}" + "".join(f"{m:<{width}}" for m in METHODS),
    ]
    for task in tasks:
        cells = []
        for method in METHODS:
            mean, sd = mean_sd(task_accuracies(results, method, task))
            added = statistics.fmean(
                r["methods"][method]["tasks"][task]["params_added"] for r in results
            )
            cells.append(f"{mean:.3f}±{sd:.3f} ({added:,.0f})")
        lines.append(f"{task:<16}" + "".join(f"{c:<{width}}" for c in cells))
    rows = {
        "mean accuracy": lambda m: "{:.3f}±{:.3f}".format(
            *mean_sd([mean_accuracy(r, m) for r in results])
        ),
        "total params": lambda m: "{:,.0f}".format(
            statistics.fmean(r["methods"][m]["total_params"] for r in results)
        ),
        "wall time (s)": lambda m: "{:.0f}".format(
            statistics.fmean(r["methods"][m]["wall_s"] for r in results)
        ),
    }
    for label, cell in rows.items():
        lines.append(f"{label:<16}" + "".join(f"{cell(m):<{width}}" for m in METHODS))
    system = [r["methods"]["system"] for r in results]
    multipath = sum(t["model"] == "multipath" for s in system for t in s["tasks"].values())
    root = statistics.fmean(s["root_params_held"] for s in system)
    lines.append(
        f"system: {multipath} of {len(tasks) * len(results)} task models are multipath; "
        f"root components held (shared, counted once): {root:,.0f} params"
    )
    return "\n".join(lines)


def write_plot(results: Sequence[dict], filename: str) -> None:
    """Test accuracy against parameters added, one point per method and task (mean over
    seeds, bars: standard deviation)."""
    import os

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = results[0]["settings"]["tasks"]
    markers = {"system": "o", "independent": "s", "random_search": "^"}
    fig, ax = plt.subplots(figsize=(8, 5.5))
    for method in METHODS:
        xs, ys, errs = [], [], []
        for task in tasks:
            mean, sd = mean_sd(task_accuracies(results, method, task))
            added = statistics.fmean(
                r["methods"][method]["tasks"][task]["params_added"] for r in results
            )
            xs.append(max(added, 1.0))  # A task that adds nothing sits at 1 on the log axis.
            ys.append(mean)
            errs.append(sd)
        ax.errorbar(xs, ys, yerr=errs, fmt=markers[method], label=method, capsize=3, alpha=0.85)
        for x, y, task in zip(xs, ys, tasks, strict=True):
            ax.annotate(
                task.replace("synth/", ""),
                (x, y),
                fontsize=7,
                xytext=(4, 3),
                textcoords="offset points",
            )
    quality, params = ratios(results)
    ax.set_xscale("log")
    ax.set_xlabel("parameters added for the task (log scale)")
    ax.set_ylabel("test accuracy")
    ax.set_ylim(0, 1.02)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right")
    budget = budget_text(results[0]["settings"])
    ax.set_title(
        f"VitCpu, {budget} train steps per task, {len(results)} seeds: "
        f"quality ratio {quality:.3f}, params ratio {params:.3f}",
        fontsize=10,
    )
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(filename)), exist_ok=True)
    fig.savefig(filename, dpi=110)
    plt.close(fig)
