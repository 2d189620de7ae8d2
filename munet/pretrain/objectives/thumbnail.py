"""A colour thumbnail beside the class (``thumbnail`` = its side, 0 = off).

The class token also regresses the image average-pooled to side x side x 3 (mean squared
error, weight :data:`WEIGHT`). A task that only asks for the formula lets the features drop
what it does not need (colour, where things are); the thumbnail asks the class token to keep a
coarse picture of the image. VitCpu's shipped root was trained with ``thumbnail`` 4.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from munet.pretrain.spec import PretrainSpec

# The thumbnail's mean squared error is added to the class loss with this weight.
WEIGHT = 1.0


def target(images: torch.Tensor, side: int) -> torch.Tensor:
    """The images (B, 3, S, S) average-pooled to (B, 3 * side * side), the values the head's
    thumbnail outputs regress."""
    return F.adaptive_avg_pool2d(images, side).flatten(1)


def width(spec: PretrainSpec) -> int:
    return 3 * spec.thumbnail**2


def loss(
    outputs: torch.Tensor, images: torch.Tensor, labels: torch.Tensor, spec: PretrainSpec
) -> torch.Tensor:
    return WEIGHT * F.mse_loss(outputs, target(images, spec.thumbnail))
