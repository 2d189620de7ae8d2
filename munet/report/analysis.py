"""What a researcher reads off a collected system: reference levels, learning curves of the best
path's lineage, the effect of each mutation, and agents grouped by task.

Pure functions of a :class:`~munet.report.collect.SystemView` (no file is read here), shared
by the HTML page and the PNG figures so both show the same numbers.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from munet.report.collect import (
    AgentView,
    Candidate,
    PathView,
    SystemView,
    as_float,
    mutation_name,
)


def task_groups(view: SystemView) -> dict[str, list[AgentView]]:
    """Every task agent by task name (tasks sorted, a task's singlepath agents before its
    multipath ones), so all agents of one task sit together on the page."""
    groups: dict[str, list[AgentView]] = defaultdict(list)
    for agent in view.tasks:
        groups[agent.task_name].append(agent)
    return {task: sorted(groups[task], key=agent_order) for task in sorted(groups)}


def agent_order(agent: AgentView) -> tuple:
    """Sort key within a task: singlepath agents first, then by agent id."""
    return (is_multipath_agent(agent), agent.agent_id)


def is_multipath_agent(agent: AgentView) -> bool:
    """A multipath agent by its config (``singlepath_agent`` set) or its published paths."""
    return bool(agent.config.get("singlepath_agent")) or agent.is_multipath


def num_classes(path: PathView | None) -> int | None:
    """The path's classes from its hparams (``num_classes``); None when not recorded."""
    if path is None:
        return None
    value = path.hparams.get("num_classes")
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    return number if number > 0 else None


def chance_level(agent: AgentView) -> float | None:
    """1 / num_classes of the agent's best path (a uniform guess's accuracy); None if unknown."""
    classes = num_classes(agent.best)
    return None if classes is None else 1.0 / classes


def data_source(agent: AgentView) -> str:
    """Where the task's data came from: the config's ``data`` binding (and split rule), or the
    task name itself for munet's own tasks."""
    data = str(agent.config.get("data") or "")
    split = str(agent.config.get("data_split") or "")
    if not data:
        return f"{agent.task_name} (munet task name)"
    return data + (f" (split rule {split})" if split and split != "default" else "")


# Learning curves -----------------------------------------------------------------------------
@dataclass
class CurveSegment:
    """The training of one path of a lineage: validations at cumulative train steps."""

    path: str  # agent:id
    cycle: int
    generation: int
    steps: list[float]
    qualities: list[float | None]
    losses: list[float | None] | None  # None: the state did not record train losses.
    steps_recorded: bool  # False: steps derived from the config's validation interval.


@dataclass
class LearningCurve:
    """The best path's lineage, oldest ancestor first, as one run over cumulative steps."""

    agent_id: str
    segments: list[CurveSegment] = field(default_factory=list)

    @property
    def has_loss(self) -> bool:
        return any(s.losses is not None for s in self.segments)

    @property
    def steps_recorded(self) -> bool:
        return all(s.steps_recorded for s in self.segments)

    @property
    def total_steps(self) -> float:
        return max((s.steps[-1] for s in self.segments if s.steps), default=0.0)


def validation_interval(config: Mapping[str, Any]) -> int | None:
    """Train steps between validations from a config: ceil(cap / batch size), the cap being
    ``num_train_examples_between_validations_max`` (a task whose train split is smaller
    validates more often: this is an upper bound). None when the config lacks them."""
    try:
        cap = int(config["num_train_examples_between_validations_max"])
        batch = int(config["batch_size"])
    except (KeyError, TypeError, ValueError):
        return None
    return math.ceil(cap / batch) if cap > 0 and batch > 0 else None


def _candidates(view: SystemView) -> dict[tuple[str, int], Candidate]:
    return {(agent.agent_id, c.path_id): c for agent in view.agents.values() for c in agent.history}


def lineage(view: SystemView, agent: AgentView) -> list[Candidate]:
    """The history rows of the agent's best path and its ancestors, oldest first, followed
    across agents (a first parent may be another task's path); stops at a path without a
    history row (the root model)."""
    best = agent.best
    if best is None:
        return []
    rows = _candidates(view)
    chain: list[Candidate] = []
    key: tuple[str, int] | None = (best.agent_id, int(best.full_id.rpartition(":")[2]))
    while key is not None and key in rows and len(chain) < 10_000:
        candidate = rows[key]
        if any(c is candidate for c in chain):
            break
        chain.append(candidate)
        key = candidate.parent
    chain.reverse()
    return chain


def learning_curve(view: SystemView, agent: AgentView) -> LearningCurve:
    """Validation quality (and mean train loss, when recorded) of the best path's lineage
    against cumulative train steps: each path starts where its parent's training ended.

    A row with ``eval_steps`` / ``train_losses`` (one per validation) uses them; an older one
    has ``evals`` only: its steps are the validation number times the config's validation
    interval (:func:`validation_interval`), and it has no loss.
    """
    curve = LearningCurve(agent.agent_id)
    offset = 0.0
    for candidate in lineage(view, agent):
        if not candidate.evals:
            continue
        owner = view.agents.get(candidate.agent_id)
        steps = candidate.eval_steps
        recorded = steps is not None and len(steps) == len(candidate.evals)
        if not recorded:
            interval = validation_interval(owner.config if owner else {}) or 1
            steps = [interval * (i + 1) for i in range(len(candidate.evals))]
        losses = candidate.train_losses
        if losses is not None and len(losses) != len(candidate.evals):
            losses = None
        curve.segments.append(
            CurveSegment(
                f"{candidate.agent_id}:{candidate.path_id}",
                candidate.cycle,
                candidate.generation,
                [offset + s for s in steps],
                list(candidate.evals),
                None if losses is None else list(losses),
                recorded,
            )
        )
        offset += steps[-1]
    return curve


# Mutation effects ----------------------------------------------------------------------------
@dataclass
class MutationEffect:
    """How children in which a mutation fired scored against their parents."""

    name: str
    count: int  # Children with a known score and parent score.
    mean_delta: float  # Mean of child score - parent score.
    mean_quality_delta: float | None
    admitted: int
    forced: bool


def _parent_score(view: SystemView, rows: Mapping, candidate: Candidate) -> tuple:
    """(score, quality) of the candidate's parent, from its history row or published record."""
    if candidate.parent is None:
        return None, None
    row = rows.get(candidate.parent)
    if row is not None:
        return row.score, row.quality
    path = view.paths.get(f"{candidate.parent[0]}:{candidate.parent[1]}")
    if path is None:
        return None, None
    return path.score, as_float(path.metrics.get("quality"))


def mutation_effects(view: SystemView, agents: Iterable[AgentView]) -> list[MutationEffect]:
    """Per mutation, the mean change of score from parent to child over the children it fired
    in (several mutations fire together: this is what came with a mutation, not its isolated
    effect), best first. Only children of a parent of the same task count (a first parent
    from another task was scored on other data); failed children (no score) and children
    whose parent has no score (the root model) are left out. Forced mutations
    (``force_mutations`` of the agent's config, or logged as ``(forced)``) are marked: they
    fire whenever they apply, not by chance (``clone:encoder_norm`` applies when the parent's
    ``encoder_norm`` is another agent's, i.e. mostly to a task's first children, whose
    parents are another task's or the root's and are left out here)."""
    rows = _candidates(view)
    deltas: dict[str, list[float]] = defaultdict(list)
    quality_deltas: dict[str, list[float]] = defaultdict(list)
    admitted: dict[str, int] = defaultdict(int)
    forced: set[str] = set()
    for agent in agents:
        forced.update(str(n) for n in agent.config.get("force_mutations") or [])
        for candidate in agent.history:
            parent_agent = view.agents.get(candidate.parent[0]) if candidate.parent else None
            if parent_agent is None or parent_agent.task_name != agent.task_name:
                continue
            parent_score, parent_quality = _parent_score(view, rows, candidate)
            if parent_score is None:
                continue
            if candidate.score is None:
                continue
            score = candidate.score
            for line in candidate.mutations:
                name = mutation_name(line)
                if name is None:
                    continue
                if line.rstrip().endswith("(forced)"):
                    forced.add(name)
                deltas[name].append(score - parent_score)
                if candidate.quality is not None and parent_quality is not None:
                    quality_deltas[name].append(candidate.quality - parent_quality)
                admitted[name] += candidate.admitted
    effects = [
        MutationEffect(
            name,
            len(values),
            sum(values) / len(values),
            (sum(quality_deltas[name]) / len(quality_deltas[name]))
            if quality_deltas[name]
            else None,
            admitted[name],
            name in forced,
        )
        for name, values in deltas.items()
    ]
    return sorted(effects, key=lambda e: (-e.mean_delta, -e.count, e.name))


# Quality axis ---------------------------------------------------------------------------------
def quality_range(
    values: Iterable[float | None], references: Iterable[float | None] = ()
) -> tuple[float, float]:
    """The y range of a quality or score plot, fitted to the data (the page and the PNG
    figures use the same), so curves at 0.98-1.00 are not a flat line at the top of 0-1.

    The values' span, padded by a tenth (at least 0.01 all told) and widened to round ticks,
    kept inside [0, 1] when the values are. Reference levels (chance, baselines) widen it only
    when they lie near the data (within the data's span, at least 0.1); farther ones are left
    off the axis, and their lines say so (`research.reference_lines`).

    Args:
        values: the plotted values (None and non-finite ones ignored).
        references: the levels drawn across the plot.

    Returns:
        (low, high); (0, 1) when there is nothing to fit.
    """
    from munet.report.svg import nice_ticks

    known = [v for v in values if v is not None and math.isfinite(v)]
    levels = [v for v in references if v is not None and math.isfinite(v)]
    if not known:
        known, levels = levels, []
    if not known:
        return 0.0, 1.0
    low, high = min(known), max(known)
    reach = max(high - low, 0.1)
    near = [v for v in levels if low - reach <= v <= high + reach]
    low, high = min([low, *near]), max([high, *near])
    pad = max((high - low) * 0.1, (0.01 - (high - low)) / 2, 0.0)
    inside = 0.0 <= low and high <= 1.0
    low, high = low - pad, high + pad
    ticks = nice_ticks(low, high, count=4)
    step = ticks[1] - ticks[0] if len(ticks) > 1 else 0.01
    low = math.floor(low / step + 1e-9) * step
    high = math.ceil(high / step - 1e-9) * step
    if inside:
        low, high = max(low, 0.0), min(high, 1.0)
    return round(low, 10), round(high, 10)
