"""munet.training: the seed's optimizer and the side-by-side training of a generation's paths.

Public API:

- `make_lr_schedule(opt_lr, opt_lr_schedule, opt_lr_warmup_ratio, steps_between_validations,
  num_validations) -> Callable[[int], float]` (constant, linear, cosine, restarts);
  `LR_SCHEDULES`.
- `make_optimizer(params, hparams, steps_between_validations, num_validations)
  -> ScheduledOptimizer`: the optimizer `opt_optimizer` names in `OPTIMIZERS` (`sgd`, the
  seed's and the default: `PathOptimizer`, SGD momentum/Nesterov; `adamw`: `AdamW`, decoupled
  weight decay `opt_weight_decay`), clipping at global norm 1, the lr schedule;
  `clip_grad_global_norm_`.
- `train_candidates(candidates, train_batches, validation_batches, steps_between_validations,
  num_validations, progress=None, on_validation=None) -> TrainStats`; `TrainCandidate` (after
  training: `evals`, `eval_steps`, `train_losses` aligned per validation, `improved`, ...),
  `TrainStats`, `evaluate_accuracy(model, batches, device, precision="fp32")`,
  `rebatch(batches, size)`, `to_device(images, device)`.
- Precision (`munet.training.precision`): `PRECISIONS`, `resolve_precision(precision, device)`,
  `native_bf16(device)`, `autocast(precision, device)`.
- Threads (`munet.training.threads`, importable without torch): `prepare_openmp_env()` (call
  before importing torch), `apply_thread_policy(num_threads)`, `usable_cpu_count()`.

Names resolve lazily, so `munet.training.threads` can be imported before torch is.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS: dict[str, str] = {
    "TrainCandidate": "munet.training.loop",
    "TrainStats": "munet.training.loop",
    "evaluate_accuracy": "munet.training.loop",
    "rebatch": "munet.training.loop",
    "to_device": "munet.training.loop",
    "train_candidates": "munet.training.loop",
    "LR_SCHEDULES": "munet.training.schedules",
    "AdamW": "munet.training.optim",
    "OPTIMIZERS": "munet.training.optim",
    "PathOptimizer": "munet.training.optim",
    "ScheduledOptimizer": "munet.training.optim",
    "clip_grad_global_norm_": "munet.training.optim",
    "make_lr_schedule": "munet.training.schedules",
    "make_optimizer": "munet.training.optim",
    "PRECISIONS": "munet.training.precision",
    "autocast": "munet.training.precision",
    "native_bf16": "munet.training.precision",
    "resolve_precision": "munet.training.precision",
    "apply_thread_policy": "munet.training.threads",
    "prepare_openmp_env": "munet.training.threads",
    "usable_cpu_count": "munet.training.threads",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'munet.training' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # resolve once
    return value
