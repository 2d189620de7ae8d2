"""Table, ratios and plot of benchmarks/system_vs_independent.py, from its per-seed results (a
library module: the script prints the `quality ratio:` and `params ratio:` lines).

A per-seed result is ``{"seed", "settings", "methods": {method: {"tasks": {task:
{"test_quality", "params_added", ...}}, "total_params", "wall_s"}}}``.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

METHODS = ("system", "independent", "linear_probe", "random_search")
BASELINES = ("independent", "linear_probe", "random_search")


def methods_of(results: Sequence[dict], names: Sequence[str] = METHODS) -> list[str]:
    """The methods of ``names`` the results hold (older results have no linear probe; a run
    with ``--search-trials 0`` has no random search)."""
    return [m for m in names if m in results[0]["methods"]]


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
    """(quality ratio, params ratio): the system's mean test accuracy over the best
    baseline's, and the system's total parameters over the independent models' (all means over
    seeds)."""
    system = statistics.fmean(mean_accuracy(r, "system") for r in results)
    best = max(
        statistics.fmean(mean_accuracy(r, m) for r in results)
        for m in methods_of(results, BASELINES)
    )
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
    methods = methods_of(results)
    width = 26
    lines = [
        f"budget: {budget_text(settings)} train steps per task and method; seeds {seeds}; "
        f"root {settings.get('root', 'random_init')}",
        "test accuracy, mean ± sd over seeds (parameters added for the task, mean)",
        f"{'task':<16}" + "".join(f"{m:<{width}}" for m in methods),
    ]
    for task in tasks:
        cells = []
        for method in methods:
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
        lines.append(f"{label:<16}" + "".join(f"{cell(m):<{width}}" for m in methods))
    system = [r["methods"]["system"] for r in results]
    multipath = sum(t["model"] == "multipath" for s in system for t in s["tasks"].values())
    root = statistics.fmean(s["root_params_held"] for s in system)
    lines.append(
        f"system: {multipath} of {len(tasks) * len(results)} task models are multipath; "
        f"root components held (shared, counted once): {root:,.0f} params"
    )
    return "\n".join(lines)


def multipath_vs_singlepath(results: Sequence[dict]) -> tuple[list[str], float | None]:
    """Each task's multipath model against the best singlepath path of the same system,
    paired over seeds (test accuracy): the lines to print and the ratio of the means over
    tasks and seeds (None when no result ran a multipath stage)."""
    pairs: dict[str, list[tuple[float, float]]] = {}
    for result in results:
        for task, info in result["methods"]["system"]["tasks"].items():
            if "multipath_test_quality" in info:
                pair = (info["multipath_test_quality"], info["singlepath_test_quality"])
                pairs.setdefault(task, []).append(pair)
    if not pairs:
        return [], None
    lines = ["multipath model against the best singlepath path, test accuracy paired over seeds:"]
    for task, task_pairs in pairs.items():
        multi, single = (statistics.fmean(p[i] for p in task_pairs) for i in (0, 1))
        wins = sum(m > s for m, s in task_pairs)
        lines.append(
            f"  {task:<16} multipath {multi:.3f} singlepath {single:.3f} "
            f"(difference {multi - single:+.3f}; multipath better in {wins}/{len(task_pairs)})"
        )
    every = [p for task_pairs in pairs.values() for p in task_pairs]
    ratio = statistics.fmean(m for m, _ in every) / statistics.fmean(s for _, s in every)
    return lines, ratio


def write_plot(results: Sequence[dict], filename: str) -> None:
    """Test accuracy against parameters added, one point per method and task (mean over
    seeds, bars: standard deviation)."""
    import os

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = results[0]["settings"]["tasks"]
    markers = {"system": "o", "independent": "s", "linear_probe": "D", "random_search": "^"}
    fig, ax = plt.subplots(figsize=(8, 5.5))
    for method in methods_of(results):
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
    root = results[0]["settings"].get("root", "random_init")
    ax.set_title(
        f"VitCpu, root {os.path.basename(root)}, {budget} train steps per task, "
        f"{len(results)} seeds: "
        f"quality ratio {quality:.3f}, params ratio {params:.3f}",
        fontsize=10,
    )
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(filename)), exist_ok=True)
    fig.savefig(filename, dpi=110)
    plt.close(fig)
