"""Reading any supported checkpoint (dispatch on the path) and fitting it to an architecture:
the first blocks, the position embedding resized, the head kept or replaced, every shape
checked."""

from __future__ import annotations

import logging
from pathlib import Path

import torch

from munet.models.arch import VitArch
from munet.models.checkpoints.augreg_npz import read_npz
from munet.models.checkpoints.common import (
    POSEMBED,
    CheckpointError,
    RawCheckpoint,
    is_stem_name,
    stem_stages,
)
from munet.models.checkpoints.huggingface import (
    CONFIG_FILE,
    HUGGINGFACE,
    apply_config,
    read_config,
    read_folder,
)
from munet.models.checkpoints.munet_safetensors import MUNET, is_export_folder, read_export_folder
from munet.models.checkpoints.state_dict import read_safetensors
from munet.models.checkpoints.timm import TIMM, check_timm_config, is_timm_config
from munet.models.checkpoints.torch_state_dict import TORCH_SUFFIXES, read_torch
from munet.models.components import Components, component_shapes
from munet.models.posembed import resize_posembed

logger = logging.getLogger(__name__)

# The state-dict namings a `.safetensors` / `.pth` file may be in, tried in this order.
NAMINGS = (TIMM, HUGGINGFACE, MUNET)
SUFFIXES = (".npz", ".safetensors", *TORCH_SUFFIXES)


def read_checkpoint(path: str | Path, max_layers: int | None = None) -> RawCheckpoint:
    """Reads a checkpoint into munet tensor names.

    Args:
        path: a Google `.npz`; a `.safetensors` or `torch.save`d `.pth`/`.pt`/`.bin` state
            dict with timm, Hugging Face or munet names (told apart by key layout); a
            Hugging Face `save_pretrained` folder; or a `munet export` folder of a singlepath
            path.
        max_layers: read only the first `max_layers` encoder blocks (None: all). Arrays are
            read from disk on demand, so a capped read of a large file costs little.

    Raises:
        FileNotFoundError: no such file or folder.
        CheckpointError: unknown extension or layout, missing key, malformed array.
    """
    path = Path(path)
    if path.is_dir():
        if is_export_folder(path):
            return read_export_folder(path, max_layers)
        return read_folder(path, max_layers)
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint file not found: {path}")
    if path.suffix == ".npz":
        return read_npz(path, max_layers)
    if path.suffix == ".safetensors":
        raw, naming = read_safetensors(path, max_layers, NAMINGS)
    elif path.suffix in TORCH_SUFFIXES:
        raw, naming = read_torch(path, max_layers, NAMINGS)
    else:
        raise CheckpointError(
            f"{path}: unknown checkpoint extension {path.suffix!r}; expected one of "
            f"{list(SUFFIXES)}, or a Hugging Face save_pretrained folder"
        )
    config_path = path.parent / CONFIG_FILE
    if naming is HUGGINGFACE and config_path.is_file():
        # A weight file taken out of its save_pretrained folder: its config still applies.
        apply_config(raw, config_path)
    if naming is TIMM and config_path.is_file():
        # timm's save_pretrained / push_to_hub: the pooling is only in its config.
        config = read_config(config_path)
        if is_timm_config(config):
            check_timm_config(config, str(config_path))
    return raw


def _file_key(raw: RawCheckpoint, flat: str) -> str:
    """The file's key for a munet flat name (the name itself where the naming has no map)."""
    if raw.file_key is None:
        return flat
    try:
        return raw.file_key(flat)
    except (KeyError, ValueError):
        return flat


def _check_declared(path: Path, raw: RawCheckpoint, arch: VitArch) -> None:
    for field, (where, value) in raw.declared.items():
        expected = getattr(arch, field)
        if value != expected:
            raise CheckpointError(
                f"{path}: {where} is {value!r}, the arch expects {field} {expected} ({arch})"
            )


def _describe_stem(stages: tuple[int, ...]) -> str:
    return f"root + stages {stages}" if stages else "the root alone"


def _check_stem(path: Path, raw: RawCheckpoint, arch: VitArch) -> None:
    """A hybrid checkpoint fits only a hybrid arch with the same stages, and the reverse:
    a stem cannot be left out or cut short (the embedding reads its output)."""
    names = list(raw.tensors)
    file_stem = stem_stages(names)
    has_stem_tensors = any(is_stem_name(name) for name in names)
    if arch.stem is None:
        if has_stem_tensors:
            stem = [raw.sources[name] for name in names if is_stem_name(name)][:3]
            what = f"({_describe_stem(file_stem)}) " if file_stem is not None else ""
            raise CheckpointError(
                f"{path}: a hybrid ViT checkpoint: its convolutional stem {what}has no place "
                f"in the plain arch {arch} (stem keys such as {stem}); load it into a hybrid "
                f"arch (a size with a stem: R+Ti/16, R26+S/32, R50+B/16, R50+L/32)"
            )
        return
    if file_stem is None:
        # A staged stem's first unit is named the same way in every naming (a root's is not,
        # in timm's); name it where there is one.
        first = "stem_block1.unit1.conv1.weight" if arch.stem.stages else "stem_root.conv.weight"
        missing = _file_key(raw, "stem_root.conv.weight" if has_stem_tensors else first)
        raise CheckpointError(
            f"{path}: the arch is a hybrid ViT (stem: {_describe_stem(arch.stem.stages)}), the "
            f"checkpoint has no stem (layout {raw.layout}): missing key {missing!r} (munet's "
            f"{'stem_root.conv.weight' if has_stem_tensors else first})"
        )
    if file_stem != arch.stem.stages:
        raise CheckpointError(
            f"{path}: the checkpoint's stem is {_describe_stem(file_stem)} (units per stage), "
            f"the arch's {_describe_stem(arch.stem.stages)} ({arch})"
        )


def load_checkpoint(path: str | Path, arch: VitArch, image_size: int) -> Components:
    """Loads a checkpoint as a components mapping for `arch` at `image_size`.

    - Blocks: the first `arch.num_layers` blocks of the file (fewer than it has is fine,
      e.g. VitT3 caps Ti/16 to 3); asking for more is an error naming the missing key.
    - Position embedding: resized with `resize_posembed` if the grid differs.
    - Head: loaded only when `arch.num_classes` equals the file's class count; otherwise
      (or when the file has none) it is zero-initialised, like vit_jax's fresh head. A
      headless arch (num_classes=0) gets no head component.
    - Stem (a hybrid arch): the file's whole stem, which must have the arch's stages; a
      plain checkpoint for a hybrid arch, or a hybrid one for a plain arch, is refused.

    Returns:
        New float32 CPU tensors with `requires_grad=False`.

    Raises:
        FileNotFoundError: no such file.
        CheckpointError: unknown layout, a missing key, a config stating other shapes than
            `arch`, a stem that is not the arch's (none, or other stages), or a tensor whose
            shape does not fit `arch` (the message names the file key and both shapes).
    """
    raw = read_checkpoint(path, max_layers=arch.num_layers)
    _check_declared(Path(path), raw, arch)
    _check_stem(Path(path), raw, arch)
    if raw.num_heads is not None and raw.num_heads != arch.num_heads:
        raise CheckpointError(
            f"{path}: checkpoint has {raw.num_heads} attention heads, arch expects {arch.num_heads}"
        )
    if arch.num_layers > raw.depth:
        missing = _file_key(raw, f"encoderblock_{raw.depth}.norm1.weight")
        raise CheckpointError(
            f"{path}: arch asks for {arch.num_layers} encoder blocks, the checkpoint has "
            f"{raw.depth}: missing {missing} (key for block {raw.depth} of layout {raw.layout})"
        )
    tensors = dict(raw.tensors)
    if POSEMBED not in tensors:
        raise CheckpointError(f"{path}: no position embedding (layout {raw.layout})")
    posembed = tensors[POSEMBED]
    if posembed.dim() != 3 or posembed.shape[-1] != arch.width:
        raise CheckpointError(
            f"{path}: key {raw.sources[POSEMBED]!r} has shape {tuple(posembed.shape)}, "
            f"expected (1, tokens, {arch.width})"
        )
    try:
        tensors[POSEMBED] = resize_posembed(posembed, arch.grid_size(image_size))
    except ValueError as error:
        raise CheckpointError(f"{path}: key {raw.sources[POSEMBED]!r}: {error}") from error

    expected = component_shapes(arch, image_size)
    head_shapes = expected.get("head")
    file_head = tensors.get("head.weight")
    if head_shapes is not None and (
        file_head is None or tuple(file_head.shape) != head_shapes["weight"]
    ):
        found = "none" if file_head is None else f"{file_head.shape[0]} classes"
        logger.info(
            "%s: head not loaded (file: %s, arch: %d classes); zero-initialised",
            path,
            found,
            arch.num_classes,
        )
        tensors["head.weight"] = torch.zeros(head_shapes["weight"])
        tensors["head.bias"] = torch.zeros(head_shapes["bias"])
        raw.sources["head.weight"] = raw.sources["head.bias"] = "(zero init)"

    components: Components = {}
    for component, shapes in expected.items():
        components[component] = {}
        for name, shape in shapes.items():
            flat = f"{component}.{name}"
            if flat not in tensors:
                raise CheckpointError(
                    f"{path}: missing key {_file_key(raw, flat)!r} (munet's {flat}, expected "
                    f"shape {shape}; layout {raw.layout})"
                )
            tensor = tensors[flat]
            if tuple(tensor.shape) != shape:
                raise CheckpointError(
                    f"{path}: key {raw.sources[flat]!r} gives {flat} of shape "
                    f"{tuple(tensor.shape)}, "
                    f"expected {shape} for {arch}"
                )
            # Already fresh tensors (converted from the file's arrays): no copy needed.
            components[component][name] = tensor
    extra = [
        name
        for name in tensors
        if is_stem_name(name)
        and (parts := name.partition("."))[2] not in expected.get(parts[0], {})
    ]
    if extra:
        # E.g. a projection in a unit whose shape does not change: ignoring it would change
        # what the stem computes.
        raise CheckpointError(
            f"{path}: stem tensors the arch has no place for: "
            f"{[raw.sources[name] for name in extra][:10]} ({arch})"
        )
    return components
