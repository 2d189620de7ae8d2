"""FLOPs and parameter counts of a ViT at a given image size, cached per (arch, image size).

Convention (the seed scores paths with XLA's HLO cost analysis of a batch-1 forward): one
forward pass on one image; a matmul of (M, K) by (K, N) counts 2*M*N*K, a convolution
2 * output elements * (in channels * kernel area), and attention its two batched matmuls
(scores q k^T and the weighted sum of values). Element-wise work (bias adds, LayerNorm,
GELU, softmax, residual adds) is not counted; XLA's count includes it, which adds roughly
1-3% for these models, so µNet's `base_flops` constants stay comparable at that precision.

`count_flops` measures the actual forward with `torch.utils.flop_counter` on meta tensors
(no memory, no compute), so it follows the model code; `analytic_flops` is the closed form
the tests hold it to.
"""

from __future__ import annotations

import functools
import math

import torch
from torch.utils.flop_counter import FlopCounterMode

from munet.models.arch import StemArch, VitArch
from munet.models.components import component_shapes, meta_model


@functools.lru_cache(maxsize=4096)
def count_flops(arch: VitArch, image_size: int) -> int:
    """Forward FLOPs of one image (see the module docstring for the convention).

    Raises:
        ValueError: image_size not a multiple of the patch size.
    """
    model = meta_model(arch, image_size)
    images = torch.empty(1, 3, image_size, image_size, device="meta")
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(images)
    return int(counter.get_total_flops())


def analytic_stem_flops(stem: StemArch, image_size: int) -> int:
    """A hybrid stem's convolutions in closed form (its pool and norms are not counted)."""
    side = math.ceil(image_size / stem.root_stride)
    flops = 2 * side * side * stem.width * 3 * stem.root_kernel**2
    if stem.root_pool:
        side = math.ceil(side / 2)
    channels = stem.width
    for index, units in enumerate(stem.stages):
        features, out = stem.features(index), 4 * stem.features(index)
        for unit in range(units):
            stride = 2 if index and not unit else 1
            in_side, side = side, math.ceil(side / stride)
            flops += 2 * in_side * in_side * features * channels  # conv1, 1 x 1
            flops += 2 * side * side * features * features * 9  # conv2, 3 x 3, strided
            flops += 2 * side * side * out * features  # conv3, 1 x 1
            if unit == 0 and (channels != out or stride != 1):
                flops += 2 * side * side * out * channels  # conv_proj, 1 x 1, strided
            channels = out
    return flops


def analytic_flops(arch: VitArch, image_size: int) -> int:
    """The same count in closed form (matmuls, convolutions and attention only)."""
    grid = arch.grid_size(image_size)
    patches = grid * grid
    tokens = patches + 1
    width, mlp_dim = arch.width, arch.mlp_dim
    stem = analytic_stem_flops(arch.stem, image_size) if arch.stem else 0
    embedding = stem + 2 * patches * width * arch.embedding_channels * arch.patch_size**2
    per_block = (
        2 * tokens * width * 3 * width  # q, k, v projections
        + 2 * 2 * tokens * tokens * width  # scores and weighted values, all heads
        + 2 * tokens * width * width  # output projection
        + 2 * 2 * tokens * width * mlp_dim  # the two MLP layers
    )
    head = 2 * width * arch.num_classes
    return embedding + arch.num_layers * per_block + head


@functools.lru_cache(maxsize=4096)
def count_params(arch: VitArch, image_size: int) -> int:
    """Number of parameters (the position embedding depends on the image size)."""
    return sum(count_component_params(arch, image_size).values())


@functools.lru_cache(maxsize=4096)
def _component_param_counts(arch: VitArch, image_size: int) -> tuple[tuple[str, int], ...]:
    counts = []
    for component, shapes in component_shapes(arch, image_size).items():
        total = 0
        for shape in shapes.values():
            size = 1
            for dim in shape:
                size *= dim
            total += size
        counts.append((component, total))
    return tuple(counts)


def count_component_params(arch: VitArch, image_size: int) -> dict[str, int]:
    """Parameters per component, {component name: count} (cached)."""
    return dict(_component_param_counts(arch, image_size))
