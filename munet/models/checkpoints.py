"""Reading and writing ViT checkpoints: Google `.npz` (all augreg / big_vision layouts) and
safetensors (timm names or munet's own component names). Nothing here unpickles.

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
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from munet.models.arch import VitArch
from munet.models.components import Components, component_shapes
from munet.models.posembed import resize_posembed

logger = logging.getLogger(__name__)

NPZ_PREFIXES = ("", "opt/target/", "params/", "params/img/")
_BLOCK_NAMES = {
    # (first LayerNorm, attention, second LayerNorm, MLP)
    False: ("LayerNorm_0", "MultiHeadDotProductAttention_1", "LayerNorm_2", "MlpBlock_3"),
    True: ("LayerNorm_0", "MultiHeadDotProductAttention_0", "LayerNorm_1", "MlpBlock_0"),
}
_POSEMBED_KEY = "Transformer/posembed_input/pos_embedding"
_BIG_VISION_POSEMBED_KEY = "pos_embedding"


class CheckpointError(ValueError):
    """A checkpoint that cannot be loaded: unknown layout, missing key or wrong shape."""


@dataclass
class RawCheckpoint:
    """A checkpoint converted to munet tensor names, before fitting it to an architecture.

    Attributes:
        tensors: {flat munet name: float32 tensor}, all blocks the file has; the position
            embedding at the file's own grid size (with a cls row).
        sources: {flat munet name: the file key(s) it came from}, for error messages.
        depth: number of encoder blocks in the file.
        num_heads: attention heads recorded in the file (None for fused-qkv formats).
        layout: a short description of the detected layout.
    """

    tensors: dict[str, torch.Tensor]
    sources: dict[str, str]
    depth: int
    num_heads: int | None
    layout: str


@dataclass(frozen=True)
class NpzLayout:
    """A `.npz` key layout (see the module docstring)."""

    prefix: str = ""
    big_vision_names: bool = False
    scanned: bool = False
    big_vision_posembed: bool = False

    def describe(self) -> str:
        return (
            f"npz(prefix={self.prefix!r}, "
            f"names={'big_vision' if self.big_vision_names else 'vit_jax'}, "
            f"blocks={'scanned' if self.scanned else 'per-layer'}, "
            f"posembed={'top-level' if self.big_vision_posembed else 'Transformer'})"
        )


# --------------------------------------------------------------------------- npz reading


def detect_npz_layout(keys: set[str], source: str = "checkpoint") -> NpzLayout:
    """Works out the layout of a set of `.npz` keys.

    Raises:
        CheckpointError: no known prefix holds `embedding/kernel`, or the blocks or position
            embedding are in no known form.
    """
    prefixes = [prefix for prefix in NPZ_PREFIXES if f"{prefix}embedding/kernel" in keys]
    if not prefixes:
        sample = sorted(keys)[:8]
        raise CheckpointError(
            f"{source}: unknown checkpoint layout: no 'embedding/kernel' under any known prefix "
            f"{list(NPZ_PREFIXES)}; first keys: {sample}"
        )
    prefix = max(prefixes, key=len)
    block_keys = [key[len(prefix) :] for key in keys if key.startswith(prefix + "Transformer/")]
    scanned = any(key.startswith("Transformer/encoderblock/") for key in block_keys)
    big_vision_names = any("MultiHeadDotProductAttention_0/" in key for key in block_keys)
    if big_vision_names and any("MultiHeadDotProductAttention_1/" in key for key in block_keys):
        raise CheckpointError(f"{source}: mixes vit_jax and big_vision block names")
    if f"{prefix}{_POSEMBED_KEY}" in keys:
        big_vision_posembed = False
    elif f"{prefix}{_BIG_VISION_POSEMBED_KEY}" in keys:
        big_vision_posembed = True
    else:
        raise CheckpointError(
            f"{source}: missing key {prefix + _POSEMBED_KEY!r} "
            f"(nor big_vision's {prefix + _BIG_VISION_POSEMBED_KEY!r})"
        )
    return NpzLayout(prefix, big_vision_names, scanned, big_vision_posembed)


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


def _read_npz(path: Path, max_layers: int | None) -> RawCheckpoint:
    source = str(path)
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
        posembed = reader.get(_BIG_VISION_POSEMBED_KEY, 3)
        grid_tokens = posembed.shape[1]
        if math.isqrt(grid_tokens) ** 2 == grid_tokens:
            # big_vision adds position embeddings to the patches only, then prepends cls: the
            # same as a zero position embedding for the cls token.
            zeros = np.zeros((1, 1, posembed.shape[2]), posembed.dtype)
            posembed = np.concatenate([zeros, posembed], axis=1)
        put("posembed_input.pos_embedding", posembed, _BIG_VISION_POSEMBED_KEY)
    else:
        put("posembed_input.pos_embedding", reader.get(_POSEMBED_KEY, 3), _POSEMBED_KEY)

    norm1, attention, norm2, mlp = _BLOCK_NAMES[layout.big_vision_names]
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
    return RawCheckpoint(tensors, sources, depth, num_heads, layout.describe())


# ------------------------------------------------------------------- safetensors reading

_TIMM_BLOCK = re.compile(r"blocks\.(\d+)\.(.+)")
_TIMM_TOP = {
    "patch_embed.proj.weight": "embedding.weight",
    "patch_embed.proj.bias": "embedding.bias",
    "cls_token": "cls.token",
    "pos_embed": "posembed_input.pos_embedding",
    "norm.weight": "encoder_norm.weight",
    "norm.bias": "encoder_norm.bias",
    "head.weight": "head.weight",
    "head.bias": "head.bias",
}
_BLOCK_TENSORS = (
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
_MUNET_BLOCK = re.compile(r"encoderblock_(\d+)\.(.+)")
_ANY_BLOCK = re.compile(r"(?:blocks\.|encoderblock_)(\d+)\.")


def _beyond(key: str, max_layers: int | None) -> bool:
    """Whether a state-dict key belongs to a block past `max_layers` (not read)."""
    match = _ANY_BLOCK.match(key)
    return max_layers is not None and match is not None and int(match.group(1)) >= max_layers


def _read_safetensors(path: Path, max_layers: int | None) -> RawCheckpoint:
    from safetensors import SafetensorError, safe_open

    source = str(path)
    try:
        with safe_open(str(path), framework="pt") as handle:
            all_keys = list(handle.keys())
            state = {
                key: handle.get_tensor(key) for key in all_keys if not _beyond(key, max_layers)
            }
    except (SafetensorError, OSError) as error:
        raise CheckpointError(f"{source}: not a readable safetensors file ({error})") from error
    if "patch_embed.proj.weight" in state:
        naming = "timm"
    elif "embedding.weight" in state:
        naming = "munet"
    else:
        raise CheckpointError(
            f"{source}: unknown state-dict layout: neither timm's 'patch_embed.proj.weight' nor "
            f"munet's 'embedding.weight'; first keys: {sorted(state)[:8]}"
        )
    tensors: dict[str, torch.Tensor] = {}
    sources: dict[str, str] = {}
    unknown = []
    for key, tensor in state.items():
        if naming == "timm":
            match = _TIMM_BLOCK.fullmatch(key)
            if match and match.group(2) in _BLOCK_TENSORS:
                name = f"encoderblock_{match.group(1)}.{match.group(2)}"
            else:
                name = _TIMM_TOP.get(key)
        else:
            match = _MUNET_BLOCK.fullmatch(key)
            known = set(_TIMM_TOP.values())
            name = key if (key in known or (match and match.group(2) in _BLOCK_TENSORS)) else None
        if name is None:
            unknown.append(key)
            continue
        tensors[name] = tensor.to(torch.float32).contiguous()
        sources[name] = key
    if unknown:
        raise CheckpointError(
            f"{source}: keys the ViT has no place for ({naming} names): {unknown[:10]}"
        )
    block_ids = {int(m.group(1)) for name in tensors if (m := _MUNET_BLOCK.fullmatch(name))}
    depth = len(block_ids)
    if max_layers is not None and depth == max_layers:
        # Blocks past the cap were not read; count them from the names alone.
        depth = len({int(m.group(1)) for key in all_keys if (m := _ANY_BLOCK.match(key))})
    if block_ids != set(range(len(block_ids))):
        raise CheckpointError(
            f"{source}: encoder blocks are not numbered 0..{depth - 1}: {sorted(block_ids)}"
        )
    posembed = tensors.get("posembed_input.pos_embedding")
    if posembed is not None and posembed.dim() == 3:
        grid_tokens = posembed.shape[1]
        if math.isqrt(grid_tokens) ** 2 == grid_tokens:
            # timm's no_embed_class: patches-only position embedding, cls added afterwards.
            zero_row = posembed.new_zeros(1, 1, posembed.shape[2])
            tensors["posembed_input.pos_embedding"] = torch.cat([zero_row, posembed], dim=1)
    return RawCheckpoint(tensors, sources, depth, None, f"safetensors({naming})")


# ----------------------------------------------------------------------------- loading


def read_checkpoint(path: str | Path, max_layers: int | None = None) -> RawCheckpoint:
    """Reads a `.npz` or `.safetensors` checkpoint into munet tensor names.

    Args:
        path: the file.
        max_layers: read only the first `max_layers` encoder blocks (None: all). Arrays are
            read from disk on demand, so a capped read of a large file costs little.

    Raises:
        FileNotFoundError: no such file.
        CheckpointError: unknown extension or layout, missing key, malformed array.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint file not found: {path}")
    if path.suffix == ".npz":
        return _read_npz(path, max_layers)
    if path.suffix == ".safetensors":
        return _read_safetensors(path, max_layers)
    raise CheckpointError(
        f"{path}: unknown checkpoint extension {path.suffix!r}; expected .npz or .safetensors"
    )


def load_checkpoint(path: str | Path, arch: VitArch, image_size: int) -> Components:
    """Loads a checkpoint as a components mapping for `arch` at `image_size`.

    - Blocks: the first `arch.num_layers` blocks of the file (fewer than it has is fine,
      e.g. VitT3 caps Ti/16 to 3); asking for more is an error naming the missing key.
    - Position embedding: resized with `resize_posembed` if the grid differs.
    - Head: loaded only when `arch.num_classes` equals the file's class count; otherwise
      (or when the file has none) it is zero-initialised, like vit_jax's fresh head. A
      headless arch (num_classes=0) gets no head component.

    Returns:
        New float32 CPU tensors with `requires_grad=False`.

    Raises:
        FileNotFoundError: no such file.
        CheckpointError: unknown layout, a missing key, or a tensor whose shape does not fit
            `arch` (the message names the file key and both shapes).
    """
    raw = read_checkpoint(path, max_layers=arch.num_layers)
    if raw.num_heads is not None and raw.num_heads != arch.num_heads:
        raise CheckpointError(
            f"{path}: checkpoint has {raw.num_heads} attention heads, arch expects {arch.num_heads}"
        )
    if arch.num_layers > raw.depth:
        missing = f"encoderblock_{raw.depth}.norm1.weight"
        raise CheckpointError(
            f"{path}: arch asks for {arch.num_layers} encoder blocks, the checkpoint has "
            f"{raw.depth}: missing {missing} (key for block {raw.depth} of layout {raw.layout})"
        )
    tensors = dict(raw.tensors)
    posembed_name = "posembed_input.pos_embedding"
    posembed = tensors[posembed_name]
    if posembed.dim() != 3 or posembed.shape[-1] != arch.width:
        raise CheckpointError(
            f"{path}: key {raw.sources[posembed_name]!r} has shape {tuple(posembed.shape)}, "
            f"expected (1, tokens, {arch.width})"
        )
    try:
        tensors[posembed_name] = resize_posembed(posembed, arch.grid_size(image_size))
    except ValueError as error:
        raise CheckpointError(f"{path}: key {raw.sources[posembed_name]!r}: {error}") from error

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
                    f"{path}: missing tensor for {flat} (expected shape {shape}; "
                    f"layout {raw.layout})"
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
    return components


# ----------------------------------------------------------------------------- writing


def save_npz(
    path: str | Path,
    components: Components,
    arch: VitArch,
    *,
    prefix: str = "",
    big_vision_names: bool = False,
    scanned: bool = False,
) -> None:
    """Writes components in Google's `.npz` layout (the inverse of the loader).

    Args:
        path: output file.
        components: a full components mapping of `arch`.
        arch: needed for the head split of the attention kernels.
        prefix: one of NPZ_PREFIXES.
        big_vision_names: use big_vision's block module names.
        scanned: stack blocks under `Transformer/encoderblock/` with a leading depth axis.

    Raises:
        ValueError: unknown prefix, or scanned with zero blocks.
    """
    if prefix not in NPZ_PREFIXES:
        raise ValueError(f"unknown npz prefix {prefix!r}; known: {list(NPZ_PREFIXES)}")
    if scanned and arch.num_layers == 0:
        raise ValueError("a scanned checkpoint needs at least one encoder block")

    def array(tensor: torch.Tensor) -> np.ndarray:
        return tensor.detach().to("cpu", torch.float32).numpy()

    width, heads, head_dim = arch.width, arch.num_heads, arch.head_dim
    out: dict[str, np.ndarray] = {
        "embedding/kernel": array(components["embedding"]["weight"]).transpose(2, 3, 1, 0),
        "embedding/bias": array(components["embedding"]["bias"]),
        "cls": array(components["cls"]["token"]),
        _POSEMBED_KEY: array(components["posembed_input"]["pos_embedding"]),
        "Transformer/encoder_norm/scale": array(components["encoder_norm"]["weight"]),
        "Transformer/encoder_norm/bias": array(components["encoder_norm"]["bias"]),
    }
    if "head" in components:
        out["head/kernel"] = array(components["head"]["weight"]).T
        out["head/bias"] = array(components["head"]["bias"])
    norm1, attention, norm2, mlp = _BLOCK_NAMES[big_vision_names]
    blocks: list[dict[str, np.ndarray]] = []
    for index in range(arch.num_layers):
        block = components[f"encoderblock_{index}"]
        qkv_weight = array(block["attn.qkv.weight"])
        qkv_bias = array(block["attn.qkv.bias"])
        entries = {
            f"{norm1}/scale": array(block["norm1.weight"]),
            f"{norm1}/bias": array(block["norm1.bias"]),
            f"{norm2}/scale": array(block["norm2.weight"]),
            f"{norm2}/bias": array(block["norm2.bias"]),
            f"{attention}/out/kernel": array(block["attn.proj.weight"]).T.reshape(
                heads, head_dim, width
            ),
            f"{attention}/out/bias": array(block["attn.proj.bias"]),
            f"{mlp}/Dense_0/kernel": array(block["mlp.fc1.weight"]).T,
            f"{mlp}/Dense_0/bias": array(block["mlp.fc1.bias"]),
            f"{mlp}/Dense_1/kernel": array(block["mlp.fc2.weight"]).T,
            f"{mlp}/Dense_1/bias": array(block["mlp.fc2.bias"]),
        }
        for part_index, part in enumerate(("query", "key", "value")):
            rows = slice(part_index * width, (part_index + 1) * width)
            entries[f"{attention}/{part}/kernel"] = qkv_weight[rows].T.reshape(
                width, heads, head_dim
            )
            entries[f"{attention}/{part}/bias"] = qkv_bias[rows].reshape(heads, head_dim)
        blocks.append(entries)
    if scanned:
        for name in blocks[0]:
            out[f"Transformer/encoderblock/{name}"] = np.stack([block[name] for block in blocks])
    else:
        for index, entries in enumerate(blocks):
            for name, value in entries.items():
                out[f"Transformer/encoderblock_{index}/{name}"] = value
    np.savez(path, **{prefix + key: np.ascontiguousarray(value) for key, value in out.items()})


def save_safetensors(path: str | Path, components: Components, *, naming: str = "munet") -> None:
    """Writes components as a flat safetensors state dict, with munet or timm names.

    Raises:
        ValueError: unknown naming.
    """
    from munet.files import save_safetensors_file

    if naming not in ("munet", "timm"):
        raise ValueError(f"unknown naming {naming!r}; expected 'munet' or 'timm'")
    to_timm = {ours: theirs for theirs, ours in _TIMM_TOP.items()}
    state = {}
    for component, tensors in components.items():
        for name, tensor in tensors.items():
            flat = f"{component}.{name}"
            if naming == "timm":
                match = re.fullmatch(r"encoderblock_(\d+)", component)
                flat = f"blocks.{match.group(1)}.{name}" if match else to_timm[flat]
            state[flat] = tensor.detach().to("cpu").contiguous()
    save_safetensors_file(state, path)
