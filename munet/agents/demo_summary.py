"""What ``munet demo`` tells at its end about sharing: how many sampled paths took other tasks'
components, what each task's best path reuses, and whether multipath beat singlepath."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from munet.agents.reports import RunReport
from munet.system import SystemStore


def cross_task_reuse(store: SystemStore, agent_id: str) -> dict[str, int]:
    """How many of the agent's sampled paths (its whole history) took components shared or
    cloned from each other non-root agent; the count of sampled paths is under key ``""``."""
    counts: dict[str, int] = {"": 0}
    for row in store.read_path_history(agent_id):
        counts[""] += 1
        sources = set()
        for group in (row.get("metrics.reuse") or "").split("; "):
            verb, _, rest = group.partition(" from ")
            source = rest.partition(":")[0]
            if verb in ("shared", "cloned") and source and source != agent_id:
                if "~root_model~" not in source:
                    sources.add(source)
        for source in sources:
            counts[source] = counts.get(source, 0) + 1
    return counts


def echo_sharing(
    store: SystemStore,
    agent_ids: Mapping[str, str],
    reports: Mapping[str, RunReport],
    echo: Callable[[str], None],
) -> None:
    """Per task (``agent_ids``: task -> its singlepath agent): the sampled paths that took
    components of other tasks' paths, then what the best path (``reports``) reuses."""
    echo("Reuse across tasks (sampled paths that took components of other tasks' paths):")
    for task, agent_id in agent_ids.items():
        counts = cross_task_reuse(store, agent_id)
        sampled = counts.pop("", 0)
        sources = ", ".join(f"{source} ({n})" for source, n in sorted(counts.items()))
        echo(f"  {task:<14} {sampled} paths sampled; from: {sources or '(none)'}")
    echo("")
    echo("Components each task's best path reuses from the system:")
    for task, report in reports.items():
        best = report.best
        if best is None:
            continue
        owners = sorted({c.agent_id for c in best.comps_only() if c.agent_id != best.agent_id})
        echo(f"  {task:<14} test quality {best.metrics.get('test_quality', float('nan')):.4f}")
        echo(f"    shares components of: {', '.join(owners) if owners else '(none)'}")
        echo(f"    sampled as: {best.metrics.get('reuse', '')}")


def echo_multipath_comparison(
    comparison: Mapping[str, Mapping[str, Any]], multipath_preset: str, echo: Callable[[str], None]
) -> None:
    """Per task of the multipath stage: its test quality against the best singlepath path's."""
    echo("")
    echo(f"Multipath stage ({multipath_preset} on the weakest tasks), test quality:")
    for task, result in comparison.items():
        verdict = "beat" if result["multipath"] > result["singlepath"] else "did not beat"
        echo(
            f"  {task:<14} multipath {result['multipath']:.4f} {verdict} singlepath "
            f"{result['singlepath']:.4f}; routes through {result['paths']}"
        )
