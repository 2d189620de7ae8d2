"""timm's ViT state-dict names (`timm.models.vision_transformer.VisionTransformer`).

timm's blocks have munet's own block tensor names (`norm1`, fused `attn.qkv`, `attn.proj`,
`norm2`, `mlp.fc1`, `mlp.fc2`) under `blocks.{i}.`; the top-level map is below. A
patches-only `pos_embed` (timm's `no_embed_class`) gets a zero cls row. timm's own forward
uses exact (erf) GELU and LayerNorm eps 1e-6; munet's is Flax's tanh GELU, so the same weights
give slightly different numbers (munet.models.vit).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping

import torch

from munet.models.checkpoints.common import (
    BLOCK_TENSORS,
    Naming,
    as_float32,
    unknown_keys_error,
)

# timm name -> munet name, outside the blocks.
TIMM_TOP = {
    "patch_embed.proj.weight": "embedding.weight",
    "patch_embed.proj.bias": "embedding.bias",
    "cls_token": "cls.token",
    "pos_embed": "posembed_input.pos_embedding",
    "norm.weight": "encoder_norm.weight",
    "norm.bias": "encoder_norm.bias",
    "head.weight": "head.weight",
    "head.bias": "head.bias",
}
_BLOCK = re.compile(r"blocks\.(\d+)\.(.+)")


def _matches(keys: Collection[str]) -> bool:
    return "patch_embed.proj.weight" in keys


def _block_index(key: str) -> int | None:
    match = _BLOCK.match(key)
    return int(match.group(1)) if match else None


def _convert(
    state: Mapping[str, torch.Tensor], source: str
) -> tuple[dict[str, torch.Tensor], dict[str, str]]:
    tensors: dict[str, torch.Tensor] = {}
    sources: dict[str, str] = {}
    unknown = []
    for key, tensor in state.items():
        match = _BLOCK.fullmatch(key)
        if match and match.group(2) in BLOCK_TENSORS:
            name = f"encoderblock_{match.group(1)}.{match.group(2)}"
        else:
            name = TIMM_TOP.get(key)
        if name is None:
            unknown.append(key)
            continue
        tensors[name] = as_float32(tensor)
        sources[name] = key
    if unknown:
        raise unknown_keys_error(source, "timm", unknown)
    return tensors, sources


def timm_name(munet_name: str) -> str:
    """The timm key of a munet flat name (the inverse map, for writing)."""
    match = re.fullmatch(r"encoderblock_(\d+)\.(.+)", munet_name)
    if match:
        return f"blocks.{match.group(1)}.{match.group(2)}"
    to_timm = {ours: theirs for theirs, ours in TIMM_TOP.items()}
    return to_timm[munet_name]


TIMM = Naming(
    name="timm",
    marker="timm's 'patch_embed.proj.weight'",
    matches=_matches,
    block_index=_block_index,
    convert=_convert,
)
