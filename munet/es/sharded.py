"""Truncated PES and truncated ES with their particles spread over several devices.

learned_optimization's ``TruncatedPESPMAP``, in PyTorch: each device runs its own share of the
positive/negative unrolls, computes its share's estimate, and the per-device estimates are
averaged. Devices are a list (``["cuda:0", "cuda:1"]``; an entry may repeat, e.g.
``["cpu", "cpu"]`` or ``["cuda:0", "cuda:0"]``, to run several shards on one device); the
shards of one estimate run at the same time: on CUDA each on its own stream, launched in turn
from the calling thread; on the CPU each in its own worker thread (``munet.es.devices``).

All random numbers are drawn on the CPU from the estimator's one generator in the order the
single-device estimator draws them (``munet.es.plan``), so:

- with separate data per device (the default, as in the reference) an estimate equals the
  single-device ``TruncatedPES`` / ``TruncatedES`` estimate with the same seed and total
  particles, up to the order of the final sum over particles;
- with ``replicate_data=True`` every device trains on the same batch (one device's worth of
  rows), as the reference's ``replicate_data_across_devices``;
- a saved state is the single-device state (``PESState`` / ``TruncatedState`` with all P
  particles), so a run saved on one device list resumes on another, bit for bit on the same
  list.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from munet.es.devices import DeviceWorkers, move_tree, problem_on_device, resolve_devices
from munet.es.estimators import (
    EstimatorOutput,
    PESState,
    TruncatedES,
    TruncatedPES,
    TruncatedState,
    _generator,
    _positive_int,
)
from munet.es.pes import antithetic_es_gradient, pes_gradient, sample_perturbations
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
class _ShardOutput:
    shard: DeviceShard
    grad: torch.Tensor
    per_particle_grad: torch.Tensor
    loss: torch.Tensor


def _cat(parts: Sequence[InnerState]) -> InnerState:
    return {name: torch.cat([part[name].cpu() for part in parts]) for name in parts[0]}


class _MultiDevice:
    """What the multi-device estimators share: devices, shards, planning, gather/scatter.

    Mixed in before a single-device estimator class, whose maths, checks and state class it
    reuses; ``num_particles`` is the total over devices.
    """

    def _setup(
        self,
        devices: Sequence[str | torch.device],
        particles_per_device: int,
        replicate_data: bool,
        num_devices: int | None,
        concurrency: str,
    ) -> None:
        self.devices = resolve_devices(devices, num_devices)
        self.particles_per_device = particles_per_device
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

    def close(self) -> None:
        """Stops the worker threads (they are started again by the next estimate)."""
        self._workers.close()

    # -- one truncation ----------------------------------------------------------------------

    def _plan_shards(self, theta: torch.Tensor, state: ShardedState):
        rows = self._theta_rows(theta)
        generator = _generator(state.rng)
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
        with torch.no_grad():
            for step_index, inner_step in enumerate(plan.inner_steps):
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


class MultiDeviceTruncatedPES(_MultiDevice, TruncatedPES):
    """Truncated PES with ``particles_per_device`` particles on each of ``devices``.

    Same estimator, defaults and state file as ``TruncatedPES`` with
    ``len(devices) * particles_per_device`` particles (its ``name`` is ``"pes"`` too, so a
    ``MetaTrainer`` run saved by either resumes with the other).

    Args:
        problem: the inner problem; ``sample_batch`` tensors must have the particles first.
        devices: one entry per shard (``"cpu"``, ``"cuda:0"``, ...); entries may repeat.
        particles_per_device: antithetic pairs on each device.
        truncation_length: K, inner steps per estimate.
        std: perturbation standard deviation.
        random_initial_offset, offset_mode: staggered starts, as in ``TruncatedPES``.
        replicate_data: every device trains on the same batches (the reference's
            ``replicate_data_across_devices``) instead of each its own.
        num_devices: the device count expected; ``devices`` of another length is an error.
        concurrency: how the shards run at the same time: ``"threads"`` (a worker thread per
            shard), ``"streams"`` (one thread launching every shard's steps in turn, each on
            its own CUDA stream) or ``"auto"`` (streams when all devices are CUDA devices).

    Raises:
        ValueError: for a bad device list or count, or bad estimator settings.
    """

    state_class = PESState

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
        per_device = _positive_int("particles_per_device", particles_per_device)
        count = len(resolve_devices(devices, num_devices))
        super().__init__(
            problem, count * per_device, truncation_length, std, random_initial_offset,
            offset_mode,
        )  # fmt: skip
        self._setup(devices, per_device, replicate_data, num_devices, concurrency)

    def scatter(self, state: PESState) -> ShardedState:
        """A single-device ``PESState`` (P particles) cut into this estimator's shards."""
        self._check_particles(state.inner_step)
        return ShardedState(
            shards=self._split((state.pos, state.neg), state.accumulator),
            inner_step=state.inner_step.cpu(),
            rng=state.rng,
            iteration=state.iteration,
        )

    def gather(self, state: ShardedState) -> PESState:
        """The shards back in one CPU ``PESState`` (the single-device layout)."""
        shards = state.shards
        return PESState(
            pos=_cat([shard.unrolls[0] for shard in shards]),
            neg=_cat([shard.unrolls[1] for shard in shards]),
            inner_step=state.inner_step,
            accumulator=torch.cat([shard.accumulator.cpu() for shard in shards]),
            rng=state.rng,
            iteration=state.iteration,
        )

    def init_state(self, theta: torch.Tensor, seed: int) -> ShardedState:
        return self.scatter(super().init_state(theta, seed))

    def estimate(
        self, theta: torch.Tensor, state: ShardedState | PESState
    ) -> tuple[EstimatorOutput, ShardedState]:
        if isinstance(state, PESState):
            state = self.scatter(state)
        theta_row, plan, generator, jobs = self._plan_shards(theta, state)

        def run_shard(index: int, device: torch.device, job) -> Generator[None, None, _ShardOutput]:
            shard, shard_plan_ = job
            rows = theta_row.to(device).expand(self.particles_per_device, -1)
            eps = shard_plan_.perturbation.to(device)
            states, losses, done = yield from self._unroll_shard(
                index, device, shard.unrolls, [rows + eps, rows - eps], shard_plan_
            )
            pes = pes_gradient(losses[0], losses[1], done, eps, shard.accumulator, self.std)
            return _ShardOutput(
                shard=DeviceShard(tuple(states), pes.new_accumulator),
                grad=pes.grad.cpu(),
                per_particle_grad=pes.per_particle_grad.cpu(),
                loss=pes.mean_loss.cpu(),
            )

        outputs = self._workers.run(run_shard, jobs)
        return self._combine(state, plan, generator, outputs)

    def save_state(self, state: ShardedState | PESState, path: str | Path) -> None:
        """Writes the state in the single-device layout (``PESState`` with all particles)."""
        save_state(self.gather(state) if isinstance(state, ShardedState) else state, path)

    def load_state(self, path: str | Path) -> ShardedState:
        """Reads a ``PESState`` saved by this or the single-device estimator into shards."""
        return self.scatter(super().load_state(path))


class MultiDeviceTruncatedES(_MultiDevice, TruncatedES):
    """Truncated ES with ``particles_per_device`` particles on each of ``devices``.

    Same estimator and state file as ``TruncatedES`` with all the particles (``name`` ``"tes"``);
    the arguments are those of ``MultiDeviceTruncatedPES``.
    """

    state_class = TruncatedState

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
        per_device = _positive_int("particles_per_device", particles_per_device)
        count = len(resolve_devices(devices, num_devices))
        super().__init__(
            problem, count * per_device, truncation_length, std, random_initial_offset,
            offset_mode,
        )  # fmt: skip
        self._setup(devices, per_device, replicate_data, num_devices, concurrency)

    def scatter(self, state: TruncatedState) -> ShardedState:
        """A single-device ``TruncatedState`` cut into this estimator's shards."""
        self._check_particles(state.inner_step)
        return ShardedState(
            shards=self._split((state.unroll,), None),
            inner_step=state.inner_step.cpu(),
            rng=state.rng,
            iteration=state.iteration,
        )

    def gather(self, state: ShardedState) -> TruncatedState:
        """The shards back in one CPU ``TruncatedState``."""
        return TruncatedState(
            unroll=_cat([shard.unrolls[0] for shard in state.shards]),
            inner_step=state.inner_step,
            rng=state.rng,
            iteration=state.iteration,
        )

    def init_state(self, theta: torch.Tensor, seed: int) -> ShardedState:
        return self.scatter(super().init_state(theta, seed))

    def estimate(
        self, theta: torch.Tensor, state: ShardedState | TruncatedState
    ) -> tuple[EstimatorOutput, ShardedState]:
        if isinstance(state, TruncatedState):
            state = self.scatter(state)
        theta_row, plan, generator, jobs = self._plan_shards(theta, state)

        def run_shard(index: int, device: torch.device, job) -> Generator[None, None, _ShardOutput]:
            shard, shard_plan_ = job
            rows = theta_row.to(device).expand(self.particles_per_device, -1)
            eps = shard_plan_.perturbation.to(device)
            start = shard.unrolls[0]
            states, losses, _ = yield from self._unroll_shard(
                index, device, [start, start, start], [rows + eps, rows - eps, rows], shard_plan_
            )
            es = antithetic_es_gradient(losses[0], losses[1], eps, self.std)
            return _ShardOutput(
                shard=DeviceShard((states[2],)),
                grad=es.grad.cpu(),
                per_particle_grad=es.per_particle_grad.cpu(),
                loss=losses[2].mean().cpu(),
            )

        outputs = self._workers.run(run_shard, jobs)
        return self._combine(state, plan, generator, outputs)

    def save_state(self, state: ShardedState | TruncatedState, path: str | Path) -> None:
        """Writes the state in the single-device layout (``TruncatedState``)."""
        save_state(self.gather(state) if isinstance(state, ShardedState) else state, path)

    def load_state(self, path: str | Path) -> ShardedState:
        """Reads a ``TruncatedState`` saved by this or the single-device estimator."""
        return self.scatter(super().load_state(path))


MULTI_DEVICE_ESTIMATORS: dict[str, type] = {
    "pes": MultiDeviceTruncatedPES,
    "tes": MultiDeviceTruncatedES,
}


def make_multi_device_estimator(
    name: str,
    problem: InnerProblem,
    devices: Sequence[str | torch.device],
    num_particles: int,
    **options: Any,
):
    """A multi-device ``pes`` or ``tes`` with ``num_particles`` in all, split evenly.

    Raises:
        ValueError: for another estimator name, or a particle count the devices do not divide.
    """
    if name not in MULTI_DEVICE_ESTIMATORS:
        raise ValueError(
            f"estimator {name!r} has no multi-device form; known: "
            f"{', '.join(sorted(MULTI_DEVICE_ESTIMATORS))}"
        )
    count = len(resolve_devices(devices))
    if not isinstance(num_particles, int) or num_particles < 1 or num_particles % count:
        raise ValueError(
            f"{num_particles!r} particles do not split evenly over {count} devices; give a "
            f"positive multiple of {count}"
        )
    return MULTI_DEVICE_ESTIMATORS[name](problem, devices, num_particles // count, **options)
