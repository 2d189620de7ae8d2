"""Hugging Face transformers ViT checkpoints (`ViTModel`, `ViTForImageClassification`).

A `save_pretrained` folder holds `config.json` and the weights: `model.safetensors`, or
sharded `model.safetensors.index.json` + shards, or (older transformers, or
`safe_serialization=False`) `pytorch_model.bin` / its index. The weight file alone, or a
`torch.save(model.state_dict())`, is read too; a `config.json` beside it is then checked.

Key map (`vit.` prefix of ViTForImageClassification removed first; block i):

    embeddings.patch_embeddings.projection.{weight,bias}  -> embedding.{weight,bias}
    embeddings.cls_token                                  -> cls.token
    embeddings.position_embeddings (1, 1+N, D)            -> posembed_input.pos_embedding
    encoder.layer.i.layernorm_before                      -> encoderblock_i.norm1
    encoder.layer.i.attention.attention.{query,key,value} -> encoderblock_i.attn.qkv (rows q|k|v)
    encoder.layer.i.attention.output.dense                -> encoderblock_i.attn.proj
    encoder.layer.i.layernorm_after                       -> encoderblock_i.norm2
    encoder.layer.i.intermediate.dense                    -> encoderblock_i.mlp.fc1
    encoder.layer.i.output.dense                          -> encoderblock_i.mlp.fc2
    layernorm                                             -> encoder_norm
    classifier (reads the normalised cls token)           -> head

transformers >= 5 names the block modules differently in memory (`layers.i.attention.
{q,k,v,o}_proj`, `layers.i.mlp.fc{1,2}`) and writes the names above in `save_pretrained`; a
`torch.save(model.state_dict())` has the in-memory names, which are mapped the same way.

Dropped, as they feed nothing munet's classifier computes: `pooler.dense` (ViTModel's
Dense + tanh over the cls token, unused by ViTForImageClassification) and
`embeddings.mask_token` (masked image modelling). With `qkv_bias: false` the q/k/v biases are
zeros, which computes the same.

Numerics: munet's ViT is Google's Flax ViT (LayerNorm eps 1e-6, tanh GELU). transformers' ViT
defaults to eps 1e-12 and exact (erf) GELU; a config with those loads with a warning naming
the difference (outputs then differ slightly from transformers', not from the original JAX
model the hub's google/vit-* weights were converted from). `gelu_pytorch_tanh` / `gelu_new`
with eps 1e-6 make transformers compute exactly munet's function.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Collection, Mapping
from pathlib import Path

import torch

from munet.models.checkpoints.common import (
    MUNET_BLOCK,
    POSEMBED,
    CheckpointError,
    Naming,
    RawCheckpoint,
    as_float32,
    unknown_keys_error,
)
from munet.models.checkpoints.huggingface_config import (  # noqa: F401  (re-exported)
    CONFIG_FILE,
    apply_config,
    check_config,
    read_config,
)
from munet.models.checkpoints.state_dict import (
    read_safetensors,
    safetensors_tensors,
    state_dict_checkpoint,
)
from munet.models.checkpoints.timm import TIMM, check_timm_config, is_timm_config
from munet.models.checkpoints.torch_state_dict import load_torch_state_dict, read_torch

logger = logging.getLogger(__name__)

# In the order transformers' from_pretrained prefers them.
WEIGHT_FILES = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)
_PREFIX = "vit."
_TOP = {
    "embeddings.patch_embeddings.projection.weight": "embedding.weight",
    "embeddings.patch_embeddings.projection.bias": "embedding.bias",
    "embeddings.cls_token": "cls.token",
    "embeddings.position_embeddings": POSEMBED,
    "layernorm.weight": "encoder_norm.weight",
    "layernorm.bias": "encoder_norm.bias",
    "classifier.weight": "head.weight",
    "classifier.bias": "head.bias",
}
_DROPPED = ("pooler.dense.weight", "pooler.dense.bias", "embeddings.mask_token")
_MARKER = "embeddings.patch_embeddings.projection.weight"

# (block key pattern, {module: munet block module}, {q/k/v module: row block of the fused qkv})
_BLOCK_LAYOUTS = (
    (  # save_pretrained files and the hub
        re.compile(r"encoder\.layer\.(\d+)\.(.+)\.(weight|bias)"),
        {
            "layernorm_before": "norm1",
            "attention.output.dense": "attn.proj",
            "layernorm_after": "norm2",
            "intermediate.dense": "mlp.fc1",
            "output.dense": "mlp.fc2",
        },
        ("attention.attention.query", "attention.attention.key", "attention.attention.value"),
    ),
    (  # transformers >= 5 module names (torch.save of a state_dict())
        re.compile(r"layers\.(\d+)\.(.+)\.(weight|bias)"),
        {
            "layernorm_before": "norm1",
            "attention.o_proj": "attn.proj",
            "layernorm_after": "norm2",
            "mlp.fc1": "mlp.fc1",
            "mlp.fc2": "mlp.fc2",
        },
        ("attention.q_proj", "attention.k_proj", "attention.v_proj"),
    ),
)
_ANY_BLOCK = re.compile(r"(?:encoder\.layer|layers)\.(\d+)\.")


def _matches(keys: Collection[str]) -> bool:
    return _MARKER in keys or _PREFIX + _MARKER in keys


def _block_index(key: str) -> int | None:
    match = _ANY_BLOCK.match(key.removeprefix(_PREFIX))
    return int(match.group(1)) if match else None


def _fuse_qkv(
    parts: dict[str, dict[int, torch.Tensor]],
    names: tuple[str, ...],
    key_prefix: str,
    out: str,
    tensors: dict[str, torch.Tensor],
    sources: dict[str, str],
) -> None:
    """Stacks q, k, v rows into munet's fused `attn.qkv` (heads stay contiguous per part)."""
    for kind in ("weight", "bias"):
        found = parts.get(kind, {})
        if kind == "bias" and not found:
            # qkv_bias=False: no biases, the same as zero ones.
            width = tensors[f"{out}.attn.qkv.weight"].shape[0]
            tensors[f"{out}.attn.qkv.bias"] = torch.zeros(width)
            sources[f"{out}.attn.qkv.bias"] = "(zeros: the file has no q/k/v biases)"
            continue
        for row, name in enumerate(names):
            if row not in found:
                raise CheckpointError(f"missing key {key_prefix + name + '.' + kind!r}")
        # Before stacking: q, k and v must each be (D, D) weights / (D,) biases of one D, or
        # torch.cat fails without naming any key (or stacks a wrong inner width).
        query_key = f"{key_prefix}{names[0]}.{kind}"
        query_shape = tuple(found[0].shape)
        dims = 2 if kind == "weight" else 1
        if len(query_shape) != dims or (dims == 2 and query_shape[0] != query_shape[1]):
            expected = "(D, D)" if dims == 2 else "(D,)"
            raise CheckpointError(
                f"key {query_key!r} has shape {query_shape}, expected {expected}"
            )
        for row in (1, 2):
            shape = tuple(found[row].shape)
            if shape != query_shape:
                raise CheckpointError(
                    f"key {key_prefix + names[row] + '.' + kind!r} has shape {shape}, "
                    f"expected {query_shape} as {query_key!r}"
                )
        stem = names[0].rsplit(".", 1)[0]
        tensors[f"{out}.attn.qkv.{kind}"] = torch.cat([as_float32(found[r]) for r in range(3)])
        short = "{" + ",".join(name.rsplit(".", 1)[1] for name in names) + "}"
        sources[f"{out}.attn.qkv.{kind}"] = f"{key_prefix}{stem}.{short}.{kind}"


def _convert(
    state: Mapping[str, torch.Tensor], source: str
) -> tuple[dict[str, torch.Tensor], dict[str, str]]:
    tensors: dict[str, torch.Tensor] = {}
    sources: dict[str, str] = {}
    unknown, dropped = [], []
    # block index -> (its q/k/v module names, key prefix, {"weight"/"bias": {row: tensor}})
    qkv: dict[int, tuple[tuple[str, ...], str, dict[str, dict[int, torch.Tensor]]]] = {}
    for key, tensor in state.items():
        bare = key.removeprefix(_PREFIX)
        if bare in _TOP:
            tensors[_TOP[bare]] = as_float32(tensor)
            sources[_TOP[bare]] = key
            continue
        if bare in _DROPPED:
            dropped.append(key)
            continue
        for pattern, modules, qkv_names in _BLOCK_LAYOUTS:
            match = pattern.fullmatch(bare)
            if match is None:
                continue
            index, module, kind = int(match.group(1)), match.group(2), match.group(3)
            if module in modules:
                name = f"encoderblock_{index}.{modules[module]}.{kind}"
                tensors[name] = as_float32(tensor)
                sources[name] = key
            elif module in qkv_names:
                key_prefix = key[: len(key) - len(module) - len(kind) - 1]
                parts = qkv.setdefault(index, (qkv_names, key_prefix, {}))[2]
                parts.setdefault(kind, {})[qkv_names.index(module)] = tensor
            else:
                unknown.append(key)
            break
        else:
            unknown.append(key)
    if unknown:
        raise unknown_keys_error(source, "Hugging Face ViT", unknown)
    for index, (qkv_names, key_prefix, parts) in sorted(qkv.items()):
        try:
            _fuse_qkv(parts, qkv_names, key_prefix, f"encoderblock_{index}", tensors, sources)
        except CheckpointError as error:
            raise CheckpointError(f"{source}: {error}") from None
    if dropped:
        logger.info("%s: not loaded (nothing munet computes reads them): %s", source, dropped)
    return tensors, sources


def _file_key(name: str, keys: Collection[str]) -> str:
    """The key a munet flat name has in a Hugging Face file with these keys (its prefix and
    block layout); the fused q/k/v names its three parts."""
    prefix = _PREFIX if any(key.startswith(_PREFIX) for key in keys) else ""
    top = {ours: theirs for theirs, ours in _TOP.items()}
    if name in top:
        return prefix + top[name]
    match = MUNET_BLOCK.fullmatch(name)
    if match is None:
        raise KeyError(name)
    index, (module, kind) = match.group(1), match.group(2).rsplit(".", 1)
    layout = _BLOCK_LAYOUTS[0]
    for candidate in _BLOCK_LAYOUTS:
        if any(candidate[0].fullmatch(key.removeprefix(_PREFIX)) for key in keys):
            layout = candidate
            break
    _, modules, qkv_names = layout
    stem = "encoder.layer" if layout is _BLOCK_LAYOUTS[0] else "layers"
    if module == "attn.qkv":
        return f"{prefix}{stem}.{index}.{{{','.join(qkv_names)}}}.{kind}"
    theirs = {ours: theirs for theirs, ours in modules.items()}
    return f"{prefix}{stem}.{index}.{theirs[module]}.{kind}"


HUGGINGFACE = Naming(
    name="huggingface",
    marker=f"Hugging Face's '{_MARKER}' (or 'vit.{_MARKER}')",
    matches=_matches,
    block_index=_block_index,
    convert=_convert,
    file_key=_file_key,
)


# ------------------------------------------------------------------------------ folders


def weight_file(folder: Path) -> Path:
    """The weights of a `save_pretrained` folder, in transformers' order of preference.

    Raises:
        CheckpointError: no config.json or no weight file; the message lists the folder.
    """
    found = sorted(entry.name for entry in folder.iterdir())
    if CONFIG_FILE not in found:
        raise CheckpointError(
            f"{folder}: a checkpoint folder must be a Hugging Face save_pretrained folder "
            f"with {CONFIG_FILE}; found {found[:10]}"
        )
    for name in WEIGHT_FILES:
        if name in found:
            return folder / name
    raise CheckpointError(f"{folder}: no weight file; expected one of {list(WEIGHT_FILES)}")


def sharded_keys(index_path: Path) -> dict[str, Path]:
    """{key: shard file} from a `*.index.json` (what `save_pretrained` writes for big models).

    Raises:
        CheckpointError: unreadable index, or a shard outside the folder.
    """
    index = read_config(index_path)
    weight_map = index.get("weight_map")
    if not isinstance(weight_map, dict) or not weight_map:
        raise CheckpointError(f"{index_path}: no 'weight_map' of key -> shard file")
    shards: dict[str, Path] = {}
    for key, name in weight_map.items():
        if not isinstance(name, str) or Path(name).name != name:
            raise CheckpointError(f"{index_path}: key {key!r}: shard {name!r} is not a file name")
        shards[key] = index_path.parent / name
    return shards


def read_folder(folder: Path, max_layers: int | None) -> RawCheckpoint:
    """Reads a `save_pretrained` folder of a ViTModel or ViTForImageClassification.

    Raises:
        CheckpointError: not such a folder, a config munet's ViT cannot compute, unreadable
            weights, or keys in no Hugging Face ViT layout.
    """
    weights = weight_file(folder)
    config_path = folder / CONFIG_FILE
    config = read_config(config_path)
    if is_timm_config(config) and not weights.name.endswith(".index.json"):
        # timm's save_pretrained / push_to_hub folder: timm names, pooling in its config.
        check_timm_config(config, str(config_path))
        read = read_safetensors if weights.suffix == ".safetensors" else read_torch
        raw, _ = read(weights, max_layers, (TIMM,))
        raw.layout = f"timm({weights.name})"
        return raw
    # The config first: a model munet cannot compute fails before any weight is read.
    declared = check_config(config, str(config_path))
    only_hf = (HUGGINGFACE,)
    if weights.name.endswith(".index.json"):
        shards = sharded_keys(weights)

        def read(wanted: list[str]) -> dict[str, torch.Tensor]:
            by_shard: dict[Path, list[str]] = {}
            for key in wanted:
                by_shard.setdefault(shards[key], []).append(key)
            tensors: dict[str, torch.Tensor] = {}
            for shard, keys in by_shard.items():
                if shard.suffix == ".safetensors":
                    tensors.update(safetensors_tensors(shard, keys))
                    continue
                state = load_torch_state_dict(shard)
                missing = [key for key in keys if key not in state]
                if missing:
                    raise CheckpointError(f"{shard}: missing key {missing[0]!r} ({weights.name})")
                tensors.update({key: state[key].clone() for key in keys})
            return tensors

        raw, _ = state_dict_checkpoint(shards, read, str(folder), max_layers, "", only_hf)
    elif weights.suffix == ".safetensors":
        raw, _ = read_safetensors(weights, max_layers, only_hf)
    else:
        raw, _ = read_torch(weights, max_layers, only_hf)
    raw.layout = f"huggingface({weights.name})"
    raw.declared, raw.num_heads = declared, declared["num_heads"][1]
    return raw
