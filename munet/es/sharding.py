"""The machinery behind the multi-device estimators (``munet.es.sharded``): the sharded state,
cutting the single-device state into device shards and back, planning a truncation and running
one shard's unrolls on its device.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from munet.es.devices import DeviceWorkers, move_tree, problem_on_device, resolve_devices
from munet.es.estimators import EstimatorOutput, positive_int, torch_generator
from munet.es.pes import sample_perturbations
from munet.es.plan import ReplicatedBatches, ShardPlan, plan_truncation, shard_plan
from munet.es.problem import InnerProblem, InnerState, check_theta
from munet.es.state_io import save_state
from munet.es.unroll import select_particles, staggered_start


@dataclass(frozen=True)
class DeviceShard:
    """One device's particles: its persistent unrolls (PES: positive, negative; truncated ES:
    the unperturbed one) and, for PES, its accumulator, all on the shard's device."""

    unrolls: tuple[InnerState, ...]
    accumulator: torch.Tensor | None = None


@dataclass(frozen=True)
class ShardedState:
    """The estimator state with the particles on their devices.

    Attributes:
        shards: one ``DeviceShard`` per device entry, in order (particles 0..p-1 on the first).
        inner_step: every particle's step counter, (P,), on the CPU (the plan needs it there).
        rng: the CPU generator's state.
        iteration: estimates made so far.
    """

    shards: tuple[DeviceShard, ...]
    inner_step: torch.Tensor
    rng: torch.Tensor
    iteration: int = 0


@dataclass(frozen=True)
class ShardOutput:
    """What one shard's work returns: its new shard, its estimate (CPU) and mean loss."""

    shard: DeviceShard
    grad: torch.Tensor
    per_particle_grad: torch.Tensor
    loss: torch.Tensor


def cat_unrolls(parts: Sequence[InnerState]) -> InnerState:
    """The shards' inner states joined along the particles, on the CPU."""
    return {name: torch.cat([part[name].cpu() for part in parts]) for name in parts[0]}


class MultiDeviceBase:
    """What the multi-device estimators share: devices, shards, planning, gather/scatter,
    saving and loading in the single-device layout.

    Mixed in before a single-device truncated estimator class (``TruncatedPES``,
    ``TruncatedES``), whose maths, checks, name and state class it reuses; ``num_particles`` is
    the total over devices. A subclass says how its state splits into unrolls
    (``_unrolls_of``), how the shards come back together (``gather``) and what one shard
    computes (``_shard_work``).
    """

    state_class: type

    def __init__(
        self,
        problem: InnerProblem,
        devices: Sequence[str | torch.device],
        particles_per_device: int,
        truncation_length: int = 10,
        std: float = 0.01,
        random_initial_offset: int = 0,
        offset_mode: str = "burn_in",
        replicate_data: bool = False,
        num_devices: int | None = None,
        concurrency: str = "auto",
    ) -> None:
        per_device = positive_int("particles_per_device", particles_per_device)
        self.devices = resolve_devices(devices, num_devices)
        super().__init__(  # the single-device estimator, with all the particles
            problem,
            len(self.devices) * per_device,
            truncation_length,
            std,
            random_initial_offset,
            offset_mode,
        )
        self.particles_per_device = per_device
        self.replicate_data = bool(replicate_data)
        self._workers = DeviceWorkers(self.devices, concurrency)
        self.concurrency = self._workers.concurrency
        # One copy of the problem per distinct device (steps only; draws use self.problem).
        copies: dict[torch.device, InnerProblem] = {}
        for device in self.devices:
            if device not in copies:
                copies[device] = problem_on_device(self.problem, device)
        self._device_problems = [copies[device] for device in self.devices]

    def _bounds(self, index: int) -> tuple[int, int]:
        start = index * self.particles_per_device
        return start, start + self.particles_per_device

    # -- moving states between the single-device layout and the shards -----------------------

    def _split(self, unrolls: Sequence[InnerState], accumulator: torch.Tensor | None):
        shards = []
        for index, device in enumerate(self.devices):
            start, stop = self._bounds(index)
            part = tuple(
                move_tree({k: v[start:stop] for k, v in unroll.items()}, device)
                for unroll in unrolls
            )
            acc = None if accumulator is None else accumulator[start:stop].to(device)
            shards.append(DeviceShard(part, acc))
        for device in {device for device in self.devices if device.type == "cuda"}:
            torch.cuda.synchronize(device)  # the shards' streams read these copies next
        return tuple(shards)

    def _start(self, theta: torch.Tensor, generator: torch.Generator):
        # As the single-device estimator, but a burn-in on replicated data shares its batches
        # across devices exactly as the truncations after it will.
        check_theta(self.problem, theta)
        copies = len(self.devices)
        problem = ReplicatedBatches(self.problem, copies) if self.replicate_data else self.problem
        return staggered_start(
            problem,
            theta,
            self.num_particles,
            generator,
            self.random_initial_offset,
            self.offset_mode,
        )

    def _check_particles(self, inner_step: torch.Tensor) -> None:
        if inner_step.shape != (self.num_particles,):
            raise ValueError(
                f"state holds {tuple(inner_step.shape)[0]} particles; this estimator has "
                f"{self.num_particles} ({len(self.devices)} devices x "
                f"{self.particles_per_device})"
            )

    def scatter(self, state: Any) -> ShardedState:
        """A single-device state (all P particles, e.g. ``PESState``) cut into the shards."""
        if not isinstance(state, self.state_class):
            raise TypeError(
                f"expected a {self.state_class.__name__} or ShardedState, got "
                f"{type(state).__name__}"
            )
        self._check_particles(state.inner_step)
        unrolls, accumulator = self._unrolls_of(state)
        return ShardedState(
            shards=self._split(unrolls, accumulator),
            inner_step=state.inner_step.cpu(),
            rng=state.rng,
            iteration=state.iteration,
        )

    def init_state(self, theta: torch.Tensor, seed: int) -> ShardedState:
        return self.scatter(super().init_state(theta, seed))

    def estimate(self, theta: torch.Tensor, state: Any) -> tuple[EstimatorOutput, ShardedState]:
        """One estimate; ``state`` is a ``ShardedState`` or a single-device state."""
        if not isinstance(state, ShardedState):
            state = self.scatter(state)
        theta_row, plan, generator, jobs = self._plan_shards(theta, state)

        def work(index: int, device: torch.device, job) -> Generator[None, None, ShardOutput]:
            shard, plan_part = job
            rows = theta_row.to(device).expand(self.particles_per_device, -1)
            return (yield from self._shard_work(index, device, shard, rows, plan_part))

        outputs = self._workers.run(work, jobs)
        return self._combine(state, plan, generator, outputs)

    def save_state(self, state: Any, path: str | Path) -> None:
        """Writes the state in the single-device layout (all particles, one CPU file)."""
        save_state(self.gather(state) if isinstance(state, ShardedState) else state, path)

    def load_state(self, path: str | Path) -> ShardedState:
        """Reads a state saved by this estimator, another device list or the single-device
        estimator, cut into this estimator's shards."""
        return self.scatter(super().load_state(path))

    def close(self) -> None:
        """Stops the worker threads (they are started again by the next estimate)."""
        self._workers.close()

    # -- one truncation ----------------------------------------------------------------------

    def _plan_shards(self, theta: torch.Tensor, state: ShardedState):
        rows = self._theta_rows(theta)
        generator = torch_generator(state.rng)
        eps = sample_perturbations(self.num_particles, rows.shape[1], self.std, generator)
        batch_particles = self.particles_per_device if self.replicate_data else self.num_particles
        plan = plan_truncation(
            self.problem, state.inner_step, generator, self.truncation_length, batch_particles
        )
        jobs = [
            (shard, shard_plan(plan, eps, *self._bounds(index), self.replicate_data))
            for index, shard in enumerate(state.shards)
        ]
        return rows[0], plan, generator, jobs

    def _unroll_shard(
        self,
        index: int,
        device: torch.device,
        starts: Sequence[InnerState],
        thetas: Sequence[torch.Tensor],
        plan: ShardPlan,
    ) -> Generator[None, None, tuple[list[InnerState], list[torch.Tensor], torch.Tensor]]:
        """Runs one device's unrolls K steps, yielding after each (so the CUDA-stream driver
        can launch the other shards' steps in between); returns new states, (K, p) losses and
        (K, p) done flags."""
        problem = self._device_problems[index]
        states = list(starts)
        losses: list[list[torch.Tensor]] = [[] for _ in states]
        for step_index, inner_step in enumerate(plan.inner_steps):
            # Grad mode is per thread: set it around each step, never across a yield, or the
            # interleaved driver would restore the shards' modes out of order.
            with torch.no_grad():
                batch = move_tree(plan.batches[step_index], device)
                counters = inner_step.to(device)
                new_states = []
                for state, theta, collected in zip(states, thetas, losses, strict=True):
                    new_state, loss = problem.step(state, theta, batch, counters)
                    new_states.append(new_state)
                    collected.append(loss)
                fresh = plan.fresh[step_index]
                if fresh is not None:
                    fresh = move_tree(fresh, device)
                    done = plan.done[step_index].to(device)
                    new_states = [select_particles(done, fresh, state) for state in new_states]
            states = new_states
            yield
        return states, [torch.stack(collected) for collected in losses], plan.done.to(device)

    def _combine(
        self, state: ShardedState, plan, generator, outputs
    ) -> tuple[EstimatorOutput, ShardedState]:
        # The reference's pmean: each device's mean over its particles, averaged over devices.
        grad = torch.stack([output.grad for output in outputs]).mean(dim=0)
        loss = torch.stack([output.loss for output in outputs]).mean()
        per_particle = torch.cat([output.per_particle_grad for output in outputs])
        new_state = ShardedState(
            shards=tuple(output.shard for output in outputs),
            inner_step=plan.final_step,
            rng=generator.get_state(),
            iteration=state.iteration + 1,
        )
        return EstimatorOutput(grad, per_particle, loss), new_state
