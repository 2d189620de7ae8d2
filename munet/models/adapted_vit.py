"""A ViT with residual bottleneck adapters after some of its encoder blocks (munet's adapter
mutation, beyond the seed; munet.agents.adapter_mutation decides where they go). The
benchmark's ``adapters`` baseline places them after each sublayer instead (Houlsby's
placement, munet.models.houlsby_vit); both count an adapter's FLOPs with `adapter_flops`.

An adapter after block ``i`` is the component ``adapter_{i}`` with the tensors of a
`munet.models.adapters.BottleneckAdapter`: ``down.weight (b, D)``, ``down.bias (b,)``,
``up.weight (D, b)``, ``up.bias (D,)``. A model with adapters is a `VisionTransformer` whose
forward runs ``encoderblock_i`` then ``adapter_i``; its state-dict names are the component
names, so the same tensors load into the exported module (munet.models.export_tree, the
``adapters`` key of a ``vit`` node).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import torch

from munet.models.adapters import BottleneckAdapter
from munet.models.arch import VitArch
from munet.models.components import Components, check_components, merge_components
from munet.models.vit import VisionTransformer

ADAPTER_PREFIX = "adapter_"


def adapter_name(block_index: int) -> str:
    """The component name of the adapter after ``encoderblock_{block_index}``."""
    return f"{ADAPTER_PREFIX}{block_index}"


def adapter_block_index(name: str) -> int | None:
    """The block index of an adapter component name (``adapter_3`` -> 3), else None."""
    prefix, _, number = name.rpartition("_")
    if f"{prefix}_" != ADAPTER_PREFIX or not number.isdigit():
        return None
    return int(number)


def adapter_shapes(width: int, bottleneck: int) -> dict[str, tuple[int, ...]]:
    """{tensor name: shape} of an adapter component."""
    return {
        "down.weight": (bottleneck, width),
        "down.bias": (bottleneck,),
        "up.weight": (width, bottleneck),
        "up.bias": (width,),
    }


def init_adapter(
    width: int, bottleneck: int, generator: torch.Generator | None = None
) -> dict[str, torch.Tensor]:
    """Fresh adapter tensors: ``down`` xavier-uniform (bias 0), ``up`` zero, so the adapter
    starts as the identity."""
    limit = math.sqrt(6.0 / (width + bottleneck))
    return {
        "down.weight": torch.empty(bottleneck, width).uniform_(-limit, limit, generator=generator),
        "down.bias": torch.zeros(bottleneck),
        "up.weight": torch.zeros(width, bottleneck),
        "up.bias": torch.zeros(width),
    }


def adapter_flops(arch: VitArch, image_size: int, bottleneck: int) -> int:
    """Forward FLOPs of one adapter on one image (munet.models.flops' convention: the two
    matmuls over every token, 2 * tokens * width * bottleneck each)."""
    return 2 * 2 * arch.num_tokens(image_size) * arch.width * bottleneck


class AdaptedVisionTransformer(VisionTransformer):
    """A `VisionTransformer` with a `BottleneckAdapter` after the blocks of ``adapters`` (on a
    whole block's output: munet's adapter mutation).

    Args:
        arch: the architecture.
        image_size: side of the square input images.
        adapters: {block index: bottleneck width}.

    Raises:
        ValueError: a block index outside the architecture's blocks.
    """

    def __init__(self, arch: VitArch, image_size: int, adapters: Mapping[int, int]) -> None:
        super().__init__(arch, image_size)
        bad = sorted(i for i in adapters if not 0 <= int(i) < arch.num_layers)
        if bad:
            raise ValueError(
                f"adapters after blocks {bad}; the model has blocks 0..{arch.num_layers - 1}"
            )
        self.adapters = {int(i): int(b) for i, b in adapters.items()}
        order = []
        for index in range(arch.num_layers):
            order.append(f"encoderblock_{index}")
            if index in self.adapters:
                name = adapter_name(index)
                self.add_module(name, BottleneckAdapter(arch.width, self.adapters[index]))
                order.append(name)
        # The forward runs these submodules in turn between the embeddings and the norm.
        self._block_names = order


def split_adapters(components: Mapping[str, Mapping[str, torch.Tensor]]) -> tuple[dict, dict]:
    """(the ViT's components, {block index: adapter tensors}) of a mapping."""
    vit: dict = {}
    adapters: dict = {}
    for name, tensors in components.items():
        index = adapter_block_index(name)
        if index is None:
            vit[name] = tensors
        else:
            adapters[index] = tensors
    return vit, adapters


class AssembledAdaptedVit:
    """An adapted ViT run directly on the tensors of a components mapping (as
    `munet.models.AssembledVit`: the tensors are bound, not copied; gradients land in those
    that require grad).

    Raises:
        ValueError: the ViT's components do not match ``arch``, or an adapter's tensors do
            not have the shapes of a bottleneck adapter of the model's width.
    """

    def __init__(self, arch: VitArch, image_size: int, components: Components) -> None:
        vit, adapters = split_adapters(components)
        check_components(vit, arch, image_size)
        widths = {}
        for index, tensors in adapters.items():
            bottleneck = int(tensors["down.weight"].shape[0]) if "down.weight" in tensors else 0
            expected = adapter_shapes(arch.width, bottleneck)
            got = {n: tuple(t.shape) for n, t in tensors.items()}
            if got != expected:
                raise ValueError(
                    f"component {adapter_name(index)!r} has tensors {got}; expected {expected}"
                )
            widths[index] = bottleneck
        self.arch = arch
        self.image_size = image_size
        self.components = components
        with torch.device("meta"):
            self.module = AdaptedVisionTransformer(arch, image_size, widths)
        for flat_name, tensor in merge_components(components).items():
            owner_name, _, leaf = flat_name.rpartition(".")
            self.module.get_submodule(owner_name)._parameters[leaf] = tensor

    def __call__(self, images: torch.Tensor) -> torch.Tensor:
        """Args: images (B, 3, S, S). Returns logits (B, C) or representations (B, D)."""
        return self.module(images)
