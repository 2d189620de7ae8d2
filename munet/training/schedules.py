"""The seed's learning-rate schedules, as pure functions of the update index.

Schedules are pure functions of the update index (0 for the first update), with the exact
semantics of the optax schedules the seed composes (seed 000, ``get_optimizer``):

- ``constant``: ``0.5 * opt_lr`` (half, so the mean lr matches the other schedules);
- ``linear``: linear warmup from ``min_lr`` to ``opt_lr`` over ``warmup`` updates, then linear
  decay back to ``min_lr`` at the end of training;
- ``cosine``: linear warmup from ``min_lr`` to ``opt_lr``, then cosine decay to 0 (optax's
  ``warmup_cosine_decay_schedule`` ends at 0 by default) at the end of training;
- ``restarts``: the cosine schedule repeated once per validation interval (SGDR).

with ``min_lr = opt_lr / 1000``, training length ``steps_between_validations *
num_validations`` and ``warmup = int(opt_lr_warmup_ratio * length)`` (per interval for
``restarts``). `munet pretrain`'s own warmup-cosine is here too (``pretrain_schedule``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

LR_SCHEDULES = ("constant", "linear", "cosine", "restarts")

Schedule = Callable[[int], float]


def linear_schedule(init_value: float, end_value: float, transition_steps: int) -> Schedule:
    """optax.linear_schedule: ``init -> end`` over ``transition_steps``, then held at ``end``."""

    def schedule(step: int) -> float:
        if transition_steps <= 0:
            return init_value
        count = min(max(step, 0), transition_steps)
        frac = 1.0 - count / transition_steps
        return (init_value - end_value) * frac + end_value

    return schedule


def cosine_decay_schedule(init_value: float, decay_steps: int, alpha: float = 0.0) -> Schedule:
    """optax.cosine_decay_schedule: ``init -> alpha * init`` along half a cosine."""

    def schedule(step: int) -> float:
        if decay_steps <= 0:
            return init_value
        count = min(max(step, 0), decay_steps)
        cosine = 0.5 * (1.0 + math.cos(math.pi * count / decay_steps))
        return init_value * ((1.0 - alpha) * cosine + alpha)

    return schedule


def join_schedules(schedules: Sequence[Schedule], boundaries: Sequence[int]) -> Schedule:
    """optax.join_schedules: from ``boundaries[i]`` on, ``schedules[i+1](step - boundaries[i])``."""
    if len(boundaries) != len(schedules) - 1:
        raise ValueError(f"{len(schedules)} schedules need {len(schedules) - 1} boundaries")

    def schedule(step: int) -> float:
        value = schedules[0](step)
        for boundary, next_schedule in zip(boundaries, schedules[1:], strict=True):
            if step >= boundary:
                value = next_schedule(step - boundary)
        return value

    return schedule


def warmup_cosine_decay_schedule(
    init_value: float,
    peak_value: float,
    warmup_steps: int,
    decay_steps: int,
    end_value: float = 0.0,
) -> Schedule:
    """optax.warmup_cosine_decay_schedule; ``decay_steps`` counts the warmup too."""
    alpha = end_value / peak_value if peak_value else 0.0
    return join_schedules(
        [
            linear_schedule(init_value, peak_value, warmup_steps),
            cosine_decay_schedule(peak_value, decay_steps - warmup_steps, alpha),
        ],
        [warmup_steps],
    )


def pretrain_schedule(peak_value: float, warmup_ratio: float, total_steps: int) -> Schedule:
    """`munet pretrain`'s schedule (not the seed's: it warms up from ``peak / warmup``, not
    from ``peak / 1000``): ``peak * (step + 1) / warmup`` for the first ``warmup =
    max(1, int(warmup_ratio * total_steps))`` updates, then a cosine decay to 0 at
    ``total_steps``, held at 0 after. Written as the shipped roots were trained with, so that
    their commands reproduce them bit for bit."""
    warmup = max(1, int(warmup_ratio * total_steps))

    def schedule(step: int) -> float:
        if step < warmup:
            return peak_value * (step + 1) / warmup
        progress = (step - warmup) / max(1, total_steps - warmup)
        return peak_value * 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))

    return schedule


def make_lr_schedule(
    opt_lr: float,
    opt_lr_schedule: str,
    opt_lr_warmup_ratio: float,
    steps_between_validations: int,
    num_validations: int,
) -> Schedule:
    """The seed's learning-rate schedule for one path training.

    Args:
        opt_lr: peak learning rate.
        opt_lr_schedule: one of ``constant``, ``linear``, ``cosine``, ``restarts``.
        opt_lr_warmup_ratio: share of the training (of each interval for ``restarts``) spent
            warming up from ``opt_lr / 1000``.
        steps_between_validations: train batches between two validations.
        num_validations: validations per path training.

    Returns:
        A function from the update index (0-based) to the learning rate.

    Raises:
        ValueError: unknown schedule name.
    """
    min_lr = opt_lr / 1000.0
    if opt_lr_schedule == "constant":
        half = 0.5 * opt_lr
        return lambda step: half
    train_steps = int(steps_between_validations * num_validations)
    if opt_lr_schedule == "linear":
        warmup = int(opt_lr_warmup_ratio * train_steps)
        return join_schedules(
            [
                linear_schedule(min_lr, opt_lr, warmup),
                linear_schedule(opt_lr, min_lr, train_steps - warmup),
            ],
            [warmup],
        )
    if opt_lr_schedule == "cosine":
        warmup = int(opt_lr_warmup_ratio * train_steps)
        return warmup_cosine_decay_schedule(min_lr, opt_lr, warmup, train_steps)
    if opt_lr_schedule == "restarts":
        interval = int(steps_between_validations)
        warmup = int(opt_lr_warmup_ratio * interval)
        cycle = warmup_cosine_decay_schedule(min_lr, opt_lr, warmup, interval)
        boundaries = [interval * (i + 1) for i in range(num_validations - 1)]
        return join_schedules([cycle] * num_validations, boundaries)
    raise ValueError(f"unknown lr schedule {opt_lr_schedule!r}; known: {', '.join(LR_SCHEDULES)}")
