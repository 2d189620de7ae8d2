"""The truncated estimators (munet.es.estimators): each gradient from K steps of persistent
unrolls, staggered across particles. ``TruncatedES`` (antithetic ES on the truncation, biased),
``TruncatedPES`` (persistent perturbations and their accumulator, unbiased) and
``TruncatedBackprop`` (autograd through the truncation, biased like truncated ES)."""

from __future__ import annotations

import torch

from munet.es.estimator_base import (
    EstimatorOutput,
    GradientEstimator,
    PESState,
    TruncatedState,
    positive_float,
    positive_int,
    seeded,
    torch_generator,
)
from munet.es.pes import antithetic_es_gradient, pes_gradient, sample_perturbations
from munet.es.problem import InnerProblem, check_theta
from munet.es.unroll import detach_state, staggered_start, unroll


class _TruncatedBase(GradientEstimator):
    """Shared set-up of the estimators that unroll in K-step truncations."""

    def __init__(
        self,
        problem: InnerProblem,
        num_particles: int,
        truncation_length: int,
        random_initial_offset: int = 0,
        offset_mode: str = "burn_in",
    ) -> None:
        super().__init__(problem, num_particles)
        self.truncation_length = positive_int("truncation_length", truncation_length)
        if not isinstance(random_initial_offset, int) or random_initial_offset < 0:
            raise ValueError(
                f"random_initial_offset must be an int >= 0, got {random_initial_offset!r}"
            )
        if offset_mode not in ("burn_in", "counter"):
            raise ValueError(f"unknown offset_mode {offset_mode!r}; known: burn_in, counter")
        self.random_initial_offset = random_initial_offset
        self.offset_mode = offset_mode

    def _start(self, theta: torch.Tensor, generator: torch.Generator):
        check_theta(self.problem, theta)
        return staggered_start(
            self.problem,
            theta,
            self.num_particles,
            generator,
            self.random_initial_offset,
            self.offset_mode,
        )

    def init_state(self, theta: torch.Tensor, seed: int) -> TruncatedState:
        generator = seeded(seed)
        inner, inner_step = self._start(theta, generator)
        return TruncatedState(unroll=inner, inner_step=inner_step, rng=generator.get_state())


class _PerturbedTruncatedBase(_TruncatedBase):
    """Truncated estimators that perturb theta with antithetic noise of scale ``std``."""

    def __init__(
        self,
        problem: InnerProblem,
        num_particles: int,
        truncation_length: int = 10,
        std: float = 0.01,
        random_initial_offset: int = 0,
        offset_mode: str = "burn_in",
    ) -> None:
        super().__init__(
            problem, num_particles, truncation_length, random_initial_offset, offset_mode
        )
        self.std = positive_float("std", std)


class TruncatedES(_PerturbedTruncatedBase):
    """Antithetic ES on K-step truncations of one persistent unroll.

    Both members of a pair start from the current unperturbed state; afterwards that state is
    advanced with the unperturbed theta (as in the PES paper's truncated-ES baseline), so the
    estimate sees only theta's effect within the truncation.

    Args:
        problem: the inner problem.
        num_particles: antithetic pairs per estimate (each with its own persistent unroll).
        truncation_length: K, inner steps per estimate.
        std: perturbation standard deviation.
        random_initial_offset: particles start at a random step in [0, offset).
        offset_mode: ``"burn_in"`` or ``"counter"`` (see ``staggered_start``).
    """

    name = "tes"
    state_class = TruncatedState

    def estimate(
        self, theta: torch.Tensor, state: TruncatedState
    ) -> tuple[EstimatorOutput, TruncatedState]:
        rows = self._theta_rows(theta)
        generator = torch_generator(state.rng)
        eps = sample_perturbations(self.num_particles, rows.shape[1], self.std, generator)
        start = state.unroll
        with torch.no_grad():
            result = unroll(
                self.problem,
                [start, start, start],
                [rows + eps, rows - eps, rows],
                state.inner_step,
                generator,
                self.truncation_length,
            )
        es = antithetic_es_gradient(result.losses[0], result.losses[1], eps, self.std)
        new_state = TruncatedState(
            unroll=result.states[2],
            inner_step=result.inner_step,
            rng=generator.get_state(),
            iteration=state.iteration + 1,
        )
        return EstimatorOutput(es.grad, es.per_particle_grad, result.losses[2].mean()), new_state


class TruncatedBackprop(_TruncatedBase):
    """Truncated backpropagation through time: autograd through K steps from a detached state.

    Args:
        problem: the inner problem (its ``step`` must be differentiable in theta and state).
        num_particles: independent unrolls averaged per estimate.
        truncation_length: K, inner steps per estimate.
        random_initial_offset: particles start at a random step in [0, offset).
        offset_mode: ``"burn_in"`` or ``"counter"`` (see ``staggered_start``).
    """

    name = "tbptt"
    state_class = TruncatedState

    def estimate(
        self, theta: torch.Tensor, state: TruncatedState
    ) -> tuple[EstimatorOutput, TruncatedState]:
        # One leaf row per particle, so autograd returns each particle's own gradient.
        rows = self._theta_rows(theta).clone().requires_grad_(True)
        generator = torch_generator(state.rng)
        with torch.enable_grad():
            result = unroll(
                self.problem,
                [detach_state(state.unroll)],
                [rows],
                state.inner_step,
                generator,
                self.truncation_length,
            )
            per_particle_loss = result.losses[0].mean(dim=0)  # (P,)
            (per_particle_grad,) = torch.autograd.grad(
                per_particle_loss.sum(), rows, allow_unused=True
            )
        if per_particle_grad is None:  # the truncation's losses do not depend on theta
            per_particle_grad = torch.zeros_like(rows)
        new_state = TruncatedState(
            unroll=detach_state(result.states[0]),
            inner_step=result.inner_step,
            rng=generator.get_state(),
            iteration=state.iteration + 1,
        )
        output = EstimatorOutput(
            grad=per_particle_grad.mean(dim=0).detach(),
            per_particle_grad=per_particle_grad.detach(),
            loss=per_particle_loss.mean().detach(),
        )
        return output, new_state


class TruncatedPES(_PerturbedTruncatedBase):
    """Persistent Evolution Strategies (Vicol et al. 2021) on K-step truncations.

    Each particle keeps a positive unroll (always run with theta + eps) and a negative one
    (theta - eps), and an accumulator of the perturbations its current episode has seen; see
    ``munet.es.pes.pes_gradient`` for the estimate and the accumulator reset at episode ends.

    Args:
        problem: the inner problem.
        num_particles: antithetic pairs (particles) per estimate.
        truncation_length: K, inner steps per estimate.
        std: perturbation standard deviation (reference default 0.01).
        random_initial_offset: particles start at a random step in [0, offset), so episode
            ends do not all fall on the same estimate.
        offset_mode: ``"burn_in"`` (run the particle there with the unperturbed theta) or
            ``"counter"`` (only move its step counter, as the reference does).
    """

    name = "pes"
    state_class = PESState

    def init_state(self, theta: torch.Tensor, seed: int) -> PESState:
        generator = seeded(seed)
        inner, inner_step = self._start(theta, generator)
        dim = theta.shape[0]
        return PESState(
            pos=inner,
            neg=dict(inner),
            inner_step=inner_step,
            accumulator=torch.zeros(self.num_particles, dim),
            rng=generator.get_state(),
        )

    def estimate(self, theta: torch.Tensor, state: PESState) -> tuple[EstimatorOutput, PESState]:
        rows = self._theta_rows(theta)
        generator = torch_generator(state.rng)
        eps = sample_perturbations(self.num_particles, rows.shape[1], self.std, generator)
        with torch.no_grad():
            result = unroll(
                self.problem,
                [state.pos, state.neg],
                [rows + eps, rows - eps],
                state.inner_step,
                generator,
                self.truncation_length,
            )
        pes = pes_gradient(
            result.losses[0], result.losses[1], result.done, eps, state.accumulator, self.std
        )
        new_state = PESState(
            pos=result.states[0],
            neg=result.states[1],
            inner_step=result.inner_step,
            accumulator=pes.new_accumulator,
            rng=generator.get_state(),
            iteration=state.iteration + 1,
        )
        return EstimatorOutput(pes.grad, pes.per_particle_grad, pes.mean_loss), new_state
