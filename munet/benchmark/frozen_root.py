"""The methods on the frozen pretrained root that are not munet paths: residual adapters
after each sublayer (Houlsby et al. 2019; the model is munet.models.houlsby_vit) with a fresh
head, and what they need to start from the root and be measured.

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
    init_components,
    resize_posembed,
)
from munet.models.arch import VitArch
from munet.models.components import component_names
from munet.models.houlsby_vit import HoulsbyAdaptedVit


def frozen_root_adapters(vit: VisionTransformer, bottleneck: int) -> HoulsbyAdaptedVit:
    """The ``adapters`` method's model: ``vit`` with an adapter after each sublayer
    (Houlsby's placement), every ViT parameter frozen except the head's.

    Args:
        vit: the ViT built from the root (:func:`vit_from_root`); frozen in place.
        bottleneck: the adapters' hidden width.
    """
    for name, param in vit.named_parameters():
        param.requires_grad_(name.startswith("head."))
    return HoulsbyAdaptedVit(vit, bottleneck)


def trainable_parameters(model: nn.Module) -> list[nn.Parameter]:
    """The parameters that train (``requires_grad``), in the model's order."""
    return [p for p in model.parameters() if p.requires_grad]


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
    counted, so ViTs use :meth:`HoulsbyAdaptedVit.flops` and ``count_flops``)."""
    was_training = model.training
    model.eval()
    images = torch.zeros(1, 3, image_size, image_size)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(images)
    model.train(was_training)
    return int(counter.get_total_flops())


def count_parameters(parameters: Any) -> int:
    return int(sum(p.numel() for p in parameters))
