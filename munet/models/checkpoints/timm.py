"""timm's ViT state-dict names (`timm.models.vision_transformer.VisionTransformer`).

timm's blocks have munet's own block tensor names (`norm1`, fused `attn.qkv`, `attn.proj`,
`norm2`, `mlp.fc1`, `mlp.fc2`) under `blocks.{i}.`; the top-level map is below. A
patches-only `pos_embed` (timm's `no_embed_class`) gets a zero cls row. timm's own forward
uses exact (erf) GELU and LayerNorm eps 1e-6; munet's is Flax's tanh GELU, so the same weights
give slightly different numbers (munet.models.vit).

* Hybrids (`vit_tiny_r_s16_p8_*`, `vit_small_r26_s32_*`, `vit_base_r50_s16_*`,
  `vit_large_r50_s32_*`: timm's ResNet-v2 stem in `patch_embed.backbone`, then
  `patch_embed.proj`). The root is `patch_embed.backbone.{conv,norm}` when the stem is the
  root alone (timm builds it as a bare `Sequential`) and `patch_embed.backbone.stem.{conv,norm}`
  under a `ResNetV2` with stages; unit j of stage i is
  `patch_embed.backbone.stages.{i}.blocks.{j}.{conv1..3,norm1..3}` and its projection
  `downsample.{conv,norm}` (0-based; munet's `stem_block{i+1}.unit{j+1}` with vit_jax's names
  `conv1..3`, `gn1..3`, `conv_proj`, `gn_proj`). timm computes the same function as vit_jax
  up to epsilons: its group norms use eps 1e-5 (vit_jax, munet 1e-6) and its weight
  standardisation `(w - mean) / sqrt(var + 1e-8)` (vit_jax, munet `/ (std + 1e-5)`); on
  tiny random models the logits differ by ~1e-5 (tests/models/test_hybrid_checkpoints.py).
  Any other backbone key (a pre-activation ResNet's final `norm`, timm's other CNN backbones)
  is refused as a key the ViT has no place for.
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

_BACKBONE = "patch_embed.backbone."
# timm's Bottleneck module -> vit_jax's (munet's) unit module.
_UNIT_MODULES = {
    "conv1": "conv1",
    "norm1": "gn1",
    "conv2": "conv2",
    "norm2": "gn2",
    "conv3": "conv3",
    "norm3": "gn3",
    "downsample.conv": "conv_proj",
    "downsample.norm": "gn_proj",
}
_TIMM_UNIT = re.compile(
    re.escape(_BACKBONE) + r"stages\.(\d+)\.blocks\.(\d+)\.(.+)\.(weight|bias)"
)
_MUNET_UNIT = re.compile(r"stem_block(\d+)\.unit(\d+)\.(\w+)\.(weight|bias)")


def _matches(keys: Collection[str]) -> bool:
    return "patch_embed.proj.weight" in keys


def _block_index(key: str) -> int | None:
    match = _BLOCK.match(key)
    return int(match.group(1)) if match else None


def _has_stages(keys: Collection[str]) -> bool:
    """Whether timm's hybrid stem is a `ResNetV2` with stages (root under `.stem.`)."""
    return any(
        key.startswith((_BACKBONE + "stem.", _BACKBONE + "stages.")) for key in keys
    )


def _stem_name(key: str, staged: bool) -> str | None:
    """The munet name of a timm hybrid stem key (None: not one munet's stem has)."""
    root = _BACKBONE + ("stem." if staged else "")
    root_names = {
        f"{root}conv.weight": "stem_root.conv.weight",
        f"{root}norm.weight": "stem_root.gn.weight",
        f"{root}norm.bias": "stem_root.gn.bias",
    }
    if key in root_names:
        return root_names[key]
    match = _TIMM_UNIT.fullmatch(key)
    if match is None or match.group(3) not in _UNIT_MODULES:
        return None
    stage, unit, module, leaf = match.groups()
    module = _UNIT_MODULES[module]
    if module.startswith("conv") and leaf != "weight":
        return None  # timm's StdConv2dSame has no bias; munet's stem neither
    return f"stem_block{int(stage) + 1}.unit{int(unit) + 1}.{module}.{leaf}"


def _convert(
    state: Mapping[str, torch.Tensor], source: str
) -> tuple[dict[str, torch.Tensor], dict[str, str]]:
    tensors: dict[str, torch.Tensor] = {}
    sources: dict[str, str] = {}
    unknown = []
    staged = _has_stages(state)
    for key, tensor in state.items():
        match = _BLOCK.fullmatch(key)
        if match and match.group(2) in BLOCK_TENSORS:
            name = f"encoderblock_{match.group(1)}.{match.group(2)}"
        elif key.startswith(_BACKBONE):
            name = _stem_name(key, staged)
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
    return timm_name(name, staged=_has_stages(keys))


def timm_name(munet_name: str, *, staged: bool = True) -> str:
    """The timm key of a munet flat name (the inverse map, for writing).

    Args:
        munet_name: a flat munet name.
        staged: for a hybrid's root, whether the stem has stages (timm then nests the root
            under `patch_embed.backbone.stem.`; a root-only stem's is `patch_embed.backbone.`).

    Raises:
        KeyError: a name timm's ViT has no key for.
    """
    match = re.fullmatch(r"encoderblock_(\d+)\.(.+)", munet_name)
    if match:
        return f"blocks.{match.group(1)}.{match.group(2)}"
    if munet_name.startswith("stem_root."):
        module, _, leaf = munet_name.removeprefix("stem_root.").partition(".")
        module = {"conv": "conv", "gn": "norm"}[module]
        return f"{_BACKBONE}{'stem.' if staged else ''}{module}.{leaf}"
    match = _MUNET_UNIT.fullmatch(munet_name)
    if match:
        stage, unit, module, leaf = match.groups()
        to_timm = {ours: theirs for theirs, ours in _UNIT_MODULES.items()}
        return (
            f"{_BACKBONE}stages.{int(stage) - 1}.blocks.{int(unit) - 1}."
            f"{to_timm[module]}.{leaf}"
        )
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
