"""The model tree of an export folder, built into plain modules.

{"type": "vit", "arch": VitArch.to_dict(), "image_size": S[, "adapters": {"i": b, ...}]}
    a `VisionTransformer`; its state-dict names are the component names. With `adapters`
    (munet's adapter mutation), a bottleneck adapter of width b after block i
    (`munet.models.adapted_vit.AdaptedVisionTransformer`, components `adapter_<i>`).
{"type": "multipath", "router_lr_mult": m, "paths": {"path_0": <vit node>, ...}}
    the seed's multipath model (`munet.models.multipath`): the subpaths by slot, plus the
    `multipath_router` and `head_adapter_path_k` components.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from munet.models.adapted_vit import AdaptedVisionTransformer
from munet.models.arch import VitArch
from munet.models.multipath import ROUTER, MultipathVit, head_adapter_name
from munet.models.vit import LAYER_NORM_EPS, VisionTransformer


class ExportError(ValueError):
    """An export folder is missing, malformed, or its tensors do not match its config."""


class _Router(nn.Module):
    """The multipath router's tensors as a module: `norm` (LayerNorm) and `dense` (Linear)."""

    def __init__(self, num_classes: int, num_paths: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(num_classes, eps=LAYER_NORM_EPS)
        self.dense = nn.Linear(num_classes, num_paths)


class MultipathModule(nn.Module):
    """A multipath model as a plain module: subpaths by slot, router and connectors.

    The forward is `munet.models.multipath.MultipathVit` run on this module's parameters, so
    the logits are those of the system's multipath model to the last bit.

    Args:
        paths: {slot: module}, `path_0` the main path (with a head), the others headless.
        router_lr_mult: the router's gradient scale (kept for fine-tuning; no effect on values).
    """

    def __init__(self, paths: Mapping[str, VisionTransformer], router_lr_mult: float) -> None:
        super().__init__()
        self.slots = sorted(paths, key=_slot_index)
        if not self.slots or self.slots[0] != "path_0":
            raise ExportError(f"multipath slots {self.slots}: expected path_0, path_1, ...")
        for slot in self.slots:
            self.add_module(slot, paths[slot])
        main = paths["path_0"]
        num_classes = main.arch.num_classes
        self.add_module(ROUTER, _Router(num_classes, len(self.slots)))
        for index, slot in enumerate(self.slots[1:], 1):
            width = paths[slot].arch.width
            self.add_module(head_adapter_name(index), nn.Linear(width, num_classes))
        self.router_lr_mult = float(router_lr_mult)

    def forward(self, images: torch.Tensor | Mapping[int, torch.Tensor]) -> torch.Tensor:
        """Args: (B, 3, S, S) images, or {image size: images} when subpaths differ in size.
        Returns logits (B, C)."""
        router = getattr(self, ROUTER)
        model = MultipathVit(
            [getattr(self, slot) for slot in self.slots],
            {
                "norm.weight": router.norm.weight,
                "norm.bias": router.norm.bias,
                "dense.weight": router.dense.weight,
                "dense.bias": router.dense.bias,
            },
            [
                {"weight": adapter.weight, "bias": adapter.bias}
                for adapter in (
                    getattr(self, head_adapter_name(i)) for i in range(1, len(self.slots))
                )
            ],
            self.router_lr_mult,
        )
        return model(images)


def _slot_index(slot: str) -> int:
    prefix, _, number = slot.rpartition("_")
    if prefix != "path" or not number.isdigit():
        raise ExportError(f"multipath slot {slot!r}: expected path_<k>")
    return int(number)


def build_module(node: Mapping[str, Any]) -> nn.Module:
    """An untrained module of a model tree node (see the module docstring).

    Raises:
        ExportError: an unknown node type or a malformed node.
    """
    kind = node.get("type")
    try:
        if kind == "vit":
            arch, image_size = VitArch.from_dict(node["arch"]), int(node["image_size"])
            if node.get("adapters"):
                adapters = {int(i): int(b) for i, b in node["adapters"].items()}
                return AdaptedVisionTransformer(arch, image_size, adapters)
            return VisionTransformer(arch, image_size)
        if kind == "multipath":
            paths = {}
            for slot, sub in node["paths"].items():
                if sub.get("type") != "vit":
                    raise ExportError(f"multipath slot {slot!r}: a subpath must be a vit node")
                paths[slot] = build_module(sub)
            return MultipathModule(paths, float(node["router_lr_mult"]))
    except (KeyError, TypeError, ValueError) as error:
        if isinstance(error, ExportError):
            raise
        raise ExportError(f"malformed model node {kind!r}: {error!r}") from None
    raise ExportError(f"unknown model node type {kind!r}; known: vit, multipath")


def model_input_sizes(node: Mapping[str, Any]) -> list[int]:
    """The image sizes a model tree reads, in slot order (one for a ViT)."""
    if node["type"] == "vit":
        return [int(node["image_size"])]
    sizes: list[int] = []
    for slot in sorted(node["paths"], key=_slot_index):
        sizes += model_input_sizes(node["paths"][slot])
    return list(dict.fromkeys(sizes))
