"""What every checkpoint format shares: the error, the converted-but-unfitted checkpoint, the
description of a state-dict naming, and small helpers on munet's flat tensor names.

munet's flat names are `"<component>.<tensor>"`: `embedding.weight`, `cls.token`,
`posembed_input.pos_embedding`, `encoderblock_{i}.<block tensor>`, `encoder_norm.weight`,
`head.weight`, ... (see `munet.models.components`); a hybrid ViT's stem adds
`stem_root.<root tensor>` and `stem_block{i}.unit{j}.<unit tensor>` (see `munet.models.stem`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field

import torch


class CheckpointError(ValueError):
    """A checkpoint that cannot be loaded: unknown layout, missing key or wrong shape."""


POSEMBED = "posembed_input.pos_embedding"

# The tensors of one munet encoder block, in the order a block's shapes are listed.
BLOCK_TENSORS = (
    "norm1.weight",
    "norm1.bias",
    "attn.qkv.weight",
    "attn.qkv.bias",
    "attn.proj.weight",
    "attn.proj.bias",
    "norm2.weight",
    "norm2.bias",
    "mlp.fc1.weight",
    "mlp.fc1.bias",
    "mlp.fc2.weight",
    "mlp.fc2.bias",
)
# Every munet tensor outside the blocks.
TOP_TENSORS = (
    "embedding.weight",
    "embedding.bias",
    "cls.token",
    POSEMBED,
    "encoder_norm.weight",
    "encoder_norm.bias",
    "head.weight",
    "head.bias",
)
MUNET_BLOCK = re.compile(r"encoderblock_(\d+)\.(.+)")

# A hybrid's stem (munet.models.stem): the root's tensors, and each bottleneck unit's
# (`conv_proj` / `gn_proj` only in a stage's first unit, where the shape changes).
STEM_ROOT_TENSORS = ("conv.weight", "gn.weight", "gn.bias")
STEM_UNIT_TENSORS = (
    "conv1.weight",
    "gn1.weight",
    "gn1.bias",
    "conv2.weight",
    "gn2.weight",
    "gn2.bias",
    "conv3.weight",
    "gn3.weight",
    "gn3.bias",
    "conv_proj.weight",
    "gn_proj.weight",
    "gn_proj.bias",
)
MUNET_STEM_UNIT = re.compile(r"stem_block(\d+)\.unit(\d+)\.(.+)")


@dataclass
class RawCheckpoint:
    """A checkpoint converted to munet tensor names, before fitting it to an architecture.

    Attributes:
        tensors: {flat munet name: float32 tensor}, the blocks read (all, or the first
            `max_layers`); the position embedding at the file's own grid size (with a cls row).
        sources: {flat munet name: the file key(s) it came from}, for error messages.
        depth: number of encoder blocks in the file.
        num_heads: attention heads recorded in the file (None when the file does not say).
        layout: a short description of the detected layout.
        declared: shapes a format's config file states, checked against the architecture
            before any tensor: {VitArch field: (where it is stated, value)}, e.g.
            `{"width": ("config.json hidden_size", 768)}`.
        file_key: the key a munet flat name has in the file (for naming a missing tensor
            the way the file would); None: the munet name is used.
    """

    tensors: dict[str, torch.Tensor]
    sources: dict[str, str]
    depth: int
    num_heads: int | None
    layout: str
    declared: dict[str, tuple[str, int]] = field(default_factory=dict)
    file_key: Callable[[str], str] | None = None


@dataclass(frozen=True)
class Naming:
    """One way of naming a ViT's tensors in a flat state dict (timm, Hugging Face, munet).

    Attributes:
        name: short name used in messages ("timm", "huggingface", "munet").
        marker: what identifies it, for the unknown-layout message.
        matches: whether a set of keys is in this naming.
        block_index: the encoder block a key belongs to (None: not a block key); lets readers
            skip blocks past `max_layers` without reading them.
        convert: {file key: tensor} -> ({munet name: tensor}, {munet name: file key});
            raises CheckpointError naming keys the ViT has no place for.
        file_key: (munet flat name, the file's keys) -> the key that name has in this naming
            (for naming missing tensors); None: the munet name.
    """

    name: str
    marker: str
    matches: Callable[[Collection[str]], bool]
    block_index: Callable[[str], int | None]
    convert: Callable[
        [Mapping[str, torch.Tensor], str], tuple[dict[str, torch.Tensor], dict[str, str]]
    ]
    file_key: Callable[[str, Collection[str]], str] | None = None


def as_float32(tensor: torch.Tensor) -> torch.Tensor:
    """A contiguous float32 CPU copy-or-view of a file tensor."""
    return tensor.to("cpu", torch.float32).contiguous()


def with_cls_row(posembed: torch.Tensor) -> torch.Tensor:
    """Adds a zero cls row to a patches-only position embedding (1, g*g, D).

    big_vision and timm's `no_embed_class` add position embeddings to the patches only and
    prepend the cls token afterwards: the same as a zero embedding for the cls token. A
    (1, 1+g*g, D) embedding (never a square count for g >= 1) is returned unchanged.
    """
    if posembed.dim() != 3:
        return posembed
    grid_tokens = posembed.shape[1]
    if math.isqrt(grid_tokens) ** 2 != grid_tokens:
        return posembed
    return torch.cat([posembed.new_zeros(1, 1, posembed.shape[2]), posembed], dim=1)


def is_stem_name(name: str) -> bool:
    """Whether a munet flat name is one of a hybrid stem's tensors."""
    if name.startswith("stem_root."):
        return name.removeprefix("stem_root.") in STEM_ROOT_TENSORS
    match = MUNET_STEM_UNIT.fullmatch(name)
    return bool(match) and match.group(3) in STEM_UNIT_TENSORS


def stem_stages(names: Collection[str]) -> tuple[int, ...] | None:
    """The stem a set of munet flat names holds: None without a stem root (a plain ViT),
    else the units of each stage, in order (() = the root alone). A stage or unit missing
    in the numbering counts as an empty stage / up to the highest unit, so a gap shows up
    as a shape that fits no arch."""
    if not any(name.startswith("stem_root.") for name in names):
        return None
    units: dict[int, int] = {}
    for name in names:
        if match := MUNET_STEM_UNIT.fullmatch(name):
            stage, unit = int(match.group(1)), int(match.group(2))
            units[stage] = max(units.get(stage, 0), unit)
    return tuple(units.get(stage, 0) for stage in range(1, max(units, default=0) + 1))


def squeeze_norm_param(tensor: torch.Tensor) -> torch.Tensor:
    """A group norm's scale or bias as (C,): older Flax stored them as (1, 1, 1, C), the
    shape of the activations they multiply (google/flax#1721; vit_jax's `checkpoint.load`
    squeezes them the same way)."""
    if tensor.dim() > 1 and all(size == 1 for size in tensor.shape[:-1]):
        return tensor.reshape(-1)
    return tensor


def block_ids(names: Collection[str]) -> set[int]:
    """The encoder block indices among munet flat names."""
    return {int(match.group(1)) for name in names if (match := MUNET_BLOCK.fullmatch(name))}


def check_numbering(indices: set[int], source: str) -> None:
    """Raises CheckpointError unless the blocks are numbered 0..n-1."""
    if indices != set(range(len(indices))):
        raise CheckpointError(
            f"{source}: encoder blocks are not numbered 0..{len(indices) - 1}: {sorted(indices)}"
        )


def unknown_keys_error(source: str, naming: str, unknown: list[str]) -> CheckpointError:
    """The error for keys a ViT has no place for (ignoring them would change the model)."""
    return CheckpointError(
        f"{source}: keys the ViT has no place for ({naming} names): {unknown[:10]}"
    )
