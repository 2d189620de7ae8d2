"""timm's ViT state-dict names (`timm.models.vision_transformer.VisionTransformer`).

timm's blocks have munet's own block tensor names (`norm1`, fused `attn.qkv`, `attn.proj`,
`norm2`, `mlp.fc1`, `mlp.fc2`) under `blocks.{i}.`; the top-level map is below. A
patches-only `pos_embed` (timm's `no_embed_class`) gets a zero cls row. timm's own forward
uses exact (erf) GELU and LayerNorm eps 1e-6; munet's is Flax's tanh GELU, so the same weights
give slightly different numbers (munet.models.vit).

* `qkv_bias=False` (no `attn.qkv.bias`): zero biases, which compute the same (as for Hugging
  Face files).
* Pooling. munet's ViT (the seed's) classifies from the cls token after the final `norm`.
  timm's `global_pool='avg'` models classify from the mean of the patch tokens instead: with
  the default `fc_norm` their final norm is `fc_norm` (refused here by its keys); with
  `fc_norm=False` their keys are exactly a cls-token ViT's, so only timm's `config.json`
  beside the file (`global_pool`, written by `save_pretrained` / `push_to_hub`) tells them
  apart: such a file is refused, since it would load silently as a different function. A
  bare state dict of such a model (no config.json) cannot be detected: it loads as a
  cls-token ViT.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping

import torch

from munet.models.checkpoints.common import (
    BLOCK_TENSORS,
    CheckpointError,
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
    if "fc_norm.weight" in state or "fc_norm.bias" in state:
        raise CheckpointError(
            f"{source}: a timm ViT with fc_norm (global_pool='avg' and its default "
            "fc_norm=True): it classifies from the mean of its patch tokens through fc_norm, "
            "munet's ViT (the seed's) from the cls token through norm, so it cannot be "
            "loaded as the same function; use a checkpoint trained with global_pool='token'"
        )
    if unknown:
        raise unknown_keys_error(source, "timm", unknown)
    for name in list(tensors):
        # qkv_bias=False: no q/k/v biases, the same as zero ones.
        if name.endswith(".attn.qkv.weight"):
            bias = name.removesuffix("weight") + "bias"
            if bias not in tensors:
                tensors[bias] = torch.zeros(tensors[name].shape[0])
                sources[bias] = "(zeros: the file has no qkv bias, timm qkv_bias=False)"
    return tensors, sources


def check_timm_config(config: Mapping, where: str) -> None:
    """Refuse a timm model whose `config.json` says it pools otherwise than by its cls token
    (its keys may be exactly a cls-token ViT's: `global_pool='avg'` with `fc_norm=False`).

    Raises:
        CheckpointError: naming the setting.
    """
    args = config.get("model_args") if isinstance(config.get("model_args"), Mapping) else {}
    pool = args.get("global_pool", config.get("global_pool", "token"))
    if pool not in ("token", None, ""):
        raise CheckpointError(
            f"{where}: global_pool {pool!r}: this timm model classifies from the {pool} of its "
            "patch tokens, munet's ViT (the seed's) from the cls token; its keys look like a "
            "cls-token ViT's, but loading them would compute a different function (refused; "
            "use a checkpoint trained with global_pool='token')"
        )


def is_timm_config(config: Mapping) -> bool:
    """Whether a config.json is timm's (`architecture`, where transformers writes
    `architectures` and `model_type`)."""
    return "architecture" in config and "model_type" not in config


def _file_key(name: str, keys: Collection[str]) -> str:
    return timm_name(name)


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
    file_key=_file_key,
)
