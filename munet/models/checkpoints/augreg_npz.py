"""Reading Google's ViT `.npz` checkpoints (vit_jax augreg, big_vision) into munet names.
Arrays are read with `allow_pickle=False`. Telling the layouts apart is
munet.models.checkpoints.augreg_npz_layout; writing them, augreg_npz_writer.

Recognised `.npz` layouts (detected from the keys):

- key prefix: none (augreg), `opt/target/` (older vit_jax; `opt/state/...` is ignored),
  `params/` or `params/img/` (big_vision);
- block module names: vit_jax (`LayerNorm_0`, `MultiHeadDotProductAttention_1`, `LayerNorm_2`,
  `MlpBlock_3`) or big_vision (`LayerNorm_0`, `MultiHeadDotProductAttention_0`, `LayerNorm_1`,
  `MlpBlock_0`);
- blocks one per key (`Transformer/encoderblock_{i}/...`) or scan-stacked
  (`Transformer/encoderblock/...` with a leading depth axis);
- position embedding `Transformer/posembed_input/pos_embedding` (1, 1+N, D), or big_vision's
  top-level `pos_embedding` (1, N, D) added before the cls token is prepended; the latter is
  loaded with a zero cls row, which computes the same thing.

A hybrid ViT (vit_jax's R+ViT: `R_Ti_16`, `R26_S_32`, `R50_L_32`, `R50+ViT-B_16` files) adds its
ResNet stem under the same prefix: `conv_root/kernel` (HWIO), `gn_root/{scale,bias}`, and per
stage i and unit j `block{i}/unit{j}/{conv1,conv2,conv3,conv_proj}/kernel` and
`.../{gn1,gn2,gn3,gn_proj}/{scale,bias}`, read as munet's `stem_root.{conv,gn}.*` and
`stem_block{i}.unit{j}.*` (kernels to OIHW). Group-norm scales and biases may be (C,) or, as
older Flax wrote them, (1, 1, 1, C); both load as (C,).

`pre_logits/*` (a representation layer of older, non-augreg checkpoints) is dropped together
with the head that reads it; the augreg models have none. Any other key
under the prefix that the model cannot use is an error, since ignoring it would change what
the model computes.
"""

from __future__ import annotations

import logging
import math
import re
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np
import torch

from munet.filetypes import describe_non_npz
from munet.models.checkpoints.augreg_npz_layout import (
    BIG_VISION_POSEMBED_KEY,
    BLOCK_NAMES,
    NPZ_PREFIXES,
    POSEMBED_KEY,
    NpzLayout,
    detect_npz_layout,
)
from munet.models.checkpoints.augreg_npz_writer import save_npz
from munet.models.checkpoints.common import CheckpointError, RawCheckpoint, squeeze_norm_param

# The layout (augreg_npz_layout) and the writer (augreg_npz_writer) were parts of this module:
# importing them from here still works.
__all__ = ["NPZ_PREFIXES", "NpzLayout", "detect_npz_layout", "read_npz", "save_npz"]

logger = logging.getLogger(__name__)


class _NpzReader:
    """Reads arrays on demand by un-prefixed key, with errors naming the file and the key."""

    def __init__(self, arrays: Mapping[str, np.ndarray], layout: NpzLayout, source: str):
        self.arrays = arrays  # an open NpzFile: each member is read from disk when asked for
        self.layout = layout
        self.source = source
        self.used: set[str] = set()
        self._cache: dict[str, np.ndarray] = {}

    def key(self, name: str) -> str:
        return self.layout.prefix + name

    def read(self, key: str) -> np.ndarray:
        if key not in self._cache:
            try:
                self._cache[key] = self.arrays[key]
            except (OSError, ValueError, EOFError, zipfile.BadZipFile) as error:
                # Object arrays (pickle) are refused here; a damaged member fails here too.
                raise CheckpointError(
                    f"{self.source}: not a readable .npz file: key {key!r} ({error})"
                ) from error
        return self._cache[key]

    def get(self, name: str, ndim: int, index: int | None = None) -> np.ndarray:
        key = self.key(name)
        if key not in self.arrays:
            raise CheckpointError(f"{self.source}: missing key {key!r}")
        self.used.add(key)
        array = self.read(key)
        if index is not None:
            if array.ndim != ndim + 1:
                raise CheckpointError(
                    f"{self.source}: key {key!r} has shape {array.shape}, expected a stacked "
                    f"(depth, ...) array of {ndim + 1} dims"
                )
            array = array[index]
        if array.ndim != ndim:
            raise CheckpointError(
                f"{self.source}: key {key!r} has shape {array.shape}, expected {ndim} dims"
            )
        return array


def _tensor(array: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(array, dtype=np.float32))


def _npz_depth(keys: set[str], layout: NpzLayout, reader: _NpzReader) -> int:
    if layout.scanned:
        first_ln = f"{layout.prefix}Transformer/encoderblock/LayerNorm_0/scale"
        if first_ln not in keys:
            raise CheckpointError(f"{reader.source}: missing key {first_ln!r}")
        return int(reader.read(first_ln).shape[0])
    pattern = re.compile(re.escape(layout.prefix) + r"Transformer/encoderblock_(\d+)/")
    indices = {int(match.group(1)) for key in keys if (match := pattern.match(key))}
    depth = len(indices)
    if indices != set(range(depth)):
        raise CheckpointError(
            f"encoder blocks are not numbered 0..{depth - 1}: found {sorted(indices)}"
        )
    return depth


# vit_jax's stem names: root, and the unit modules of `block{i}/unit{j}/`.
_STEM_UNIT_KEY = re.compile(r"block(\d+)/unit(\d+)/(conv[123]|conv_proj|gn[123]|gn_proj)/(\w+)")


def _read_stem(
    keys: set[str], reader: _NpzReader, put: Callable[[str, np.ndarray, str], None]
) -> None:
    """Reads a hybrid's stem (none in a plain ViT's file): kernels HWIO -> OIHW, group-norm
    scales and biases as (C,). Keys that are not stem tensors are left for the unused check."""

    def kernel(name: str) -> np.ndarray:
        return reader.get(name, 4).transpose(3, 2, 0, 1)

    def norm_param(name: str) -> np.ndarray:
        key = reader.key(name)
        reader.used.add(key)
        array = reader.read(key)
        squeezed = squeeze_norm_param(torch.from_numpy(np.asarray(array))).numpy()
        if squeezed.ndim != 1:
            raise CheckpointError(
                f"{reader.source}: key {key!r} has shape {array.shape}, expected (C,) or "
                f"(1, 1, 1, C)"
            )
        return squeezed

    if reader.key("conv_root/kernel") in keys:
        put("stem_root.conv.weight", kernel("conv_root/kernel"), "conv_root/kernel")
        for ours, theirs in (("weight", "scale"), ("bias", "bias")):
            name = f"gn_root/{theirs}"
            if reader.key(name) not in keys:
                raise CheckpointError(f"{reader.source}: missing key {reader.key(name)!r}")
            put(f"stem_root.gn.{ours}", norm_param(name), name)
    prefix = reader.layout.prefix
    for key in sorted(keys):
        match = _STEM_UNIT_KEY.fullmatch(key[len(prefix) :]) if key.startswith(prefix) else None
        if match is None:
            continue
        stage, unit, module, leaf = match.groups()
        name = key[len(prefix) :]
        ours = f"stem_block{int(stage)}.unit{int(unit)}.{module}"
        if module.startswith("conv") and leaf == "kernel":
            put(f"{ours}.weight", kernel(name), name)
        elif module.startswith("gn") and leaf in ("scale", "bias"):
            put(f"{ours}.{'weight' if leaf == 'scale' else 'bias'}", norm_param(name), name)


def npz_stem_key(munet_name: str, prefix: str = "") -> str:
    """The `.npz` key of a munet stem tensor name (for naming a missing one).

    Raises:
        KeyError: not a stem tensor name.
    """
    leaf_names = {"weight": "scale", "bias": "bias"}
    if munet_name.startswith("stem_root."):
        module, _, leaf = munet_name.removeprefix("stem_root.").partition(".")
        if module == "conv" and leaf == "weight":
            return f"{prefix}conv_root/kernel"
        if module == "gn" and leaf in leaf_names:
            return f"{prefix}gn_root/{leaf_names[leaf]}"
    elif match := re.fullmatch(r"stem_block(\d+)\.unit(\d+)\.(\w+)\.(weight|bias)", munet_name):
        stage, unit, module, leaf = match.groups()
        npz_leaf = "kernel" if module.startswith("conv") else leaf_names[leaf]
        return f"{prefix}block{stage}/unit{unit}/{module}/{npz_leaf}"
    raise KeyError(munet_name)


def read_npz(path: Path, max_layers: int | None) -> RawCheckpoint:
    """Reads a `.npz` checkpoint of any recognised layout into munet names.

    Raises:
        CheckpointError: unreadable file, unknown layout, missing key, malformed array, or a
            key the ViT has no place for.
    """
    source = str(path)
    what = describe_non_npz(path)  # before numpy, whose errors for such files mislead
    if what is not None:
        raise CheckpointError(f"{source}: not a readable .npz file: it is {what}")
    try:
        npz = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as error:
        # A truncated download or a file of another kind.
        raise CheckpointError(f"{source}: not a readable .npz file ({error})") from error
    if not isinstance(npz, Mapping):  # a plain .npy array saved under a .npz name
        raise CheckpointError(f"{source}: not a readable .npz file (a single array)")
    with npz:
        return _convert_npz(npz, source, max_layers)


def _convert_npz(
    npz: Mapping[str, np.ndarray], source: str, max_layers: int | None
) -> RawCheckpoint:
    keys = set(npz.keys())
    layout = detect_npz_layout(keys, source)
    reader = _NpzReader(npz, layout, source)
    depth = _npz_depth(keys, layout, reader)
    loaded_depth = depth if max_layers is None else min(depth, max_layers)
    tensors: dict[str, torch.Tensor] = {}
    sources: dict[str, str] = {}

    def put(name: str, value: np.ndarray, key: str) -> None:
        tensors[name] = _tensor(value)
        sources[name] = reader.key(key)

    kernel = reader.get("embedding/kernel", 4)  # (p, p, 3, D) HWIO
    put("embedding.weight", kernel.transpose(3, 2, 0, 1), "embedding/kernel")
    put("embedding.bias", reader.get("embedding/bias", 1), "embedding/bias")
    put("cls.token", reader.get("cls", 3), "cls")
    if layout.big_vision_posembed:
        posembed = reader.get(BIG_VISION_POSEMBED_KEY, 3)
        grid_tokens = posembed.shape[1]
        if math.isqrt(grid_tokens) ** 2 == grid_tokens:
            # big_vision adds position embeddings to the patches only, then prepends cls: the
            # same as a zero position embedding for the cls token.
            zeros = np.zeros((1, 1, posembed.shape[2]), posembed.dtype)
            posembed = np.concatenate([zeros, posembed], axis=1)
        put("posembed_input.pos_embedding", posembed, BIG_VISION_POSEMBED_KEY)
    else:
        put("posembed_input.pos_embedding", reader.get(POSEMBED_KEY, 3), POSEMBED_KEY)

    _read_stem(keys, reader, put)

    norm1, attention, norm2, mlp = BLOCK_NAMES[layout.big_vision_names]
    num_heads = None
    for index in range(loaded_depth):
        if layout.scanned:
            base, at = "Transformer/encoderblock/", index
        else:
            base, at = f"Transformer/encoderblock_{index}/", None
        out = f"encoderblock_{index}."
        for ours, theirs in (("norm1", norm1), ("norm2", norm2)):
            put(
                out + f"{ours}.weight",
                reader.get(f"{base}{theirs}/scale", 1, at),
                f"{base}{theirs}/scale",
            )
            put(
                out + f"{ours}.bias",
                reader.get(f"{base}{theirs}/bias", 1, at),
                f"{base}{theirs}/bias",
            )
        attn = f"{base}{attention}/"
        kernels, biases = [], []
        for part in ("query", "key", "value"):
            part_kernel = reader.get(f"{attn}{part}/kernel", 3, at)  # (D, H, Dh)
            width, heads, head_dim = part_kernel.shape
            if num_heads is None:
                num_heads = heads
            elif heads != num_heads:
                raise CheckpointError(
                    f"{source}: key {reader.key(f'{attn}{part}/kernel')!r} has {heads} heads "
                    f"(shape {part_kernel.shape}), other blocks have {num_heads}"
                )
            kernels.append(part_kernel.reshape(width, heads * head_dim).T)
            biases.append(reader.get(f"{attn}{part}/bias", 2, at).reshape(-1))
        put(
            out + "attn.qkv.weight",
            np.concatenate(kernels, axis=0),
            f"{attn}{{query,key,value}}/kernel",
        )
        put(
            out + "attn.qkv.bias", np.concatenate(biases, axis=0), f"{attn}{{query,key,value}}/bias"
        )
        out_kernel = reader.get(f"{attn}out/kernel", 3, at)  # (H, Dh, D)
        heads, head_dim, width = out_kernel.shape
        put(
            out + "attn.proj.weight",
            out_kernel.reshape(heads * head_dim, width).T,
            f"{attn}out/kernel",
        )
        put(out + "attn.proj.bias", reader.get(f"{attn}out/bias", 1, at), f"{attn}out/bias")
        for layer in (0, 1):
            dense = f"{base}{mlp}/Dense_{layer}/"
            put(
                out + f"mlp.fc{layer + 1}.weight",
                reader.get(dense + "kernel", 2, at).T,
                dense + "kernel",
            )
            put(out + f"mlp.fc{layer + 1}.bias", reader.get(dense + "bias", 1, at), dense + "bias")

    put(
        "encoder_norm.weight",
        reader.get("Transformer/encoder_norm/scale", 1),
        "Transformer/encoder_norm/scale",
    )
    put(
        "encoder_norm.bias",
        reader.get("Transformer/encoder_norm/bias", 1),
        "Transformer/encoder_norm/bias",
    )
    has_pre_logits = any(key.startswith(layout.prefix + "pre_logits/") for key in keys)
    if has_pre_logits:
        # The file's head reads a pre_logits (Dense + tanh) representation this model does not
        # have, so that head would compute something else: drop both, as vit_jax does when
        # fine-tuning without a representation layer.
        logger.info("%s: has pre_logits; its head is not loaded", source)
    elif reader.key("head/kernel") in keys:
        put("head.weight", reader.get("head/kernel", 2).T, "head/kernel")
        put("head.bias", reader.get("head/bias", 1), "head/bias")

    skipped_block = re.compile(re.escape(layout.prefix) + r"Transformer/encoderblock(_\d+)?/")

    def is_skipped_block(key: str) -> bool:
        # Blocks beyond the ones asked for are never read (so a capped load of a big file
        # stays cheap); their keys are not checked either.
        match = skipped_block.match(key)
        if match is None:
            return False
        if match.group(1) is None:  # scan-stacked: read as soon as one block is loaded
            return loaded_depth == 0
        return int(match.group(1)[1:]) >= loaded_depth

    unused = sorted(
        key
        for key in keys - reader.used
        if key.startswith(layout.prefix)
        and not key.startswith(layout.prefix + "pre_logits/")
        and not (has_pre_logits and key.startswith(layout.prefix + "head/"))
        and not is_skipped_block(key)
    )
    if unused:
        raise CheckpointError(
            f"{source}: keys the ViT has no place for (layout {layout.describe()}): {unused[:10]}"
        )
    return RawCheckpoint(
        tensors,
        sources,
        depth,
        num_heads,
        layout.describe(),
        file_key=lambda name: npz_stem_key(name, layout.prefix),
    )
