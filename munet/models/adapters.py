"""Residual bottleneck adapters (Houlsby et al. 2019, "Parameter-Efficient Transfer Learning
for NLP"): a small trainable module added to a frozen network, ``x + up(gelu(down(x)))``.

``up`` starts at zero, so a freshly inserted adapter is the identity and the frozen network's
function is unchanged until training moves it.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class BottleneckAdapter(nn.Module):
    """``x + up(gelu(down(x)))`` over the last dimension (``width``).

    Args:
        width: the feature width it reads and writes.
        bottleneck: the hidden width (the adapter's size knob).
    """

    def __init__(self, width: int, bottleneck: int) -> None:
        super().__init__()
        self.down = nn.Linear(width, bottleneck)
        self.up = nn.Linear(bottleneck, width)
        # The identity at insertion: the frozen model's outputs are unchanged at step 0.
        nn.init.zeros_(self.up.weight)
        nn.init.zeros_(self.up.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.up(F.gelu(self.down(x)))


def adapter_params(width: int, bottleneck: int) -> int:
    """Parameters of one :class:`BottleneckAdapter`: two dense layers with biases."""
    return 2 * width * bottleneck + bottleneck + width
