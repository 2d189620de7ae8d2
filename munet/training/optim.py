"""The optimizers of a path's training: the seed's SGD (momentum/Nesterov) and munet's AdamW,
both with global-norm clipping at 1.0 and the seed's lr schedules.

The hparam ``opt_optimizer`` picks one (``OPTIMIZERS``): ``sgd``, the seed's and the default
when a path's hparams do not name one (every preset and stored path of the seed trains as
before), or ``adamw`` (munet's option for small models: decoupled weight decay
``opt_weight_decay``, default ``DEFAULT_WEIGHT_DECAY``). Both are written with ``_foreach``
kernels rather than ``torch.optim``, whose first use imports the compiler stack (seconds per
process), and keep float32 state.

The lr schedules are munet.training.schedules (the seed's optax schedules).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from munet.training.schedules import LR_SCHEDULES, Schedule, make_lr_schedule  # noqa: F401

MAX_GRAD_NORM = 1.0
# The optimizer of a path whose hparams name none (the seed's).
DEFAULT_OPTIMIZER = "sgd"
# AdamW's decoupled weight decay when a path's hparams set no ``opt_weight_decay`` (timm's and
# DeiT's ViT value; torch scales it by the lr, so at lr 1e-3 a tensor shrinks by 5e-5 a step).
DEFAULT_WEIGHT_DECAY = 0.05
# Components whose tensors AdamW never decays (the ViT's class token, position embeddings).
NO_DECAY_COMPONENTS = ("cls", "posembed_input")

# The trainable tensors, or ``{flat name: tensor}``.
Params = Sequence[torch.Tensor] | Mapping[str, torch.Tensor]


def clip_grad_global_norm_(
    grads: Sequence[torch.Tensor], max_norm: float = MAX_GRAD_NORM
) -> torch.Tensor:
    """Scales ``grads`` in place to global norm ``max_norm`` if larger (optax semantics).

    Runs without synchronising with the device (the scale is computed on it).

    Returns:
        The global norm before clipping, a 0-d tensor (``inf``/``nan`` when a gradient is not
        finite; the gradients are then not finite either).
    """
    if not grads:
        return torch.zeros(())
    grads = list(grads)
    norm = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads)))
    # optax: g if norm < max_norm else g / norm * max_norm, i.e. g * min(1, max_norm / norm).
    scale = (max_norm / norm).clamp(max=1.0)
    torch._foreach_mul_(grads, scale)
    return norm


class ScheduledOptimizer:
    """What every path optimizer shares: clip the gradients to global norm ``max_grad_norm``,
    read the lr of this update from the schedule, then apply the optimizer's own update.

    A new optimizer is a subclass with ``_update`` and ``from_hparams``, plus an entry in
    ``OPTIMIZERS``.

    Attributes:
        params: the trainable tensors, in a fixed order (the optimizer state follows it).
        schedule: the lr of each update index.
        max_grad_norm: the global norm the gradients are clipped to.
        step_count: updates done (the next update's schedule index).
    """

    def __init__(
        self,
        params: Sequence[torch.Tensor],
        schedule: Schedule,
        max_grad_norm: float = MAX_GRAD_NORM,
    ):
        self.params = list(params)
        self.schedule = schedule
        self.max_grad_norm = max_grad_norm
        self.step_count = 0

    @classmethod
    def from_hparams(
        cls, params: Params, schedule: Schedule, hparams: Mapping[str, Any]
    ) -> ScheduledOptimizer:
        """The optimizer of ``params`` configured from a path's hparams."""
        raise NotImplementedError

    def zero_grad(self) -> None:
        for param in self.params:
            param.grad = None

    @torch.no_grad()
    def step(self) -> torch.Tensor:
        """Clips, applies one update and advances the schedule.

        Returns:
            The gradient global norm before clipping (a 0-d tensor on the device, so the step
            does not wait for it). When it is not finite the parameters are no longer finite
            either: the caller checks it and drops the candidate.
        """
        if not self.params:
            self.step_count += 1
            return torch.zeros(())
        params = [p for p in self.params if p.grad is not None]
        if len(params) != len(self.params):
            raise ValueError(
                f"{len(self.params) - len(params)} of {len(self.params)} trainable tensors got "
                "no gradient"
            )
        grads = [p.grad for p in params]
        norm = clip_grad_global_norm_(grads, self.max_grad_norm)
        self._update(params, grads, self.schedule(self.step_count))
        self.step_count += 1
        return norm

    def _update(self, params: list[torch.Tensor], grads: list[torch.Tensor], lr: float) -> None:
        """Applies one update with clipped ``grads`` (aligned with ``params``, which is
        ``self.params``) at learning rate ``lr``."""
        raise NotImplementedError


class PathOptimizer(ScheduledOptimizer):
    """The seed's SGD (momentum, optional Nesterov) with clipping at global norm 1 and a
    schedule (``opt_optimizer`` ``sgd``, the default).

    The update is optax's ``sgd``: ``trace = g + momentum * trace`` (``trace`` starts at 0, so
    the first one is ``g``); the step is ``trace`` (or ``g + momentum * trace`` with Nesterov)
    times ``-lr(update_index)``; PyTorch's SGD computes the same. The momentum buffer is
    float32 (the seed keeps it in bfloat16 to save accelerator memory).
    """

    def __init__(
        self,
        params: Sequence[torch.Tensor],
        schedule: Schedule,
        momentum: float,
        nesterov: bool,
        max_grad_norm: float = MAX_GRAD_NORM,
    ):
        super().__init__(params, schedule, max_grad_norm)
        self.momentum = float(momentum)
        self.nesterov = bool(nesterov)
        self._trace: list[torch.Tensor] | None = None

    @classmethod
    def from_hparams(
        cls, params: Params, schedule: Schedule, hparams: Mapping[str, Any]
    ) -> PathOptimizer:
        """From ``opt_momentum`` and ``opt_nesterov``."""
        tensors = list(params.values()) if isinstance(params, Mapping) else list(params)
        return cls(
            tensors,
            schedule,
            momentum=float(hparams["opt_momentum"]),
            nesterov=bool(hparams["opt_nesterov"]),
        )

    def _update(self, params: list[torch.Tensor], grads: list[torch.Tensor], lr: float) -> None:
        if self.momentum:
            if self._trace is None:
                self._trace = [g.clone() for g in grads]
            else:
                torch._foreach_mul_(self._trace, self.momentum)
                torch._foreach_add_(self._trace, grads)
            if self.nesterov:
                updates = torch._foreach_add(grads, self._trace, alpha=self.momentum)
            else:
                updates = self._trace
        else:
            updates = grads
        torch._foreach_add_(params, updates, alpha=-lr)


def decays(name: str | None, tensor: torch.Tensor) -> bool:
    """Whether AdamW's weight decay applies to a tensor (timm's and the ViT recipes' rule).

    Matrices and kernels decay. Vectors (norm scales, biases: ``ndim <= 1``) do not, nor,
    when the tensor's flat name (``"<component>.<tensor>"``) is known, the ViT's tokens: the
    components in ``NO_DECAY_COMPONENTS`` (the class token and the position embeddings, which
    decay would pull towards 0).
    """
    if tensor.ndim <= 1:
        return False
    return name is None or name.split(".", 1)[0] not in NO_DECAY_COMPONENTS


class AdamW(ScheduledOptimizer):
    """AdamW (Loshchilov & Hutter, decoupled weight decay) with clipping at global norm 1 and
    a schedule (``opt_optimizer`` ``adamw``, munet's option for small models).

    The update is ``torch.optim.AdamW``'s (``amsgrad=False``, ``maximize=False``), op for op:
    for update ``t`` (1-based) at scheduled lr ``lr``, decayed tensors first shrink
    ``p *= 1 - lr * weight_decay``, then ``m = lerp(m, g, 1 - beta1)``, ``v = beta2 * v +
    (1 - beta2) * g * g`` and ``p -= lr / (1 - beta1 ** t) * m / (sqrt(v) / sqrt(1 - beta2 **
    t) + eps)``, with ``g`` the clipped gradient. The moments are float32.

    Attributes:
        weight_decay: the decoupled decay (scaled by the scheduled lr, as in torch).
        decay: per tensor of ``params``, whether it decays (see ``decays``).
        betas, eps: Adam's constants.
    """

    def __init__(
        self,
        params: Sequence[torch.Tensor],
        schedule: Schedule,
        weight_decay: float = DEFAULT_WEIGHT_DECAY,
        decay: Sequence[bool] | None = None,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        max_grad_norm: float = MAX_GRAD_NORM,
    ):
        super().__init__(params, schedule, max_grad_norm)
        weight_decay = float(weight_decay)
        if not (math.isfinite(weight_decay) and weight_decay >= 0.0):
            raise ValueError(f"weight decay {weight_decay!r}: expected a finite number >= 0")
        self.weight_decay = weight_decay
        if decay is None:
            decay = [decays(None, p) for p in self.params]
        self.decay = [bool(d) for d in decay]
        if len(self.decay) != len(self.params):
            raise ValueError(f"{len(self.decay)} decay flags for {len(self.params)} tensors")
        self.betas = (float(betas[0]), float(betas[1]))
        self.eps = float(eps)
        self._exp_avg: list[torch.Tensor] | None = None
        self._exp_avg_sq: list[torch.Tensor] | None = None

    @classmethod
    def from_hparams(cls, params: Params, schedule: Schedule, hparams: Mapping[str, Any]) -> AdamW:
        """From ``opt_weight_decay`` (default ``DEFAULT_WEIGHT_DECAY``); with named
        ``params`` the tokens are left undecayed too (``decays``)."""
        if isinstance(params, Mapping):
            names: list[str | None] = list(params)
            tensors = list(params.values())
        else:
            tensors = list(params)
            names = [None] * len(tensors)
        return cls(
            tensors,
            schedule,
            weight_decay=float(hparams.get("opt_weight_decay", DEFAULT_WEIGHT_DECAY)),
            decay=[decays(n, t) for n, t in zip(names, tensors, strict=True)],
        )

    def _update(self, params: list[torch.Tensor], grads: list[torch.Tensor], lr: float) -> None:
        beta1, beta2 = self.betas
        if self._exp_avg is None or self._exp_avg_sq is None:
            self._exp_avg = [torch.zeros_like(p, dtype=torch.float32) for p in params]
            self._exp_avg_sq = [torch.zeros_like(p, dtype=torch.float32) for p in params]
        if self.weight_decay:
            decayed = [p for p, d in zip(params, self.decay, strict=True) if d]
            if decayed:
                torch._foreach_mul_(decayed, 1.0 - lr * self.weight_decay)
        torch._foreach_lerp_(self._exp_avg, grads, 1.0 - beta1)
        torch._foreach_mul_(self._exp_avg_sq, beta2)
        torch._foreach_addcmul_(self._exp_avg_sq, grads, grads, value=1.0 - beta2)
        update = self.step_count + 1
        step_size = lr / (1.0 - beta1**update)
        bias_correction2_sqrt = (1.0 - beta2**update) ** 0.5
        denom = torch._foreach_sqrt(self._exp_avg_sq)
        torch._foreach_div_(denom, bias_correction2_sqrt)
        torch._foreach_add_(denom, self.eps)
        torch._foreach_addcdiv_(params, self._exp_avg, denom, value=-step_size)


# The optimizers ``opt_optimizer`` names (munet.config.rules repeats the names without torch).
OPTIMIZERS: dict[str, type[ScheduledOptimizer]] = {"sgd": PathOptimizer, "adamw": AdamW}


def make_optimizer(
    params: Params,
    hparams: Mapping[str, Any],
    steps_between_validations: int,
    num_validations: int,
) -> ScheduledOptimizer:
    """The optimizer of a path's trainable tensors, configured from its hparams.

    ``opt_optimizer`` (default ``sgd``) picks it from ``OPTIMIZERS``; every one follows the
    lr schedule of ``opt_lr``, ``opt_lr_schedule`` and ``opt_lr_warmup_ratio`` and clips at
    global norm 1. ``sgd`` reads ``opt_momentum`` and ``opt_nesterov``; ``adamw`` reads
    ``opt_weight_decay`` (default ``DEFAULT_WEIGHT_DECAY``; ignored by ``sgd``).

    Args:
        params: the trainable tensors, or ``{flat name: tensor}`` (``"<component>.<tensor>"``),
            which lets AdamW leave the ViT's tokens undecayed (``decays``).
        hparams: the path's hparams.
        steps_between_validations, num_validations: the training's length (the schedule's).

    Raises:
        ValueError: an unknown optimizer or lr schedule, or a negative weight decay.
    """
    name = hparams.get("opt_optimizer", DEFAULT_OPTIMIZER)
    optimizer = OPTIMIZERS.get(name) if isinstance(name, str) else None
    if optimizer is None:
        raise ValueError(f"unknown optimizer {name!r}; known: {', '.join(OPTIMIZERS)}")
    schedule = make_lr_schedule(
        float(hparams["opt_lr"]),
        str(hparams["opt_lr_schedule"]),
        float(hparams["opt_lr_warmup_ratio"]),
        steps_between_validations,
        num_validations,
    )
    return optimizer.from_hparams(params, schedule, hparams)
