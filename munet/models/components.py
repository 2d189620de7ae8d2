"""The µNet component split of a ViT, fresh initialisation, and models run from components.

A *components mapping* is `{component name: {tensor name: tensor}}`. Component names (the
seed's split): `embedding`, `cls`, `posembed_input`, `encoderblock_{i}`, `encoder_norm`,
`head` (only when num_classes > 0); a hybrid ViT's stem comes first as `stem_root` and one
component per stage, `stem_block1` .. (see `munet.models.stem` for their tensors). Tensor
names inside each component are stable:

    embedding         weight (D, C, p, p), bias (D,)     C = 3, or the stem's channels
    cls               token (1, 1, D)
    posembed_input    pos_embedding (1, 1+N, D)          N = (image_size / p) ** 2
    encoderblock_{i}  norm1.weight (D,), norm1.bias (D,),
                      attn.qkv.weight (3D, D), attn.qkv.bias (3D,)   rows: q | k | v, heads
                      attn.proj.weight (D, D), attn.proj.bias (D,)   contiguous within each
                      norm2.weight (D,), norm2.bias (D,),
                      mlp.fc1.weight (M, D), mlp.fc1.bias (M,),
                      mlp.fc2.weight (D, M), mlp.fc2.bias (D,)
    encoder_norm      weight (D,), bias (D,)
    head              weight (C, D), bias (C,)

(PyTorch layouts: Linear weights are (out, in).) A flat name is `"<component>.<tensor>"`,
exactly the parameter names of `VisionTransformer`.

Tensors of different paths may be the same objects: a frozen shared component is a set of
tensors with `requires_grad=False` held by several mappings; a trainable one has
`requires_grad=True` and belongs to one path's optimiser.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping

import torch
from torch import nn
from torch.func import functional_call

from munet.models.arch import VitArch
from munet.models.initializers import lecun_normal, xavier_uniform
from munet.models.stem import init_stem_component, stem_component_names
from munet.models.vit import VisionTransformer

Components = dict[str, dict[str, torch.Tensor]]
"""{component name: {tensor name: tensor}}."""


def component_names(arch: VitArch) -> list[str]:
    """Component names of a model of `arch`, in forward order (a hybrid's stem first)."""
    names = [*stem_component_names(arch.stem), "embedding", "cls", "posembed_input"]
    names += [f"encoderblock_{index}" for index in range(arch.num_layers)]
    names.append("encoder_norm")
    if arch.num_classes:
        names.append("head")
    return names


@functools.lru_cache(maxsize=256)
def meta_model(arch: VitArch, image_size: int) -> VisionTransformer:
    """A parameter-less (meta-device) model: a template for shapes and functional calls."""
    with torch.device("meta"):
        return VisionTransformer(arch, image_size)


def component_shapes(arch: VitArch, image_size: int) -> dict[str, dict[str, tuple[int, ...]]]:
    """Expected tensor shapes, {component: {tensor name: shape}}.

    Raises:
        ValueError: image_size not a multiple of the patch size.
    """
    return {
        component: {name: tuple(tensor.shape) for name, tensor in tensors.items()}
        for component, tensors in split_components(meta_model(arch, image_size)).items()
    }


def split_components(source: nn.Module | Mapping[str, torch.Tensor]) -> Components:
    """Groups a model's parameters (or a flat `{"comp.tensor": t}` mapping) by component.

    The tensors are the same objects (no copies), so a split module's parameters stay shared.

    Raises:
        ValueError: a flat name without a component prefix.
    """
    flat = dict(source.named_parameters()) if isinstance(source, nn.Module) else source
    components: Components = {}
    for flat_name, tensor in flat.items():
        component, dot, name = flat_name.partition(".")
        if not dot:
            raise ValueError(f"tensor name {flat_name!r} has no '<component>.' prefix")
        components.setdefault(component, {})[name] = tensor
    return components


def copy_components(source: nn.Module | Components) -> Components:
    """Detached copies (new storage, `requires_grad=False`) of a model's or mapping's tensors."""
    components = split_components(source) if isinstance(source, nn.Module) else source
    return {
        component: {name: tensor.detach().clone() for name, tensor in tensors.items()}
        for component, tensors in components.items()
    }


def merge_components(
    components: Mapping[str, Mapping[str, torch.Tensor]],
) -> dict[str, torch.Tensor]:
    """Inverse of `split_components`: a flat `{"comp.tensor": tensor}` dict (same objects)."""
    return {
        f"{component}.{name}": tensor
        for component, tensors in components.items()
        for name, tensor in tensors.items()
    }


def check_components(
    components: Mapping[str, Mapping[str, torch.Tensor]], arch: VitArch, image_size: int
) -> None:
    """Checks that a mapping has exactly the components, tensors and shapes of `arch`.

    Raises:
        ValueError: naming the first missing/unexpected component or tensor, or the tensor whose
            shape differs (with both shapes).
    """
    expected = component_shapes(arch, image_size)
    missing = [name for name in expected if name not in components]
    unexpected = [name for name in components if name not in expected]
    if missing or unexpected:
        raise ValueError(
            f"components do not match {arch} at image size {image_size}: "
            f"missing {missing}, unexpected {unexpected}"
        )
    for component, shapes in expected.items():
        tensors = components[component]
        if set(tensors) != set(shapes):
            raise ValueError(
                f"component {component!r} has tensors {sorted(tensors)}, expected {sorted(shapes)}"
            )
        for name, shape in shapes.items():
            if tuple(tensors[name].shape) != shape:
                raise ValueError(
                    f"tensor {component}.{name} has shape {tuple(tensors[name].shape)}, "
                    f"expected {shape} for {arch} at image size {image_size}"
                )


def init_components(
    arch: VitArch, image_size: int, generator: torch.Generator | None = None
) -> Components:
    """Fresh parameters with the initialisers of Google's `vit_jax` model (the seed's init).

    - a hybrid's stem: see `munet.models.stem.init_stem_component`
    - embedding: weight lecun-normal (normal truncated at 2 std, fan_in = C p^2 with C = 3,
      or the stem's output channels), bias 0
    - cls: zeros; posembed_input: normal(std 0.02)
    - attention: q, k, v and output kernels each xavier-uniform over (D, D) (Flax flattens
      the head axes), biases 0
    - MLP: kernels xavier-uniform, biases normal(std 1e-6)
    - LayerNorms: scale 1, bias 0
    - head: weight and bias 0 (vit_jax's zero-initialised head)

    Args:
        arch: the architecture.
        image_size: square image side (sets the position embedding length).
        generator: random source; pass a seeded `torch.Generator` for determinism.

    Returns:
        A new components mapping of float32 CPU tensors with `requires_grad=False`.
    """
    return {
        name: init_component(name, arch, image_size, generator) for name in component_names(arch)
    }


def init_component(
    name: str, arch: VitArch, image_size: int, generator: torch.Generator | None = None
) -> dict[str, torch.Tensor]:
    """Fresh tensors of one component, initialised as in `init_components` (and drawn in the
    same order, so `init_components` equals calling this for each name in turn).

    Raises:
        ValueError: `name` is not a component of `arch`.
    """
    width, mlp_dim = arch.width, arch.mlp_dim
    if name in stem_component_names(arch.stem):
        return init_stem_component(name, arch.stem, generator)
    if name == "embedding":
        channels = arch.embedding_channels
        shape = (width, channels, arch.patch_size, arch.patch_size)
        weight = lecun_normal(shape, channels * arch.patch_size**2, generator)
        return {"weight": weight, "bias": torch.zeros(width)}
    if name == "cls":
        return {"token": torch.zeros(1, 1, width)}
    if name == "posembed_input":
        posembed = torch.empty(1, arch.num_tokens(image_size), width)
        return {"pos_embedding": posembed.normal_(0.0, 0.02, generator=generator)}
    if name == "encoder_norm":
        return {"weight": torch.ones(width), "bias": torch.zeros(width)}
    if name == "head" and arch.num_classes:
        return {
            "weight": torch.zeros(arch.num_classes, width),
            "bias": torch.zeros(arch.num_classes),
        }
    if name.startswith("encoderblock_") and name in component_names(arch):
        qkv = [xavier_uniform((width, width), generator) for _ in range(3)]
        return {
            "norm1.weight": torch.ones(width),
            "norm1.bias": torch.zeros(width),
            "attn.qkv.weight": torch.cat(qkv, dim=0),
            "attn.qkv.bias": torch.zeros(3 * width),
            "attn.proj.weight": xavier_uniform((width, width), generator),
            "attn.proj.bias": torch.zeros(width),
            "norm2.weight": torch.ones(width),
            "norm2.bias": torch.zeros(width),
            "mlp.fc1.weight": xavier_uniform((mlp_dim, width), generator),
            "mlp.fc1.bias": torch.empty(mlp_dim).normal_(0.0, 1e-6, generator=generator),
            "mlp.fc2.weight": xavier_uniform((width, mlp_dim), generator),
            "mlp.fc2.bias": torch.empty(width).normal_(0.0, 1e-6, generator=generator),
        }
    raise ValueError(f"unknown component {name!r} for {arch}; known: {component_names(arch)}")


def load_components(model: VisionTransformer, components: Components) -> VisionTransformer:
    """Copies a components mapping's values into a plain model's own parameters.

    Raises:
        ValueError: the mapping does not match the model's architecture (see
            `check_components`).
    """
    check_components(components, model.arch, model.image_size)
    params = dict(model.named_parameters())
    with torch.no_grad():
        for flat_name, tensor in merge_components(components).items():
            params[flat_name].copy_(tensor)
    return model


def build_model(arch: VitArch, image_size: int, components: Components) -> VisionTransformer:
    """A plain `VisionTransformer` holding copies of `components` (no sharing)."""
    return load_components(VisionTransformer(arch, image_size), components)


class AssembledVit:
    """A ViT run directly on the tensors of a components mapping.

    The tensors are bound once into a private module instance, so a call costs exactly a
    plain module's forward: no per-step dict building, copying or re-parametrisation.
    Gradients land in the mapping's own tensors (those with `requires_grad=True`); frozen
    shared tensors (`requires_grad=False`) get none and are never written.

    Move tensors to a device before assembling; the assembled model does not move them.
    In-place updates of the tensors (an optimiser step) are seen; replacing a tensor in the
    mapping after assembly is not: assemble again. There is no dropout, so no train/eval mode.

    Args:
        arch: the architecture.
        image_size: square image side.
        components: the mapping; checked against `arch` and `image_size`.

    Raises:
        ValueError: the mapping does not match (see `check_components`).
    """

    def __init__(self, arch: VitArch, image_size: int, components: Components) -> None:
        check_components(components, arch, image_size)
        self.arch = arch
        self.image_size = image_size
        self.components = components
        with torch.device("meta"):
            self.module = VisionTransformer(arch, image_size)
        for flat_name, tensor in merge_components(components).items():
            owner_name, _, leaf = flat_name.rpartition(".")
            # Bound as-is (not wrapped in nn.Parameter) so autograd tracks the caller's leaves;
            # torch.func.functional_call swaps tensors the same way, per call.
            self.module.get_submodule(owner_name)._parameters[leaf] = tensor

    def __call__(self, images: torch.Tensor) -> torch.Tensor:
        """Args: images (B, 3, S, S). Returns logits (B, C) or representations (B, D)."""
        return self.module(images)

    def named_tensors(self) -> Iterator[tuple[str, torch.Tensor]]:
        """(flat name, tensor) of every bound tensor, in forward order."""
        return iter(merge_components(self.components).items())

    def trainable_tensors(self) -> list[torch.Tensor]:
        """The tensors that require grad (what an optimiser should update)."""
        return [tensor for _, tensor in self.named_tensors() if tensor.requires_grad]

    def frozen_tensors(self) -> list[torch.Tensor]:
        """The tensors that do not require grad (shared, never updated here)."""
        return [tensor for _, tensor in self.named_tensors() if not tensor.requires_grad]


def forward_components(arch: VitArch, components: Components, images: torch.Tensor) -> torch.Tensor:
    """One-off forward from a components mapping (torch.func.functional_call on a template).

    For repeated calls (training), build an `AssembledVit` once instead. Not thread-safe:
    concurrent calls share the template module.

    Raises:
        ValueError: the mapping does not match `arch` at the images' size.
    """
    image_size = images.shape[-1]
    check_components(components, arch, image_size)
    template = meta_model(arch, image_size)
    return functional_call(template, merge_components(components), (images,), strict=True)
