"""The initialisers of Google's vit_jax (Flax defaults), on PyTorch tensors."""

from __future__ import annotations

import math

import torch
from torch import nn

# JAX's lecun_normal draws from a normal truncated at +-2 std and rescales by this constant
# so that the truncated distribution keeps the requested variance.
_TRUNCATED_NORMAL_STD_CORRECTION = 0.87962566103423978


def lecun_normal(
    shape: tuple[int, ...], fan_in: int, generator: torch.Generator | None = None
) -> torch.Tensor:
    """JAX's (and Flax ``Dense``'s and ``Conv``'s default) lecun_normal: a normal of variance
    1 / fan_in, truncated at +-2 std."""
    std = math.sqrt(1.0 / fan_in) / _TRUNCATED_NORMAL_STD_CORRECTION
    weight = torch.empty(shape)
    return nn.init.trunc_normal_(weight, 0.0, std, -2 * std, 2 * std, generator=generator)


def xavier_uniform(shape: tuple[int, int], generator: torch.Generator | None) -> torch.Tensor:
    """Flax's xavier_uniform of a (fan_out, fan_in) matrix."""
    fan_out, fan_in = shape
    limit = math.sqrt(6.0 / (fan_in + fan_out))
    return torch.empty(shape).uniform_(-limit, limit, generator=generator)
