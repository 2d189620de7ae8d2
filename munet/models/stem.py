"""The convolutional stem of a hybrid ViT: vit_jax's ResNet-v2 root and bottleneck stages.

Computation, for the same weights, equals vit_jax's `models_resnet` as the hybrid
`models_vit.VisionTransformer` runs it (facts in the project's reference notes):

    root:  x = maxpool3x3/2(relu(GN(StdConv_kxk/s(images))))     (pool only with root_pool)
    unit:  y = relu(GN1(StdConv1x1(x)));  y = relu(GN2(StdConv3x3/s(y)));  y = GN3(StdConv1x1(y))
           x = relu(proj(x) + y)   with proj = GN(StdConv1x1/s(x)) when the shape changes

Every convolution and the pool pad "SAME" as XLA does (for a stride-2 layer on an even input
the extra pixel goes after, not before), the convolutions have no bias, and each kernel is
standardised per output channel before use: `(w - mean) / (std + 1e-5)` over its input and
spatial axes. Group norms use eps 1e-6 (Flax's default). Nothing keeps batch statistics, so
a frozen stem gives the same output in every path that shares it, in training and evaluation.

Module attribute names are the µNet component names (`stem_root`, `stem_block1`, ...) and the
tensor names inside them vit_jax's (`conv`, `gn`; `unit1.conv1`, `unit1.gn_proj`, ...).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from munet.models.arch import StemArch
from munet.models.initializers import lecun_normal

GROUP_NORM_EPS = 1e-6
WEIGHT_STANDARDISATION_EPS = 1e-5


def stem_component_names(stem: StemArch | None) -> list[str]:
    """The stem's component names, in forward order (none for a plain ViT)."""
    if stem is None:
        return []
    return ["stem_root", *(f"stem_block{index + 1}" for index in range(len(stem.stages)))]


def same_padding(size: int, kernel: int, stride: int) -> tuple[int, int]:
    """XLA's "SAME" padding of one axis: (before, after), the odd pixel after."""
    total = max((math.ceil(size / stride) - 1) * stride + kernel - size, 0)
    return total // 2, total - total // 2


def same_paddings(x: torch.Tensor, kernel: int, stride: int) -> tuple[int, int, int, int]:
    """"SAME" padding of the last two axes of (B, C, H, W): (left, right, top, bottom)."""
    top, bottom = same_padding(x.shape[-2], kernel, stride)
    left, right = same_padding(x.shape[-1], kernel, stride)
    return left, right, top, bottom


def pad_same(x: torch.Tensor, kernel: int, stride: int, value: float = 0.0) -> torch.Tensor:
    """Pads the last two axes of (B, C, H, W) for a "SAME" kernel/stride window."""
    pads = same_paddings(x, kernel, stride)
    return F.pad(x, pads, value=value) if any(pads) else x


def standardize_weight(weight: torch.Tensor) -> torch.Tensor:
    """vit_jax's weight standardisation of a (out, in, k, k) kernel, per output channel."""
    centred = weight - weight.mean(dim=(1, 2, 3), keepdim=True)
    std = centred.square().mean(dim=(1, 2, 3), keepdim=True).sqrt()
    return centred / (std + WEIGHT_STANDARDISATION_EPS)


class StdConv(nn.Module):
    """A weight-standardised, bias-free convolution with "SAME" padding (`weight`)."""

    def __init__(self, in_channels: int, out_channels: int, kernel: int, stride: int = 1) -> None:
        super().__init__()
        self.kernel = kernel
        self.stride = stride
        self.weight = nn.Parameter(torch.empty(out_channels, in_channels, kernel, kernel))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weight = standardize_weight(self.weight)
        left, right, top, bottom = same_paddings(x, self.kernel, self.stride)
        if top == bottom and left == right:
            # Symmetric padding: let the convolution pad (no copy of the input).
            return F.conv2d(x, weight, stride=self.stride, padding=(top, left))
        return F.conv2d(F.pad(x, (left, right, top, bottom)), weight, stride=self.stride)


class GroupNorm(nn.Module):
    """Group norm with a per-channel scale and bias (`weight`, `bias`), eps 1e-6."""

    def __init__(self, groups: int, channels: int) -> None:
        super().__init__()
        self.groups = groups
        self.weight = nn.Parameter(torch.ones(channels))
        self.bias = nn.Parameter(torch.zeros(channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.group_norm(x, self.groups, self.weight, self.bias, GROUP_NORM_EPS)


class StemRoot(nn.Module):
    """`conv` (StdConv k x k / s), `gn`, ReLU, then the optional 3 x 3 / 2 max pool."""

    def __init__(self, stem: StemArch) -> None:
        super().__init__()
        self.pool = stem.root_pool
        self.conv = StdConv(3, stem.width, stem.root_kernel, stem.root_stride)
        self.gn = GroupNorm(stem.groups, stem.width)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.gn(self.conv(images)))
        if self.pool:
            # Padded with -inf, as XLA's SAME max pool ignores the padding.
            x = F.max_pool2d(pad_same(x, 3, 2, value=-math.inf), kernel_size=3, stride=2)
        return x


class BottleneckUnit(nn.Module):
    """vit_jax's `ResidualUnit`: `conv1`/`gn1`, `conv2`/`gn2` (strided), `conv3`/`gn3`, and
    `conv_proj`/`gn_proj` when the input's shape differs from the output's."""

    def __init__(
        self, in_channels: int, features: int, stride: int, groups: int, project: bool
    ) -> None:
        super().__init__()
        out_channels = 4 * features
        if project:
            self.conv_proj = StdConv(in_channels, out_channels, 1, stride)
            self.gn_proj = GroupNorm(groups, out_channels)
        self.project = project
        self.conv1 = StdConv(in_channels, features, 1)
        self.gn1 = GroupNorm(groups, features)
        self.conv2 = StdConv(features, features, 3, stride)
        self.gn2 = GroupNorm(groups, features)
        self.conv3 = StdConv(features, out_channels, 1)
        self.gn3 = GroupNorm(groups, out_channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        residual = self.gn_proj(self.conv_proj(x)) if self.project else x
        y = F.relu(self.gn1(self.conv1(x)))
        y = F.relu(self.gn2(self.conv2(y)))
        y = self.gn3(self.conv3(y))
        return F.relu(residual + y)


class StemStage(nn.Module):
    """One stage of bottleneck units `unit1` .. `unitN` (vit_jax's `block{i}`)."""

    def __init__(self, stem: StemArch, index: int) -> None:
        super().__init__()
        features = stem.features(index)
        in_channels = stem.width if index == 0 else 4 * stem.features(index - 1)
        stride = 1 if index == 0 else 2
        self.unit_names = [f"unit{unit + 1}" for unit in range(stem.stages[index])]
        for unit, name in enumerate(self.unit_names):
            first = unit == 0
            self.add_module(
                name,
                BottleneckUnit(
                    in_channels if first else 4 * features,
                    features,
                    stride if first else 1,
                    stem.groups,
                    # vit_jax projects when channels or stride change: only a stage's first unit.
                    project=first and (in_channels != 4 * features or stride != 1),
                ),
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for name in self.unit_names:
            x = getattr(self, name)(x)
        return x


def init_stem_component(
    name: str, stem: StemArch, generator: torch.Generator | None = None
) -> dict[str, torch.Tensor]:
    """Fresh tensors of one stem component with vit_jax's initialisers: kernels lecun-normal
    (Flax `nn.Conv`'s default, fan_in = in channels x kernel area), group-norm scales 1 and
    biases 0, except each unit's last scale (`gn3`), which starts at 0 so a unit starts as
    its shortcut.

    Raises:
        ValueError: `name` is not a component of this stem.
    """
    with torch.device("meta"):
        module = StemRoot(stem) if name == "stem_root" else _stage_of(name, stem)
    tensors: dict[str, torch.Tensor] = {}
    for tensor_name, param in module.named_parameters():
        shape = tuple(param.shape)
        if tensor_name.endswith("gn3.weight"):
            tensors[tensor_name] = torch.zeros(shape)
        elif tensor_name.endswith(".weight") and len(shape) == 4:
            tensors[tensor_name] = lecun_normal(shape, shape[1] * shape[2] * shape[3], generator)
        elif tensor_name.endswith(".weight"):
            tensors[tensor_name] = torch.ones(shape)
        else:
            tensors[tensor_name] = torch.zeros(shape)
    return tensors


def _stage_of(name: str, stem: StemArch) -> StemStage:
    names = stem_component_names(stem)
    if name not in names[1:]:
        raise ValueError(f"unknown stem component {name!r}; known: {names}")
    return StemStage(stem, int(name.removeprefix("stem_block")) - 1)
