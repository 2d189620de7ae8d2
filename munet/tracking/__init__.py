"""Experiment tracking: an agent's learning curves, generations and cycles in TensorBoard or
Weights & Biases (`munet run/launch/demo --log-dir DIR`, `--wandb`).

One small interface, `Tracker`, called by the agent cycle (munet.agents.cycle) when a path is
trained, a generation ends and a cycle ends; the backends (`TensorBoardTracker`,
`WandbTracker`) import their optional package only when asked, with an error naming the extra.
`TrackingSettings` says which backends to open and is picklable, so worker processes (the demo's
pool, `munet launch`'s Ray workers) open their own trackers.

Public: `Tracker`, `NullTracker`, `MultiTracker`, `TrackingSettings`, `PathCurve`,
`GenerationPoint`, `CyclePoint`, `tag_prefix`.
"""

from munet.tracking.base import (
    CyclePoint,
    GenerationPoint,
    MultiTracker,
    NullTracker,
    PathCurve,
    Tracker,
    tag_prefix,
)
from munet.tracking.settings import TrackingSettings

__all__ = [
    "CyclePoint",
    "GenerationPoint",
    "MultiTracker",
    "NullTracker",
    "PathCurve",
    "Tracker",
    "TrackingSettings",
    "tag_prefix",
]
