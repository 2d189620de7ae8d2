"""Residual bottleneck adapters (Houlsby et al. 2019): a small trainable module after a frozen
block, ``x + up(gelu(down(x)))``, with ``up`` zero-initialised so that a new adapter starts as
the identity and the frozen model's function is unchanged until it trains."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class BottleneckAdapter(nn.Module):
    """``x + up(gelu(down(x)))`` over the last axis.

    Args:
        width: the feature width D of the block it follows.
        bottleneck: the hidden width b (b << D keeps it small: 2 D b + b + D parameters).
    """

    def __init__(self, width: int, bottleneck: int) -> None:
        super().__init__()
        self.down = nn.Linear(width, bottleneck)
        self.up = nn.Linear(bottleneck, width)
        nn.init.zeros_(self.up.weight)
        nn.init.zeros_(self.up.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Args: x (..., D). Returns (..., D)."""
        return x + self.up(F.gelu(self.down(x)))


def adapter_params(width: int, bottleneck: int) -> int:
    """Parameters of a `BottleneckAdapter(width, bottleneck)`: 2 * width * bottleneck weights
    plus bottleneck + width biases."""
    return 2 * width * bottleneck + bottleneck + width
