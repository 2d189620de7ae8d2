"""munet.models: the ViT model family of µNet paths.

Public API (names are stable; see each function's docstring):

Architectures (munet.models.arch)
    VitArch(width, num_layers, num_heads, mlp_dim, patch_size, num_classes=0)
        frozen, hashable; VitArch.from_size("Ti/16", num_layers=3, num_classes=10);
        .to_dict() / VitArch.from_dict(d); .grid_size(image_size); .num_tokens(image_size)
    VitSize, vit_size(name), vit_sizes(), register_vit_size(name, size)
        sizes: "Ti/16", "S/16", "B/16", "L/16" and the CPU sizes "mu/4", "mu/8"

Model (munet.models.vit)
    VisionTransformer(arch, image_size): nn.Module equal to Google's vit_jax ViT; its
        submodules are the components, so parameter names are "<component>.<tensor>".

Components (munet.models.components)
    Components = dict[str, dict[str, Tensor]]   {component: {tensor name: tensor}}
    component_names(arch) -> list[str]
    component_shapes(arch, image_size) -> {component: {tensor: shape}}
    init_components(arch, image_size, generator=None) -> Components   (vit_jax initialisers)
    init_component(name, arch, image_size, generator=None) -> {tensor: tensor}  (one of them)
    split_components(model_or_flat) -> Components     (same tensor objects)
    merge_components(components) -> {"comp.tensor": tensor}
    copy_components(model_or_components) -> Components (detached copies)
    check_components(components, arch, image_size)     (ValueError on mismatch)
    AssembledVit(arch, image_size, components)         callable; fast training forward
        .trainable_tensors(), .frozen_tensors(), .named_tensors(), .module
    forward_components(arch, components, images)       one-off functional forward
    build_model(arch, image_size, components) / load_components(model, components)

Cost (munet.models.flops)
    count_flops(arch, image_size) -> int   forward FLOPs, batch 1, matmul = 2*M*N*K; cached
    analytic_flops(arch, image_size) -> int
    count_params(arch, image_size) -> int; count_component_params(arch, image_size)

Multipath (munet.models.multipath): the seed's MultiVitModel
    MultipathVit(paths, router, head_adapters, router_lr_mult)  callable on images or
        {image size: images}; init_router(num_paths, num_classes, init_main_path_weight),
        init_head_adapter(in_dim, num_classes), count_multipath_flops([(arch, size), ...])

Export (munet.models.export, munet.models.predict): standalone model folders
    save_exported(out_dir, model_tree, tensors, preprocessing=, class_names=, provenance=,
    metrics=); load_exported(dir) -> (nn.Module, Preprocessing); ExportError;
    collect_images(inputs), predict_files(model, preprocess, files, top_k=, ...)

Checkpoints (munet.models.checkpoints: a module per format; .posembed, .registry)
    load_checkpoint(path, arch, image_size) -> Components   (.npz any layout; timm, Hugging
        Face or munet state dicts in .safetensors/.pth/.bin; Hugging Face save_pretrained folders)
    read_checkpoint(path, max_layers=None) -> RawCheckpoint;  CheckpointError
    resize_posembed(pos_embedding, new_grid, num_prefix_tokens=1)
    save_npz(path, components, arch, prefix=, big_vision_names=, scanned=)
    save_safetensors(path, components, naming="munet"|"timm")
    CheckpointSpec, checkpoint_specs(), checkpoint_spec(name)   presets Vit, VitB, VitT3;
        augreg hybrids R_Ti_16, R26_S_32, R50_L_32
    default_checkpoint_dir(), find_checkpoint(name, directory=None)
    fetch_checkpoint(name, dest=None) -> Path;  CheckpointUnavailable
    load_registered_checkpoint(name, image_size=None, num_classes=0, num_layers=None,
                               directory=None) -> Components
"""

from munet.models.arch import VitArch, VitSize, register_vit_size, vit_size, vit_sizes
from munet.models.checkpoints import (
    CheckpointError,
    RawCheckpoint,
    load_checkpoint,
    read_checkpoint,
    save_npz,
    save_safetensors,
)
from munet.models.components import (
    AssembledVit,
    Components,
    build_model,
    check_components,
    component_names,
    component_shapes,
    copy_components,
    forward_components,
    init_component,
    init_components,
    load_components,
    merge_components,
    split_components,
)
from munet.models.flops import analytic_flops, count_component_params, count_flops, count_params
from munet.models.multipath import (
    MultipathVit,
    count_multipath_flops,
    init_head_adapter,
    init_router,
)
from munet.models.posembed import resize_posembed
from munet.models.registry import (
    CheckpointSpec,
    CheckpointUnavailable,
    checkpoint_spec,
    checkpoint_specs,
    default_checkpoint_dir,
    fetch_checkpoint,
    find_checkpoint,
    load_registered_checkpoint,
)
from munet.models.vit import VisionTransformer

__all__ = [
    "AssembledVit",
    "CheckpointError",
    "CheckpointSpec",
    "CheckpointUnavailable",
    "MultipathVit",
    "Components",
    "RawCheckpoint",
    "VisionTransformer",
    "VitArch",
    "VitSize",
    "analytic_flops",
    "build_model",
    "check_components",
    "checkpoint_spec",
    "checkpoint_specs",
    "component_names",
    "component_shapes",
    "copy_components",
    "count_component_params",
    "count_flops",
    "count_multipath_flops",
    "count_params",
    "default_checkpoint_dir",
    "fetch_checkpoint",
    "find_checkpoint",
    "forward_components",
    "init_component",
    "init_components",
    "init_head_adapter",
    "init_router",
    "load_checkpoint",
    "load_components",
    "load_registered_checkpoint",
    "merge_components",
    "read_checkpoint",
    "register_vit_size",
    "resize_posembed",
    "save_npz",
    "save_safetensors",
    "split_components",
    "vit_size",
    "vit_sizes",
]
