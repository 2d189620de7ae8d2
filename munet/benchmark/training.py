"""Training with periodic validation for the methods that are not munet agents (adapters on
the frozen root, the CNN): the agents' rule, on a plain ``nn.Module``.

Every ``interval`` train steps the model is validated; the parameters *and buffers* (batch-norm
statistics) of the best validation accuracy so far are kept and restored at the end, so the
model that reaches the test set was chosen on validation only. A non-finite loss stops
training (the best validation's state is kept).
"""

from __future__ import annotations

import copy
import logging
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import torch
import torch.nn.functional as F
from torch import nn

from munet.tasks.batch import Batch

log = logging.getLogger("munet.benchmark")


class Optimizer(Protocol):
    """What the loop needs of an optimizer (torch's and munet's PathOptimizer both fit)."""

    def zero_grad(self) -> None: ...

    def step(self) -> object: ...


@dataclass
class TrainResult:
    """What one training did.

    Attributes:
        quality: best validation accuracy (NaN when it diverged before any validation).
        steps: train steps run.
        evals: validation accuracy after each interval.
        diverged: a loss was not finite.
    """

    quality: float
    steps: int
    evals: list[float] = field(default_factory=list)
    diverged: bool = False


@torch.no_grad()
def accuracy(model: nn.Module, batches: Sequence[Batch] | Iterator[Batch]) -> float:
    """Accuracy of ``model`` (in eval mode) over ``batches``.

    Raises:
        ValueError: no examples.
    """
    was_training = model.training
    model.eval()
    correct = total = 0
    for batch in batches:
        correct += int((model(batch.images).argmax(-1) == batch.labels).sum())
        total += len(batch)
    model.train(was_training)
    if total == 0:
        raise ValueError("no examples to evaluate on")
    return correct / total


def train_with_validation(
    model: nn.Module,
    optimizer: Optimizer,
    train_batches: Iterator[Batch],
    validation_batches: Sequence[Batch],
    interval: int,
    num_validations: int,
    transform: Callable[[torch.Tensor], torch.Tensor] | None = None,
) -> TrainResult:
    """Trains ``model`` for ``interval * num_validations`` steps, keeping its best-validation
    state (restored at the end).

    Args:
        model: the model; its parameters without ``requires_grad`` stay frozen.
        optimizer: over the trainable parameters.
        train_batches: endless training batches.
        validation_batches: the validation set, read after every ``interval`` steps.
        interval: train steps between validations (positive).
        num_validations: validations in the training (positive).
        transform: applied to each training batch's images (augmentation), if given.

    Returns:
        The best validation accuracy and what ran.

    Raises:
        ValueError: a non-positive ``interval`` or ``num_validations``.
    """
    if interval <= 0 or num_validations <= 0:
        raise ValueError(
            f"interval ({interval}) and num_validations ({num_validations}) must be positive"
        )
    best_quality = float("-inf")
    best_state: dict[str, torch.Tensor] | None = None
    result = TrainResult(quality=float("nan"), steps=0)
    model.train()
    for _ in range(num_validations):
        for _ in range(interval):
            batch = next(train_batches)
            images = batch.images if transform is None else transform(batch.images)
            optimizer.zero_grad()
            loss = F.cross_entropy(model(images), batch.labels)
            if not math.isfinite(float(loss.detach())):
                result.diverged = True
                log.warning(
                    "training diverged at step %d (loss %s)", result.steps, float(loss.detach())
                )
                break
            loss.backward()
            optimizer.step()
            result.steps += 1
        if result.diverged:
            break
        quality = accuracy(model, validation_batches)
        result.evals.append(quality)
        if quality > best_quality:  # The first of equal validations is kept.
            best_quality = quality
            best_state = copy.deepcopy(model.state_dict())
    if best_state is not None:
        model.load_state_dict(best_state)
        result.quality = best_quality
    model.eval()
    return result
