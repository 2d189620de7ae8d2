"""Gradient estimators for unrolled computations, all behind one interface.

``estimator.init_state(theta, seed)`` returns a small frozen dataclass of tensors (inner states,
step counters, the PES accumulator and the random generator's state);
``estimator.estimate(theta, state)`` returns ``(EstimatorOutput, new_state)`` and never mutates
its input. Because the generator state travels inside the estimator state, a run saved with
``save_estimator_state`` and loaded again continues bit for bit.

Estimators:
- ``FullEpisodeES``: antithetic ES over whole episodes from fresh states (unbiased, but one
  gradient costs a whole episode).
- ``TruncatedES``: antithetic ES over K-step truncations of a persistent unperturbed unroll
  (cheap; biased, it ignores theta's influence through the state it starts from).
- ``TruncatedPES``: persistent positive/negative unrolls and the perturbation accumulator
  (cheap and unbiased; higher variance than truncated ES).
- ``TruncatedBackprop``: autograd through K-step truncations (biased like truncated ES).

The interface and states are in munet.es.estimator_base, the truncated family in
munet.es.truncated; this module keeps the full-episode estimator and the registry.
"""

from __future__ import annotations

from typing import Any

import torch

# The shared parts and the truncated estimators live beside this module; every estimator
# stays importable from here.
from munet.es.estimator_base import (  # noqa: F401
    EstimatorOutput,
    FullEpisodeState,
    GradientEstimator,
    PESState,
    TruncatedState,
    positive_float,
    positive_int,
    seeded,
    torch_generator,
)
from munet.es.pes import antithetic_es_gradient, sample_perturbations
from munet.es.problem import InnerProblem, check_theta
from munet.es.truncated import TruncatedBackprop, TruncatedES, TruncatedPES
from munet.es.unroll import unroll


class FullEpisodeES(GradientEstimator):
    """Antithetic ES over complete episodes from fresh states.

    Args:
        problem: the inner problem.
        num_particles: antithetic pairs per estimate.
        std: perturbation standard deviation.
        horizon: steps per unroll; defaults to the problem's episode length (required when the
            problem never ends).
    """

    name = "full_es"
    state_class = FullEpisodeState

    def __init__(
        self,
        problem: InnerProblem,
        num_particles: int,
        std: float = 0.01,
        horizon: int | None = None,
    ) -> None:
        super().__init__(problem, num_particles)
        self.std = positive_float("std", std)
        horizon = problem.episode_length if horizon is None else horizon
        if horizon is None:
            raise ValueError(
                f"{type(problem).__name__} has no episode_length; give FullEpisodeES a horizon"
            )
        self.horizon = positive_int("horizon", horizon)

    def init_state(self, theta: torch.Tensor, seed: int) -> FullEpisodeState:
        check_theta(self.problem, theta)
        return FullEpisodeState(rng=seeded(seed).get_state())

    def estimate(
        self, theta: torch.Tensor, state: FullEpisodeState
    ) -> tuple[EstimatorOutput, FullEpisodeState]:
        rows = self._theta_rows(theta)
        generator = torch_generator(state.rng)
        eps = sample_perturbations(self.num_particles, rows.shape[1], self.std, generator)
        with torch.no_grad():
            fresh = self.problem.init_state(self.num_particles, generator)
            counter = torch.zeros(self.num_particles, dtype=torch.int64)
            result = unroll(
                self.problem,
                [fresh, fresh],
                [rows + eps, rows - eps],
                counter,
                generator,
                self.horizon,
            )
        es = antithetic_es_gradient(result.losses[0], result.losses[1], eps, self.std)
        new_state = FullEpisodeState(rng=generator.get_state(), iteration=state.iteration + 1)
        return EstimatorOutput(es.grad, es.per_particle_grad, es.mean_loss), new_state


ESTIMATORS: dict[str, type[GradientEstimator]] = {
    cls.name: cls for cls in (FullEpisodeES, TruncatedES, TruncatedPES, TruncatedBackprop)
}


def make_estimator(name: str, problem: InnerProblem, **options: Any) -> GradientEstimator:
    """Builds a registered estimator by name (``full_es``, ``tes``, ``pes``, ``tbptt``).

    Raises:
        ValueError: for an unknown name.
    """
    if name not in ESTIMATORS:
        raise ValueError(f"unknown estimator {name!r}; known: {', '.join(sorted(ESTIMATORS))}")
    return ESTIMATORS[name](problem, **options)
