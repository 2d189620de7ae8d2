"""The random part of a truncation, drawn ahead on the CPU, and cutting it into device shards.

Everything random in a truncation (perturbations, data batches, fresh states at episode ends)
and every step counter can be known before any inner step runs: counters advance by one per
step and reset at ``episode_length`` whatever the states are, and ``step`` draws nothing. So
the multi-device estimators draw it all from the one CPU generator, in exactly the order the
single-device ``unroll`` draws it, and the devices only run the deterministic steps. That is
what makes a multi-device estimate equal the single-device one with the same seed and total
particles, and keeps a saved run resumable on any device list.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from munet.es.problem import InnerProblem, InnerState


@dataclass(frozen=True)
class TruncationPlan:
    """One truncation's draws and counters for all P particles (CPU tensors).

    Attributes:
        inner_steps: K tensors (P,): the counter each step runs with.
        batches: K batches from ``sample_batch`` (P rows each; with replicated data, one
            device's worth of rows, given to every device).
        done: (K, P) bool, True at the step that ended a particle's episode.
        fresh: K entries: the fresh states (P rows) that replace ended episodes after that
            step, or None when no episode ended there.
        final_step: (P,) the counters after the truncation.
    """

    inner_steps: list[torch.Tensor]
    batches: list[Any]
    done: torch.Tensor
    fresh: list[InnerState | None]
    final_step: torch.Tensor


def _check_rows(tree: Any, rows: int, what: str) -> None:
    if isinstance(tree, torch.Tensor):
        if tree.dim() == 0 or tree.shape[0] != rows:
            raise ValueError(
                f"{what} holds a tensor of shape {tuple(tree.shape)}; the multi-device "
                f"estimators split data by its first dimension, which must be the {rows} "
                "particles"
            )
    elif isinstance(tree, dict):
        for value in tree.values():
            _check_rows(value, rows, what)
    elif isinstance(tree, (tuple, list)):
        for value in tree:
            _check_rows(value, rows, what)


def plan_truncation(
    problem: InnerProblem,
    inner_step: torch.Tensor,
    generator: torch.Generator,
    num_steps: int,
    batch_particles: int,
) -> TruncationPlan:
    """Draws one truncation's batches and fresh states, in ``munet.es.unroll.advance``'s order.

    Args:
        problem: the inner problem (its ``sample_batch`` and ``init_state`` draw the numbers).
        inner_step: the counters at the start, shape (P,).
        generator: the estimator's CPU generator (advanced by the draws).
        num_steps: K.
        batch_particles: rows per batch: P, or one device's share when data is replicated.

    Raises:
        ValueError: when a batch tensor's first dimension is not ``batch_particles``.
    """
    num_particles = inner_step.shape[0]
    steps, batches, dones, fresh_states = [], [], [], []
    for _ in range(num_steps):
        batch = problem.sample_batch(batch_particles, generator)
        _check_rows(batch, batch_particles, f"{type(problem).__name__}.sample_batch")
        batches.append(batch)
        steps.append(inner_step)
        new_step = inner_step + 1
        if problem.episode_length is None:
            done = torch.zeros(num_particles, dtype=torch.bool)
        else:
            done = new_step >= problem.episode_length
        fresh = None
        if bool(done.any()):
            fresh = problem.init_state(num_particles, generator)
            new_step = torch.where(done, torch.zeros_like(new_step), new_step)
        dones.append(done)
        fresh_states.append(fresh)
        inner_step = new_step
    return TruncationPlan(
        inner_steps=steps,
        batches=batches,
        done=torch.stack(dones),
        fresh=fresh_states,
        final_step=inner_step,
    )


def rows_of(tree: Any, start: int, stop: int) -> Any:
    """``tree`` with every tensor cut to rows ``start:stop`` of its first dimension (views)."""
    if isinstance(tree, torch.Tensor):
        return tree[start:stop]
    if isinstance(tree, dict):
        return {key: rows_of(value, start, stop) for key, value in tree.items()}
    if isinstance(tree, (tuple, list)):
        return type(tree)(rows_of(value, start, stop) for value in tree)
    return tree


@dataclass(frozen=True)
class ShardPlan:
    """One device's share of a ``TruncationPlan`` (its rows; K steps)."""

    perturbation: torch.Tensor
    inner_steps: list[torch.Tensor]
    batches: list[Any]
    done: torch.Tensor
    fresh: list[InnerState | None]


def shard_plan(
    plan: TruncationPlan,
    perturbation: torch.Tensor,
    start: int,
    stop: int,
    replicate_data: bool,
) -> ShardPlan:
    """The rows ``start:stop`` of ``plan`` (batches whole when data is replicated)."""
    return ShardPlan(
        perturbation=perturbation[start:stop],
        inner_steps=[step[start:stop] for step in plan.inner_steps],
        batches=plan.batches if replicate_data else rows_of(plan.batches, start, stop),
        done=plan.done[:, start:stop],
        fresh=[None if fresh is None else rows_of(fresh, start, stop) for fresh in plan.fresh],
    )


def _tile(tree: Any, copies: int) -> Any:
    if isinstance(tree, torch.Tensor):
        return torch.cat([tree] * copies)
    if isinstance(tree, dict):
        return {key: _tile(value, copies) for key, value in tree.items()}
    if isinstance(tree, (tuple, list)):
        return type(tree)(_tile(value, copies) for value in tree)
    return tree


class ReplicatedBatches(InnerProblem):
    """``problem`` seen by ``copies`` devices that share their data: a batch for P particles is
    one batch of P / copies rows, repeated. The multi-device estimators burn in staggered
    starts through it when data is replicated, so the burn-in sees the same data layout as the
    truncations that follow."""

    def __init__(self, problem: InnerProblem, copies: int) -> None:
        self.problem = problem
        self.copies = copies
        self.episode_length = problem.episode_length

    def init_theta(self) -> torch.Tensor:
        return self.problem.init_theta()

    def init_state(self, num_particles: int, generator: torch.Generator) -> InnerState:
        return self.problem.init_state(num_particles, generator)

    def sample_batch(self, num_particles: int, generator: torch.Generator) -> Any:
        if num_particles % self.copies:
            raise ValueError(f"{num_particles} particles do not split over {self.copies} copies")
        batch = self.problem.sample_batch(num_particles // self.copies, generator)
        _check_rows(
            batch, num_particles // self.copies, f"{type(self.problem).__name__}.sample_batch"
        )
        return _tile(batch, self.copies)

    def step(self, state, theta, batch, inner_step):
        return self.problem.step(state, theta, batch, inner_step)
