"""The methods on the frozen pretrained root that are not munet paths: residual adapters
(Houlsby et al. 2019) with a fresh head, and the model pieces they need.

Houlsby's placement: in every encoder block, one adapter on the attention sublayer's output
and one on the MLP sublayer's output, each before its residual add::

    x = x + adapter_a(attn(norm1(x)));  x = x + adapter_m(mlp(norm2(x)))

The root's components stay frozen (LayerNorms included: Houlsby also trains them; here only
adapters and head train, so "parameters added" is exactly adapters + head).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from munet.models import (
    VisionTransformer,
    build_model,
    count_flops,
    init_components,
    resize_posembed,
)
from munet.models.adapters import BottleneckAdapter
from munet.models.arch import VitArch
from munet.models.components import component_names


class AdaptedVit(nn.Module):
    """A ViT with a :class:`BottleneckAdapter` after each block's attention and MLP sublayers.

    Args:
        vit: the ViT (its parameters are frozen here, except the head's).
        bottleneck: the adapters' hidden width.
    """

    def __init__(self, vit: VisionTransformer, bottleneck: int) -> None:
        super().__init__()
        self.vit = vit
        for name, param in vit.named_parameters():
            param.requires_grad_(name.startswith("head."))
        width = vit.arch.width
        self.blocks = [getattr(vit, f"encoderblock_{i}") for i in range(vit.arch.num_layers)]
        self.adapters = nn.ModuleList(
            BottleneckAdapter(width, bottleneck) for _ in range(2 * len(self.blocks))
        )

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        vit = self.vit
        x = vit.embed_tokens(images)  # (B, 1+N, D), through a hybrid's stem
        for index, block in enumerate(self.blocks):
            x = x + self.adapters[2 * index](block.attn(block.norm1(x)))
            x = x + self.adapters[2 * index + 1](block.mlp(block.norm2(x)))
        return vit.head(vit.encoder_norm(x[:, 0]))

    def trainable_parameters(self) -> list[nn.Parameter]:
        return [p for p in self.parameters() if p.requires_grad]

    def flops(self) -> int:
        """Forward FLOPs of one image: the ViT's (munet.models.flops.count_flops, attention
        included) plus each adapter's two matmuls on every token."""
        vit = self.vit
        bottleneck = self.adapters[0].down.out_features if len(self.adapters) else 0
        tokens = vit.arch.num_tokens(vit.image_size)
        per_adapter = 2 * 2 * tokens * vit.arch.width * bottleneck
        return count_flops(vit.arch, vit.image_size) + len(self.adapters) * per_adapter


def vit_from_root(
    root_tensors: Mapping[str, Mapping[str, torch.Tensor]],
    arch: VitArch,
    image_size: int,
    generator: torch.Generator,
) -> VisionTransformer:
    """A ViT of ``arch`` holding copies of the root's components and a fresh head (the
    agents' initialisation); the root's position embedding is resized to ``image_size``.

    Raises:
        ValueError: the root lacks a component ``arch`` needs.
    """
    fresh = init_components(arch.replace(num_layers=0), image_size, generator)
    components: dict[str, dict[str, torch.Tensor]] = {}
    for name in component_names(arch):
        if name == "head":
            components[name] = fresh["head"]
            continue
        if name not in root_tensors:
            raise ValueError(
                f"the root has no component {name!r} (it has {', '.join(sorted(root_tensors))})"
            )
        tensors = {k: v.detach().clone() for k, v in root_tensors[name].items()}
        if name == "posembed_input":
            tensors["pos_embedding"] = resize_posembed(
                tensors["pos_embedding"], arch.grid_size(image_size)
            )
        components[name] = tensors
    return build_model(arch, image_size, components)


def forward_flops(model: nn.Module, image_size: int) -> int:
    """FLOPs of one image's forward, counted on the real model (matmuls and convolutions, as
    munet.models.flops; for convolutional models: PyTorch's CPU attention kernel is not
    counted, so ViTs use :meth:`AdaptedVit.flops` and ``count_flops``)."""
    was_training = model.training
    model.eval()
    images = torch.zeros(1, 3, image_size, image_size)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(images)
    model.train(was_training)
    return int(counter.get_total_flops())


def count_parameters(parameters: Any) -> int:
    return int(sum(p.numel() for p in parameters))
