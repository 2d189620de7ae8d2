"""The tracking interface and the events it carries (plain values: no agent objects)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True)
class PathCurve:
    """One trained path: its learning curve and hparams.

    Attributes:
        agent_id, task: whose path.
        path_id: the path's id within its agent (tags say ``path_<id>``).
        cycle, generation: when it was sampled (0-based).
        eval_steps: the train step of each validation.
        train_losses: the mean train loss since the previous validation, one per validation.
        evals: the validation quality of each validation.
        quality, score: its best validation quality and its score.
        improved: it beat its parent and joined the population.
        hparams: its hyperparameters.
    """

    agent_id: str
    task: str
    path_id: int
    cycle: int
    generation: int
    eval_steps: Sequence[int]
    train_losses: Sequence[float]
    evals: Sequence[float]
    quality: float
    score: float
    improved: bool
    hparams: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class GenerationPoint:
    """The agent after one generation. ``index`` counts generations over the whole run
    (cycle * generations per cycle + generation), the x axis of the generation curves."""

    agent_id: str
    task: str
    cycle: int
    generation: int
    index: int
    best_quality: float
    best_score: float
    num_improved: int


@dataclass(frozen=True)
class CyclePoint:
    """The agent after a cycle (``cycle`` is the number of completed cycles, 1-based)."""

    agent_id: str
    task: str
    cycle: int
    best_path_id: int
    best_quality: float
    best_score: float
    test_quality: float


@runtime_checkable
class Tracker(Protocol):
    """Receives an agent's events; a backend writes them somewhere."""

    def path_trained(self, curve: PathCurve) -> None: ...

    def generation_done(self, point: GenerationPoint) -> None: ...

    def cycle_done(self, point: CyclePoint) -> None: ...

    def close(self) -> None: ...


class NullTracker:
    """Tracks nothing (the default)."""

    def path_trained(self, curve: PathCurve) -> None:
        pass

    def generation_done(self, point: GenerationPoint) -> None:
        pass

    def cycle_done(self, point: CyclePoint) -> None:
        pass

    def close(self) -> None:
        pass


class MultiTracker:
    """Sends every event to each of ``trackers`` (e.g. TensorBoard and W&B together)."""

    def __init__(self, trackers: Sequence[Tracker]) -> None:
        self.trackers = list(trackers)

    def path_trained(self, curve: PathCurve) -> None:
        for tracker in self.trackers:
            tracker.path_trained(curve)

    def generation_done(self, point: GenerationPoint) -> None:
        for tracker in self.trackers:
            tracker.generation_done(point)

    def cycle_done(self, point: CyclePoint) -> None:
        for tracker in self.trackers:
            tracker.cycle_done(point)

    def close(self) -> None:
        for tracker in self.trackers:
            tracker.close()


def tag_prefix(task: str) -> str:
    """The tag prefix of a task (its name; ``synth/shape`` keeps its slash)."""
    return task


def path_run(curve: PathCurve) -> str:
    """``paths/TASK/path_ID``: a path's TensorBoard sub-run (under its agent's log dir)."""
    return f"paths/{tag_prefix(curve.task)}/path_{curve.path_id}"


def path_tag(curve: PathCurve) -> str:
    """``TASK/path_ID``: the prefix of a path's tags."""
    return f"{tag_prefix(curve.task)}/path_{curve.path_id}"


def scalar_hparams(hparams: Mapping[str, Any]) -> dict[str, float | int | str | bool]:
    """Hparams as scalars a tracker accepts: lists and dicts become JSON strings; mutation
    probabilities (``_mu_...``) are left out."""
    out: dict[str, float | int | str | bool] = {}
    for key, value in sorted(hparams.items()):
        if key.startswith("_mu_"):
            continue
        if isinstance(value, (bool, int, str)):
            out[key] = value
        elif isinstance(value, float):
            out[key] = value if math.isfinite(value) else str(value)
        else:
            out[key] = json.dumps(value, sort_keys=True, default=str)
    return out
