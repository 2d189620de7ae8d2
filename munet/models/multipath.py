"""The µNet multipath model: a task's main ViT path combined with headless paths of others.

Computation (the seed's `MultiVitModel`), for P paths and C classes:

    logits_0 = main_path(images)                                  # (B, C), has a head
    weights  = softmax(dense(LayerNorm(logits_0)))                 # (B, P), the router
    logits_k = connector_k(path_k(images))  for k = 1..P-1         # headless path -> (B, C)
    output   = sum_k weights[:, k] * logits_k                      # the value

with two gradient rules: the router's gradient is scaled by `router_lr_mult` (its output is
`m * w + (1 - m) * stop_grad(w)`), and every path's logits get the gradient of a plain sum
(`output = comb(stop_grad(logits), w) - stop_grad(sum) + sum`), so a path with a small
weight still learns at full rate.

Components of a multipath model besides its paths: `multipath_router` (tensors
`norm.weight` (C,), `norm.bias` (C,), `dense.weight` (P, C), `dense.bias` (P,)) and
`head_adapter_path_{k}` for k >= 1 (`weight` (C, D_k), `bias` (C,)). Router and connector
init follow the seed: zero kernels, router bias chosen so the main path starts with weight
`init_main_path_weight`, zero connector bias.

Each path runs at its own architecture and image size: plain and hybrid ViTs (a ResNet stem
before the patch embedding) combine freely, each connector mapping its path's width D_k. What
cannot combine is refused with the path it concerns: a headed extra path, a connector of
another width, images of another size than a path's (pass `{image size: images}` when the
paths' sizes differ).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import torch
import torch.nn.functional as F

from munet.models.arch import VitArch
from munet.models.components import AssembledVit
from munet.models.flops import count_flops
from munet.models.vit import LAYER_NORM_EPS

ROUTER = "multipath_router"


def head_adapter_name(path_index: int) -> str:
    """Component name of the connector of path `path_index` (>= 1)."""
    return f"head_adapter_path_{path_index}"


def init_router(
    num_paths: int, num_classes: int, init_main_path_weight: float
) -> dict[str, torch.Tensor]:
    """Router parameters that give the main path weight `init_main_path_weight` at start.

    Raises:
        ValueError: num_paths < 2, num_classes < 1, or the weight outside (0, 1).
    """
    if num_paths < 2:
        raise ValueError(f"a multipath model needs num_paths >= 2, got {num_paths}")
    if num_classes < 1:
        raise ValueError(f"num_classes must be >= 1, got {num_classes}")
    if not 0.0 < init_main_path_weight < 1.0:
        raise ValueError(f"init_main_path_weight must be in (0, 1), got {init_main_path_weight}")
    odds = init_main_path_weight / (1.0 - init_main_path_weight)
    bias = torch.zeros(num_paths)
    bias[0] = math.log(odds * (num_paths - 1))
    return {
        "norm.weight": torch.ones(num_classes),
        "norm.bias": torch.zeros(num_classes),
        "dense.weight": torch.zeros(num_paths, num_classes),
        "dense.bias": bias,
    }


def init_head_adapter(in_dim: int, num_classes: int) -> dict[str, torch.Tensor]:
    """A zero connector from a headless path's representation (D_k) to the task's classes."""
    return {"weight": torch.zeros(num_classes, in_dim), "bias": torch.zeros(num_classes)}


class MultipathVit:
    """Runs a multipath model from assembled paths and its own router/connector tensors.

    Args:
        paths: P >= 2 assembled ViTs; paths[0] is the main path (with a head), the others are
            headless (num_classes == 0).
        router: `multipath_router` tensors (see the module docstring).
        head_adapters: P-1 connector tensor mappings, for paths[1:].
        router_lr_mult: gradient scale of the router output, in [0, 1].

    Raises:
        ValueError: a headed secondary path, a headless main path, or mismatched shapes.
    """

    def __init__(
        self,
        paths: Sequence[AssembledVit],
        router: Mapping[str, torch.Tensor],
        head_adapters: Sequence[Mapping[str, torch.Tensor]],
        router_lr_mult: float,
    ) -> None:
        if len(paths) < 2:
            raise ValueError(f"a multipath model needs >= 2 paths, got {len(paths)}")
        num_classes = paths[0].arch.num_classes
        if num_classes == 0:
            raise ValueError("the main path (paths[0]) must have a head")
        if not 0.0 <= router_lr_mult <= 1.0:
            raise ValueError(f"router_lr_mult must be in [0, 1], got {router_lr_mult}")
        if len(head_adapters) != len(paths) - 1:
            raise ValueError(
                f"{len(paths)} paths need {len(paths) - 1} head adapters, got {len(head_adapters)}"
            )
        expected_router = {
            "norm.weight": (num_classes,),
            "norm.bias": (num_classes,),
            "dense.weight": (len(paths), num_classes),
            "dense.bias": (len(paths),),
        }
        _check_shapes(ROUTER, router, expected_router)
        for index, (path, adapter) in enumerate(zip(paths[1:], head_adapters, strict=True), 1):
            if path.arch.num_classes:
                raise ValueError(f"path {index} must be headless, it has {path.arch.num_classes}")
            shapes = {"weight": (num_classes, path.arch.width), "bias": (num_classes,)}
            _check_shapes(head_adapter_name(index), adapter, shapes)
        self.paths = list(paths)
        self.router = dict(router)
        self.head_adapters = [dict(adapter) for adapter in head_adapters]
        self.router_lr_mult = router_lr_mult
        self.num_classes = num_classes

    def route(self, main_logits: torch.Tensor) -> torch.Tensor:
        """Path weights (B, P) from the main path's logits, gradient scaled by lr_mult."""
        router = self.router
        normed = F.layer_norm(
            main_logits, (self.num_classes,), router["norm.weight"], router["norm.bias"],
            LAYER_NORM_EPS,
        )  # fmt: skip
        weights = F.linear(normed, router["dense.weight"], router["dense.bias"]).softmax(-1)
        multiplier = self.router_lr_mult
        return multiplier * weights + (1.0 - multiplier) * weights.detach()

    def __call__(self, images: torch.Tensor | Mapping[int, torch.Tensor]) -> torch.Tensor:
        """Args: one (B, 3, S, S) batch for all paths, or {image size: batch} when the paths
        use different image sizes. Returns combined logits (B, C)."""

        def batch_for(index: int, path: AssembledVit) -> torch.Tensor:
            if isinstance(images, torch.Tensor):
                size = tuple(images.shape[-2:])
                if size != (path.image_size, path.image_size):
                    kind = "hybrid ViT" if path.arch.is_hybrid else "ViT"
                    raise ValueError(
                        f"path {index} (a {kind} at image size {path.image_size}) got images "
                        f"of size {size[0]}x{size[1]}; pass {{image size: images}} when the "
                        "paths' image sizes differ"
                    )
                return images
            if path.image_size not in images:
                raise KeyError(f"no images of size {path.image_size}; got {sorted(images)}")
            return images[path.image_size]

        main_logits = self.paths[0](batch_for(0, self.paths[0]))  # (B, C)
        weights = self.route(main_logits)  # (B, P)
        all_logits = [main_logits]
        for index, (path, adapter) in enumerate(
            zip(self.paths[1:], self.head_adapters, strict=True), 1
        ):
            representation = path(batch_for(index, path))  # (B, D_k)
            all_logits.append(F.linear(representation, adapter["weight"], adapter["bias"]))
        stacked = torch.stack(all_logits, dim=-1)  # (B, C, P)
        combined = torch.einsum("bcp,bp->bc", stacked.detach(), weights)
        total = stacked.sum(-1)
        # Value: the weighted combination; gradient to each path: that of the plain sum.
        return combined - total.detach() + total

    def own_tensors(self) -> list[torch.Tensor]:
        """The router's and connectors' tensors (the paths' are theirs)."""
        tensors = list(self.router.values())
        for adapter in self.head_adapters:
            tensors += list(adapter.values())
        return tensors


def count_multipath_flops(paths: Sequence[tuple[VitArch, int]]) -> int:
    """Forward FLOPs (batch 1) of a multipath model: its paths (arch, image size), the router
    dense layer and the connectors (same convention as `count_flops`)."""
    num_classes = paths[0][0].num_classes
    router = 2 * num_classes * len(paths)
    adapters = sum(2 * arch.width * num_classes for arch, _ in paths[1:])
    return sum(count_flops(arch, size) for arch, size in paths) + router + adapters


def _check_shapes(
    component: str, tensors: Mapping[str, torch.Tensor], shapes: Mapping[str, tuple[int, ...]]
) -> None:
    if set(tensors) != set(shapes):
        raise ValueError(f"{component} has tensors {sorted(tensors)}, expected {sorted(shapes)}")
    for name, shape in shapes.items():
        if tuple(tensors[name].shape) != shape:
            raise ValueError(
                f"{component}.{name} has shape {tuple(tensors[name].shape)}, expected {shape}"
            )
