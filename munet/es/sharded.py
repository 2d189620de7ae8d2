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
from typing import Any

import torch

from munet.es.devices import resolve_devices
from munet.es.estimators import PESState, TruncatedES, TruncatedPES, TruncatedState
from munet.es.pes import antithetic_es_gradient, pes_gradient
from munet.es.plan import ShardPlan
from munet.es.problem import InnerProblem
from munet.es.sharding import (
    DeviceShard,
    MultiDeviceBase,
    ShardedState,
    ShardOutput,
    cat_unrolls,
)


class MultiDeviceTruncatedPES(MultiDeviceBase, TruncatedPES):
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

    def _unrolls_of(self, state: PESState):
        return (state.pos, state.neg), state.accumulator

    def gather(self, state: ShardedState) -> PESState:
        """The shards back in one CPU ``PESState`` (the single-device layout)."""
        shards = state.shards
        return PESState(
            pos=cat_unrolls([shard.unrolls[0] for shard in shards]),
            neg=cat_unrolls([shard.unrolls[1] for shard in shards]),
            inner_step=state.inner_step,
            accumulator=torch.cat([shard.accumulator.cpu() for shard in shards]),
            rng=state.rng,
            iteration=state.iteration,
        )

    def _shard_work(
        self,
        index: int,
        device: torch.device,
        shard: DeviceShard,
        rows: torch.Tensor,
        plan: ShardPlan,
    ) -> Generator[None, None, ShardOutput]:
        eps = plan.perturbation.to(device)
        states, losses, done = yield from self._unroll_shard(
            index, device, shard.unrolls, [rows + eps, rows - eps], plan
        )
        pes = pes_gradient(losses[0], losses[1], done, eps, shard.accumulator, self.std)
        yield  # launch every shard's gradient before the first copy back waits for one
        return ShardOutput(
            shard=DeviceShard(tuple(states), pes.new_accumulator),
            grad=pes.grad.cpu(),
            per_particle_grad=pes.per_particle_grad.cpu(),
            loss=pes.mean_loss.cpu(),
        )


class MultiDeviceTruncatedES(MultiDeviceBase, TruncatedES):
    """Truncated ES with ``particles_per_device`` particles on each of ``devices``.

    Same estimator and state file as ``TruncatedES`` with all the particles (``name`` ``"tes"``);
    the arguments are those of ``MultiDeviceTruncatedPES``.
    """

    state_class = TruncatedState

    def _unrolls_of(self, state: TruncatedState):
        return (state.unroll,), None

    def gather(self, state: ShardedState) -> TruncatedState:
        """The shards back in one CPU ``TruncatedState``."""
        return TruncatedState(
            unroll=cat_unrolls([shard.unrolls[0] for shard in state.shards]),
            inner_step=state.inner_step,
            rng=state.rng,
            iteration=state.iteration,
        )

    def _shard_work(
        self,
        index: int,
        device: torch.device,
        shard: DeviceShard,
        rows: torch.Tensor,
        plan: ShardPlan,
    ) -> Generator[None, None, ShardOutput]:
        eps = plan.perturbation.to(device)
        start = shard.unrolls[0]
        states, losses, _ = yield from self._unroll_shard(
            index, device, [start, start, start], [rows + eps, rows - eps, rows], plan
        )
        es = antithetic_es_gradient(losses[0], losses[1], eps, self.std)
        yield  # launch every shard's gradient before the first copy back waits for one
        return ShardOutput(
            shard=DeviceShard((states[2],)),
            grad=es.grad.cpu(),
            per_particle_grad=es.per_particle_grad.cpu(),
            loss=losses[2].mean().cpu(),
        )


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
