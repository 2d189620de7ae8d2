"""What every gradient estimator shares (munet.es.estimators): the output of one estimate,
the frozen state dataclasses the estimators carry between calls, the abstract interface, and
the small argument and generator helpers."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import torch

from munet.es.problem import InnerProblem, InnerState, check_theta
from munet.es.state_io import load_state, save_state


@dataclass(frozen=True)
class EstimatorOutput:
    """One gradient estimate.

    Attributes:
        grad: the estimate of d(meta-loss)/d(theta), shape (D,).
        per_particle_grad: each particle's estimate, shape (P, D); ``grad`` is their mean.
        loss: the mean loss of the unroll behind the estimate (ES/PES: mean of the positive and
            negative unrolls, as the reference reports; truncated ES/backprop: the unperturbed
            unroll).
    """

    grad: torch.Tensor
    per_particle_grad: torch.Tensor
    loss: torch.Tensor


@dataclass(frozen=True)
class FullEpisodeState:
    rng: torch.Tensor
    iteration: int = 0


@dataclass(frozen=True)
class TruncatedState:
    """State of the single-unroll truncated estimators (truncated ES, truncated backprop)."""

    unroll: InnerState
    inner_step: torch.Tensor
    rng: torch.Tensor
    iteration: int = 0


@dataclass(frozen=True)
class PESState:
    """Persistent positive and negative unrolls, their step counters and accumulator (P, D)."""

    pos: InnerState
    neg: InnerState
    inner_step: torch.Tensor
    accumulator: torch.Tensor
    rng: torch.Tensor
    iteration: int = 0


def torch_generator(rng_state: torch.Tensor) -> torch.Generator:
    generator = torch.Generator()
    generator.set_state(rng_state.clone())
    return generator


def seeded(seed: int) -> torch.Generator:
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise TypeError(f"seed must be an int, got {seed!r}")
    return torch.Generator().manual_seed(seed)


def positive_int(name: str, value: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return value


def positive_float(name: str, value: float) -> float:
    if not (isinstance(value, (int, float)) and value > 0):
        raise ValueError(f"{name} must be > 0, got {value!r}")
    return float(value)


class GradientEstimator(ABC):
    """The interface every estimator implements (see the module docstring)."""

    name: ClassVar[str]
    state_class: ClassVar[type]

    def __init__(self, problem: InnerProblem, num_particles: int) -> None:
        if not isinstance(problem, InnerProblem):
            raise TypeError(f"problem must be an InnerProblem, got {type(problem).__name__}")
        self.problem = problem
        self.num_particles = positive_int("num_particles", num_particles)

    @abstractmethod
    def init_state(self, theta: torch.Tensor, seed: int) -> Any:
        """The estimator's starting state for meta-parameters ``theta``, seeded by ``seed``."""

    @abstractmethod
    def estimate(self, theta: torch.Tensor, state: Any) -> tuple[EstimatorOutput, Any]:
        """One gradient estimate at ``theta``, and the state to pass to the next call."""

    def save_state(self, state: Any, path: str | Path) -> None:
        """Writes ``state`` to ``path.safetensors`` + ``path.json``."""
        save_state(state, path)

    def load_state(self, path: str | Path) -> Any:
        """Reads a state written by ``save_state``.

        Raises:
            ValueError: when the state was saved by an estimator with another particle count.
        """
        state = load_state(self.state_class, path)
        inner_step = getattr(state, "inner_step", None)
        if inner_step is not None and inner_step.shape != (self.num_particles,):
            raise ValueError(
                f"{path} holds {tuple(inner_step.shape)[0]} particles; this estimator has "
                f"{self.num_particles}"
            )
        return state

    def _theta_rows(self, theta: torch.Tensor) -> torch.Tensor:
        check_theta(self.problem, theta)
        return theta.detach().to(torch.float32).expand(self.num_particles, -1)
