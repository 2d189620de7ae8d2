"""The agent's tracking events (munet.tracking) built from its paths: one function per event,
called by the agent cycle where the event is known (munet.agents.cycle)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from typing import Any

from munet.system import Path
from munet.tracking import CyclePoint, GenerationPoint, PathCurve, Tracker, TrackingSettings


def open_tracker(
    tracking: Tracker | TrackingSettings | None, agent_id: str, config: dict[str, Any]
) -> tuple[Tracker | None, bool]:
    """The tracker of a run, and whether the run owns it (opened from settings: the run
    closes it; a `Tracker` given by the caller stays open)."""
    if tracking is None:
        return None, False
    if isinstance(tracking, TrackingSettings):
        return (tracking.open(agent_id, config), True) if tracking.enabled else (None, False)
    return tracking, False


def _json_list(value: Any) -> list:
    return json.loads(value) if isinstance(value, str) and value else []


def _float(value: Any) -> float:
    return float("nan") if value is None else float(value)


def path_curve(path: Path, score: float) -> PathCurve:
    """A trained path's learning curve (its ``eval_steps``, ``train_losses``, ``evals``)."""
    metrics = path.metrics
    return PathCurve(
        agent_id=path.agent_id,
        task=path.task_name,
        path_id=int(path.id),
        cycle=int(metrics.get("cycle_id", 0)),
        generation=int(metrics.get("generation_id", 0)),
        eval_steps=_json_list(metrics.get("eval_steps")),
        train_losses=_json_list(metrics.get("train_losses")),
        evals=_json_list(metrics.get("evals")),
        quality=_float(metrics.get("quality")),
        score=score,
        improved=bool(metrics.get("improved")),
        hparams=dict(path.hparams),
    )


def track_generation(
    tracker: Tracker,
    paths: Sequence[Path],
    best: Path | None,
    score: Callable[[Path], float],
    cycle: int,
    generation: int,
    generations_per_cycle: int,
) -> None:
    """Sends a finished generation: each trained path's curve, then the agent's ``best`` path
    so far and how many of ``paths`` joined the population."""
    for path in paths:
        tracker.path_trained(path_curve(path, score(path)))
    if not paths:
        return
    tracker.generation_done(
        GenerationPoint(
            agent_id=paths[0].agent_id,
            task=paths[0].task_name,
            cycle=cycle,
            generation=generation,
            index=cycle * generations_per_cycle + generation,
            best_quality=_float(best.metrics.get("quality")) if best is not None else math.nan,
            best_score=score(best) if best is not None else math.nan,
            num_improved=sum(bool(p.metrics.get("improved")) for p in paths),
        )
    )


def cycle_point(best: Path, best_score: float, cycle: int) -> CyclePoint:
    """The agent after ``cycle`` completed cycles: its best path and that path's test quality."""
    return CyclePoint(
        agent_id=best.agent_id,
        task=best.task_name,
        cycle=cycle,
        best_path_id=int(best.id),
        best_quality=_float(best.metrics.get("quality")),
        best_score=best_score,
        test_quality=_float(best.metrics.get("test_quality")),
    )
