"""What an agent run reports: per generation and per run, plus the readable summary lines."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from munet.system import Path
from munet.training.loop import TrainStats


class AgentError(ValueError):
    """An agent cannot run as asked (no root model, bad task, ...)."""


class ImmutabilityError(RuntimeError):
    """A published path's test quality changed beyond the configured tolerance."""


@dataclass
class GenerationReport:
    """What one generation did and how long each part took (seconds).

    Attributes:
        cycle / generation: 0-based cycle and generation indices.
        paths: the sampled children (admitted or not).
        sample: parent selection, mutation and component assembly (tensor copies included).
        train: the training and validation steps (from :class:`TrainStats`).
        wall: the whole generation, saving included.
        save: committing the state.
    """

    cycle: int
    generation: int
    paths: list[Path]
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


def log_level(important: bool) -> int:
    """INFO for decisions that change something, DEBUG for the others."""
    return logging.INFO if important else logging.DEBUG
