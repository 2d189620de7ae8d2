"""The benchmark's summary from its cells: per task and overall, each method's test accuracy
(mean and 95% Student-t interval over seeds), parameters added per task, FLOPs per example and
wall time; quality and parameter ratios against fine-tuning; multipath against singlepath;
and a one-line verdict on each claim the papers make, against the goal they set.

Pure (no torch, no files): :mod:`munet.benchmark.report` writes it out.
"""

from __future__ import annotations

import math
import statistics
from typing import Any

from munet.benchmark.plan import BASELINE, Settings
from munet.benchmark.stats import paired_ratio, t_interval

# The claims the benchmark measures and the goals their papers set (docs/benchmark.md): µNet
# (arXiv 2205.10937), the system at least fine-tuning's test accuracy with at most half its
# parameters added per task; the multipath paper (arXiv 2302.02721), a task's multipath path
# at least its singlepath path's test accuracy.
SYSTEM_QUALITY_GOAL = 1.0  # system / fine-tuning mean test accuracy, at least
SYSTEM_PARAMS_GOAL = 0.5  # system / fine-tuning parameters added per task, at most
MULTIPATH_QUALITY_GOAL = 1.0  # multipath / singlepath test accuracy, at least


def _cells(cells: dict, method: str, task: str, seeds: Any) -> list[dict]:
    return [cells[(method, task, seed)] for seed in seeds]


def _mean(values: list[float]) -> float:
    return statistics.fmean(values) if values else float("nan")


def method_summary(settings: Settings, cells: dict, method: str) -> dict[str, Any]:
    """One method: per task and overall."""
    tasks: dict[str, Any] = {}
    for task in settings.tasks:
        rows = _cells(cells, method, task, settings.seeds)
        entry = {
            "test_quality": t_interval([r["test_quality"] for r in rows]).to_dict(),
            "validation_quality": _mean([r["quality"] for r in rows if _finite(r["quality"])]),
            "params_added": _mean([r["params_added"] for r in rows]),
            "flops": _mean([r["flops"] for r in rows]),
            "seconds": _mean([r.get("seconds", float("nan")) for r in rows]),
            "cpu_seconds": _mean([r.get("cpu_seconds", float("nan")) for r in rows]),
            "steps": _mean([r.get("steps", float("nan")) for r in rows]),
        }
        if method == "system":
            entry["accounted_params"] = _mean([r["accounted_params"] for r in rows])
            entry["multipath_models"] = sum(r["model"] == "multipath" for r in rows)
        tasks[task] = entry
    per_seed = [
        _mean([cells[(method, task, seed)]["test_quality"] for task in settings.tasks])
        for seed in settings.seeds
    ]
    overall = {
        "test_quality": t_interval(per_seed).to_dict(),
        "params_added_per_task": _mean([t["params_added"] for t in tasks.values()]),
        "flops": _mean([t["flops"] for t in tasks.values()]),
        "seconds_per_cell": _mean([t["seconds"] for t in tasks.values()]),
        "cpu_seconds_total": sum(
            cells[(method, task, seed)].get("cpu_seconds", 0.0)
            for task in settings.tasks
            for seed in settings.seeds
        ),
        "seconds_total": sum(
            cells[(method, task, seed)].get("seconds", 0.0)
            for task in settings.tasks
            for seed in settings.seeds
        ),
    }
    if method == "system":
        overall["accounted_params_per_task"] = _mean(
            [t["accounted_params"] for t in tasks.values()]
        )
    return {"tasks": tasks, "overall": overall}


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)


def ratios_against_baseline(settings: Settings, cells: dict) -> list[dict[str, Any]]:
    """Each method against fine-tuning: quality (per seed: the method's mean test accuracy
    over tasks / fine-tuning's, paired, averaged with a 95% interval), the same on the
    validation splits (what choices between roots or settings read; None where a cell has no
    finite validation score) and parameters (mean parameters added per task / fine-tuning's,
    and per seed, whose spread says how far one run's figure can be trusted). Empty without
    fine-tuning."""
    if BASELINE not in settings.methods:
        return []
    out = []

    def seed_mean(method: str, seed: int, key: str = "test_quality") -> float:
        return _mean([cells[(method, task, seed)][key] for task in settings.tasks])

    def params(method: str, seeds: Any = settings.seeds) -> float:
        return _mean([cells[(method, t, s)]["params_added"]
                      for t in settings.tasks for s in seeds])  # fmt: skip

    for method in settings.methods:
        if method == BASELINE:
            continue
        quality = paired_ratio(
            [seed_mean(method, s) for s in settings.seeds],
            [seed_mean(BASELINE, s) for s in settings.seeds],
        )
        validation = _safe_ratio(
            [seed_mean(method, s, "quality") for s in settings.seeds],
            [seed_mean(BASELINE, s, "quality") for s in settings.seeds],
        )
        out.append(
            {
                "method": method,
                "against": BASELINE,
                "quality": quality.to_dict(),
                "validation_quality": validation,
                "params": params(method) / params(BASELINE),
                "params_per_seed": [
                    params(method, [s]) / params(BASELINE, [s]) for s in settings.seeds
                ],
            }
        )
    return out


def multipath_vs_singlepath(settings: Settings, cells: dict) -> dict[str, Any] | None:
    """The system's multipath path against its singlepath path per task, test accuracy paired
    over seeds (None without the system)."""
    if "system" not in settings.methods:
        return None
    tasks = {}
    every_multi, every_single = [], []
    for task in settings.tasks:
        rows = _cells(cells, "system", task, settings.seeds)
        multi = [r["multipath"]["test_quality"] for r in rows]
        single = [r["singlepath"]["test_quality"] for r in rows]
        every_multi += multi
        every_single += single
        tasks[task] = {
            "multipath": _mean(multi),
            "singlepath": _mean(single),
            "ratio": _safe_ratio(multi, single),
            "multipath_better": sum(m > s for m, s in zip(multi, single, strict=True)),
            "seeds": len(rows),
        }
    return {"tasks": tasks, "ratio": _safe_ratio(every_multi, every_single)}


def _safe_ratio(numerators: list[float], denominators: list[float]) -> dict | None:
    try:
        return paired_ratio(numerators, denominators).to_dict()
    except ValueError:
        return None


def summarize(settings: Settings, cells: dict, budgets: dict[str, Any]) -> dict[str, Any]:
    """Everything results.json holds (but the cells)."""
    return {
        "settings": settings.to_dict(),
        "budgets": budgets,
        "methods": {m: method_summary(settings, cells, m) for m in settings.methods},
        "ratios": ratios_against_baseline(settings, cells),
        "multipath_vs_singlepath": multipath_vs_singlepath(settings, cells),
    }


def ratio_lines(summary: dict[str, Any]) -> list[str]:
    """The ``ratio:`` lines: each method against fine-tuning, then multipath vs singlepath."""
    lines = []
    for ratio in summary["ratios"]:
        quality = ratio["quality"]
        interval = f" ± {quality['ci95']:.3f}" if quality["ci95"] is not None else ""
        lines.append(
            f"ratio: {ratio['method']}/{ratio['against']} quality {quality['mean']:.3f}"
            f"{interval} (mean test accuracy over tasks, paired over {quality['n']} seeds)"
        )
        validation = ratio.get("validation_quality")
        if validation is not None:
            interval = f" ± {validation['ci95']:.3f}" if validation["ci95"] is not None else ""
            lines.append(
                f"ratio: {ratio['method']}/{ratio['against']} validation quality "
                f"{validation['mean']:.3f}{interval} (mean validation accuracy over tasks, "
                f"paired over {validation['n']} seeds: the split to choose on)"
            )
        per_seed = ratio.get("params_per_seed") or []
        spread = (
            f"; per seed {min(per_seed):.3f} to {max(per_seed):.3f}" if len(per_seed) > 1 else ""
        )
        lines.append(
            f"ratio: {ratio['method']}/{ratio['against']} params {ratio['params']:.3f} "
            f"(parameters added per task{spread})"
        )
    pairs = summary.get("multipath_vs_singlepath")
    if pairs:
        for task, entry in pairs["tasks"].items():
            if entry["ratio"] is None:
                continue
            lines.append(
                f"ratio: multipath/singlepath quality {task} {entry['ratio']['mean']:.3f} "
                f"({entry['multipath']:.3f} vs {entry['singlepath']:.3f}; multipath better in "
                f"{entry['multipath_better']}/{entry['seeds']} seeds)"
            )
        if pairs["ratio"] is not None:
            lines.append(
                f"ratio: multipath/singlepath quality {pairs['ratio']['mean']:.3f} "
                "(every task and seed, paired)"
            )
    return lines


def verdict_lines(summary: dict[str, Any]) -> list[str]:
    """One ``verdict:`` line per claim the run measures, readable at a glance: the ratios
    against the goal and whether the claim is met. Judged on the means; where the goal lies
    within a quality ratio's 95% interval the line says so (more seeds would tell). A quick
    run, or a system given more steps than the others, says that too."""
    settings = summary.get("settings") or {}
    caveats = []
    budget = int(settings.get("system_budget", 1) or 1)
    if budget > 1:
        caveats.append(f"the system had {budget} times the others' train steps")
    if settings.get("quick"):
        caveats.append("quick run: a smoke test, not a measurement")
    caveat = f" [{'; '.join(caveats)}]" if caveats else ""
    lines = []
    for ratio in summary.get("ratios", []):
        if ratio["method"] != "system":
            continue
        quality, params = ratio["quality"], ratio["params"]
        quality_met = quality["mean"] >= SYSTEM_QUALITY_GOAL
        params_met = params <= SYSTEM_PARAMS_GOAL
        misses = [
            *([] if quality_met else [f"quality below {SYSTEM_QUALITY_GOAL:.1f}"]),
            *([] if params_met else [f"params above {SYSTEM_PARAMS_GOAL:.1f}"]),
        ]
        lines.append(
            f"verdict: system vs {ratio['against']}: {_ratio_text(quality)} of the quality at "
            f"{params:.3f} of the parameters: "
            + ("claim met" if not misses else f"claim not met, {' and '.join(misses)}")
            + f" (goal: quality >= {SYSTEM_QUALITY_GOAL:.1f} at params <= "
            f"{SYSTEM_PARAMS_GOAL:.1f}{_within(quality, SYSTEM_QUALITY_GOAL)})"
            + caveat
        )
    pairs = summary.get("multipath_vs_singlepath")
    if pairs and pairs.get("ratio") is not None:
        ratio = pairs["ratio"]
        better = sum(t["multipath_better"] for t in pairs["tasks"].values())
        count = sum(t["seeds"] for t in pairs["tasks"].values())
        met = ratio["mean"] >= MULTIPATH_QUALITY_GOAL
        lines.append(
            f"verdict: multipath vs singlepath: {_ratio_text(ratio)} of the quality, better in "
            f"{better} of {count} task-seed pairs: "
            + ("claim met" if met else f"claim not met, quality below {MULTIPATH_QUALITY_GOAL:.1f}")
            + f" (goal: quality >= {MULTIPATH_QUALITY_GOAL:.1f}"
            f"{_within(ratio, MULTIPATH_QUALITY_GOAL)})"
            + caveat
        )
    return lines


def _ratio_text(interval: dict[str, Any]) -> str:
    """``0.908 ± 0.082`` (the mean alone without an interval)."""
    half = interval.get("ci95")
    return f"{interval['mean']:.3f}" + (f" ± {half:.3f}" if half is not None else "")


def _within(interval: dict[str, Any], goal: float) -> str:
    """A note when the goal lies inside the interval: the means decide, the seeds do not."""
    half = interval.get("ci95")
    if half is None or not interval["mean"] - half <= goal <= interval["mean"] + half:
        return ""
    return f"; {goal:.1f} lies within the quality's 95% interval"
