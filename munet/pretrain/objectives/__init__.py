"""What the pretraining head is asked, one objective per module, and the loss they add up to.

The head's outputs are the objectives' outputs side by side, in the order of
:data:`OBJECTIVES` (the class logits first: the held-out accuracy reads them); an objective
that is off for a spec takes no outputs. Each objective is an :class:`Objective`: its width
for a spec (0: off) and its loss on its own outputs, in float32.

A new objective is a module here defining one, added to :data:`OBJECTIVES` after those whose
outputs shipped roots were trained with (the order is the head's layout), with its setting as
a :class:`~munet.pretrain.spec.PretrainSpec` field whose default turns it off (validated
there, and an option of `munet pretrain`: munet/cli/pretrain.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from munet.pretrain.objectives import classes, thumbnail
from munet.pretrain.spec import PretrainSpec


@dataclass(frozen=True)
class Objective:
    """One thing the head is asked: ``width(spec)`` outputs (0: off), whose loss is
    ``loss(outputs, images, labels, spec)``."""

    name: str
    width: Callable[[PretrainSpec], int]
    loss: Callable[[torch.Tensor, torch.Tensor, torch.Tensor, PretrainSpec], torch.Tensor]


OBJECTIVES: tuple[Objective, ...] = (
    Objective("classes", classes.width, classes.loss),
    Objective("thumbnail", thumbnail.width, thumbnail.loss),
)


def active(spec: PretrainSpec) -> list[tuple[Objective, int]]:
    """The objectives on for ``spec`` with their widths, in head order."""
    return [(objective, width) for objective in OBJECTIVES if (width := objective.width(spec))]


def head_width(spec: PretrainSpec) -> int:
    """The pretraining head's outputs: every active objective's."""
    return sum(width for _, width in active(spec))


def pretrain_loss(
    outputs: torch.Tensor, images: torch.Tensor, labels: torch.Tensor, spec: PretrainSpec
) -> torch.Tensor:
    """The sum of the active objectives' losses, each on its own slice of the head's
    ``outputs`` (in float32)."""
    total, start = None, 0
    for objective, width in active(spec):
        loss = objective.loss(outputs[:, start : start + width].float(), images, labels, spec)
        total = loss if total is None else total + loss
        start += width
    return total
