"""What an agent run reports: per generation and per run, plus the readable summary lines."""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from munet.system import Path, PathComponent
from munet.training.loop import TrainStats

#: The logger of every mutation, selection and reuse decision (INFO: what changed, DEBUG: the
#: rest); the command line shows it with -v only, so a run's default output stays one line
#: per generation.
DECISIONS_LOGGER = "munet.agents.decisions"


class AgentError(ValueError):
    """An agent cannot run as asked (no root model, bad task, ...)."""


class ImmutabilityError(RuntimeError):
    """A published path's test quality changed beyond the configured tolerance."""


@dataclass(frozen=True)
class SampledComponent:
    """What a report keeps of one component of a sampled path (no tensors).

    Attributes:
        name / agent_id / id: the component's identity (a wrapped path's agent and path id).
        num_params: its parameter count.
        is_path: a whole path used as a component (multipath agents).
    """

    name: str
    agent_id: str
    id: int
    num_params: int
    is_path: bool = False


@dataclass(frozen=True)
class PathRef:
    """A path named by its agent and id (a sampled path's parent)."""

    agent_id: str
    id: int

    @property
    def full_id(self) -> str:
        return f"{self.agent_id}:{self.id}"


@dataclass
class SampledPath:
    """What a report keeps of a sampled path once its generation is over: ids, hparams,
    metrics and a summary of its components, never the tensors or the path objects (a run's
    reports would otherwise keep every sampled path, its parents and their memory maps alive,
    so memory and open files would grow with every cycle).
    """

    id: int
    agent_id: str
    task_name: str
    hparams: dict[str, Any]
    metrics: dict[str, Any]
    parent: PathRef | None
    components: list[SampledComponent]

    @property
    def full_id(self) -> str:
        return f"{self.agent_id}:{self.id}"

    def component(self, name: str) -> SampledComponent:
        """The component called ``name``.

        Raises:
            KeyError: no such component.
        """
        for c in self.components:
            if c.name == name:
                return c
        raise KeyError(f"path {self.full_id} has no component {name!r}")

    @classmethod
    def of(cls, path: Path) -> SampledPath:
        """The summary of a live path (hparams and metrics copied)."""
        components = []
        for c in path.components:
            if isinstance(c, PathComponent):
                components.append(
                    SampledComponent(c.name, c.path.agent_id, c.path.id, c.num_params, True)
                )
            else:
                components.append(SampledComponent(c.name, c.agent_id, c.id, c.num_params))
        parent = path.parent
        return cls(
            id=path.id,
            agent_id=path.agent_id,
            task_name=path.task_name,
            hparams=copy.deepcopy(path.hparams),
            metrics=copy.deepcopy(path.metrics),
            parent=None if parent is None else PathRef(parent.agent_id, parent.id),
            components=components,
        )


@dataclass
class GenerationReport:
    """What one generation did and how long each part took (seconds).

    Attributes:
        cycle / generation: 0-based cycle and generation indices.
        paths: the sampled children (admitted or not), as :class:`SampledPath` summaries once
            the generation is over.
        sample: parent selection, mutation and component assembly (tensor copies included).
        train: the training and validation steps (from :class:`TrainStats`).
        wall: the whole generation, saving included.
        save: committing the state.
    """

    cycle: int
    generation: int
    paths: list[SampledPath]
    sample: float = 0.0
    train: TrainStats = field(default_factory=TrainStats)
    save: float = 0.0
    wall: float = 0.0

    @property
    def steps_time(self) -> float:
        """Time inside train and validation steps."""
        return self.train.first_step + self.train.train + self.train.eval

    @property
    def overhead(self) -> float:
        """Time outside train and validation steps."""
        return self.wall - self.steps_time


@dataclass
class RunReport:
    """The outcome of :meth:`Agent.run`.

    Attributes:
        agent_id: the agent.
        cycle: completed cycles after the run.
        generations: reports of the generations run by this call.
        best: the agent's best path after the run (None if no cycle ever ran).
    """

    agent_id: str
    cycle: int
    generations: list[GenerationReport]
    best: Path | None

    def __repr__(self) -> str:
        # Short: the generations and the best path (with its components and tensors) would
        # make a repr of tens of kilobytes; ``summary()`` says more.
        best = "None" if self.best is None else repr(self.best.full_id)
        return (
            f"RunReport(agent_id={self.agent_id!r}, cycle={self.cycle}, "
            f"generations=<{len(self.generations)} run>, best={best})"
        )

    def summary(self) -> str:
        """A few readable lines: cycles, generations run and admitted paths, time, the best
        path with its qualities and parameters."""
        sampled = sum(len(g.paths) for g in self.generations)
        admitted = sum(bool(p.metrics.get("improved")) for g in self.generations for p in g.paths)
        seconds = sum(g.wall for g in self.generations)
        lines = [
            f"{self.agent_id}: {self.cycle} cycle(s) done",
            f"this run: {len(self.generations)} generation(s), {admitted} of {sampled} sampled "
            f"paths admitted, {seconds:.1f}s",
        ]
        if self.best is None:
            lines.append("best path: none yet")
        else:
            metrics = self.best.metrics
            lines.append(
                f"best path: {self.best.full_id} quality "
                f"{metrics.get('quality', float('nan')):.4f} test quality "
                f"{metrics.get('test_quality', float('nan')):.4f}, "
                f"{self.best.num_params()} params"
            )
        return "\n".join(lines)


def log_level(important: bool) -> int:
    """INFO for decisions that change something, DEBUG for the others."""
    return logging.INFO if important else logging.DEBUG


def best_summary(best: Path, score: float, description: str) -> str:
    """The line announcing a new best path."""
    return (
        f"new best {best.full_id}: score {score:.4f} "
        f"quality {best.metrics['quality']:.4f} generation {best.metrics.get('generation_id')} "
        f"{description} lr {best.hparams.get('opt_lr')}"
    )


def generation_line(
    report: GenerationReport,
    agent_id: str,
    cycle: tuple[int, int],
    generation: tuple[int, int],
    best: Path | None,
    best_score: float | None,
    eta: str,
) -> str:
    """One line for a finished generation: where the run is (1-based ``(done, total)`` cycle
    and generation), how many children were admitted, the agent's best path so far, time."""
    admitted = sum(bool(p.metrics.get("improved")) for p in report.paths)
    if best is None:
        best_text = "no best path yet"
    else:
        best_text = (
            f"best quality {best.metrics.get('quality', float('nan')):.4f} "
            f"score {best_score if best_score is not None else float('nan'):.4f}"
        )
    return (
        f"{agent_id}: cycle {cycle[0]}/{cycle[1]} gen {generation[0]}/{generation[1]}: "
        f"{admitted}/{len(report.paths)} admitted, {best_text} "
        f"({report.wall:.1f}s; {eta})"
    )


def generation_summary(
    paths: list[Path], report: GenerationReport, agent_id: str, score: Callable[[Path], float]
) -> list[str]:
    """A generation's lines: per path its parent, quality and score before and after, the
    verdict and the components it reused; then the generation's times. A parent of another
    agent is marked ``A``; a parent of another task reads ``NEW``."""
    lines = []
    for path in paths:
        parent = path.parent
        if parent is not None and parent.task_name == path.task_name:
            tag = "" if parent.agent_id == agent_id else "A"
            parent_quality = f"{parent.metrics.get('quality', float('nan')):.4f}{tag}"
            parent_score = f"{score(parent):.4f}{tag}"
        else:
            parent_quality = parent_score = "NEW"
        verdict = "admitted" if path.metrics.get("improved") else "dropped"
        if "failure" in path.metrics:
            kept = ": best validation kept" if path.metrics.get("improved") else ""
            verdict = f"{verdict} ({path.metrics['failure']}{kept})"
        lines.append(
            f"  path {path.id} <- {parent.full_id if parent else '-'}  "
            f"quality {parent_quality} -> {path.metrics.get('quality', float('nan')):.4f}  "
            f"score {parent_score} -> {score(path):.4f}  {verdict}"
        )
        lines.append(f"    components: {path.metrics.get('reuse', '')}")
    stats = report.train
    lines.append(
        f"  time: sample {report.sample:.2f}s  first step {stats.first_step:.2f}s  "
        f"train {stats.train:.2f}s  eval {stats.eval:.2f}s  total {report.wall:.2f}s"
    )
    return lines


def class_list(class_names: tuple[str, ...] | list[str] | None, num_classes: int) -> str:
    """``10 classes: 0, 1, 2, ..., 9``: the first names, then the last, for a long list."""
    names = [str(n) for n in class_names] if class_names else [str(i) for i in range(num_classes)]
    shown = names if len(names) <= 8 else [*names[:6], "...", names[-1]]
    return f"{num_classes} classes: {', '.join(shown)}"


def start_block(
    agent_id: str,
    task: Any,
    source: str,
    roots: list[str],
    preset: str,
    model: str,
    generations_per_cycle: int,
    devices: str,
) -> list[str]:
    """The lines that open a run: what it trains on, from what, with what.

    Args:
        agent_id: the agent.
        task: its :class:`munet.tasks.Task` (name, classes, split sizes).
        source: where the task's data comes from (``embedded``, ``folder:...``).
        roots: the root models the agent's class grows from (agent ids).
        preset: the agent's preset name; ``model`` its ViT size.
        generations_per_cycle: generations a cycle runs; ``devices`` what they train on.

    Returns:
        Three lines, the first prefixed by the agent id and the others indented.
    """
    sizing = task.sizing
    validation = f"validation {sizing.num_validation_examples_total:,}"
    if task.num_validation_examples < sizing.num_validation_examples_total:
        validation += f" ({task.num_validation_examples:,} used per validation)"
    return [
        f"{agent_id}: task {task.name} ({source}), "
        f"{class_list(task.class_names, task.num_classes)}",
        f"  splits: train {task.num_train_examples:,}, {validation}, "
        f"test {task.num_test_examples:,}",
        f"  root: {', '.join(roots) or '(none yet)'}; preset {preset} (model {model}), "
        f"{generations_per_cycle} generation(s) per cycle on {devices}",
    ]
