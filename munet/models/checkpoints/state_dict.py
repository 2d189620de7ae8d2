"""Flat state dicts ({key: tensor}): telling their naming apart by key layout, reading only the
blocks asked for, and converting them to munet names. Also reads safetensors files (one file
or the shards a Hugging Face index lists).

The containers (safetensors, a `torch.save` file, a Hugging Face folder) only supply the keys
and a way to read some of them; the namings (timm, Hugging Face, munet) say what each key is.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from pathlib import Path

import torch

from munet.models.checkpoints.common import (
    POSEMBED,
    CheckpointError,
    Naming,
    RawCheckpoint,
    block_ids,
    check_numbering,
    with_cls_row,
)

# Reads the given keys: {key: tensor}.
TensorReader = Callable[[list[str]], dict[str, torch.Tensor]]


def detect_naming(keys: Collection[str], namings: Sequence[Naming], source: str) -> Naming:
    """The first naming whose marker key is among `keys`.

    Raises:
        CheckpointError: none matches; the message lists a few keys and the known namings.
    """
    for naming in namings:
        if naming.matches(keys):
            return naming
    known = "; ".join(f"{naming.name} ({naming.marker})" for naming in namings)
    raise CheckpointError(
        f"{source}: unknown state-dict layout: no key marks a known naming; known: {known}; "
        f"first keys: {sorted(keys)[:8]}"
    )


def state_dict_checkpoint(
    keys: Collection[str],
    read: TensorReader,
    source: str,
    max_layers: int | None,
    container: str,
    namings: Sequence[Naming],
) -> tuple[RawCheckpoint, Naming]:
    """Converts a state dict to munet names, reading only blocks below `max_layers`.

    Args:
        keys: every key of the state dict.
        read: reads the tensors of some keys.
        source: the file or folder, for messages.
        max_layers: blocks to read (None: all).
        container: the file kind for `RawCheckpoint.layout` ("safetensors", "torch", ...).
        namings: the namings to try, in order.

    Returns:
        The checkpoint and the naming it was in.

    Raises:
        CheckpointError: unknown naming, a key the ViT has no place for, blocks not numbered
            0..n-1.
    """
    naming = detect_naming(keys, namings, source)
    file_blocks = {index for key in keys if (index := naming.block_index(key)) is not None}
    check_numbering(file_blocks, source)

    def wanted(key: str) -> bool:
        # Blocks past the cap are never read, so a capped load of a big file stays cheap.
        index = naming.block_index(key)
        return max_layers is None or index is None or index < max_layers

    tensors, sources = naming.convert(read([key for key in keys if wanted(key)]), source)
    check_numbering(block_ids(tensors), source)
    if POSEMBED in tensors:
        tensors[POSEMBED] = with_cls_row(tensors[POSEMBED])
    raw = RawCheckpoint(tensors, sources, len(file_blocks), None, f"{container}({naming.name})")
    if naming.file_key is not None:
        key_of = naming.file_key
        raw.file_key = lambda name: key_of(name, keys)
    return raw, naming


def safetensors_keys(path: Path) -> list[str]:
    """The keys of a safetensors file.

    Raises:
        CheckpointError: not a readable safetensors file.
    """
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(path), framework="pt") as handle:
            return list(handle.keys())
    except (SafetensorError, OSError) as error:
        raise CheckpointError(f"{path}: not a readable safetensors file ({error})") from error


def safetensors_tensors(path: Path, keys: Collection[str]) -> dict[str, torch.Tensor]:
    """Reads some tensors of a safetensors file (fresh CPU tensors, nothing else is read).

    Raises:
        CheckpointError: not a readable safetensors file, or a damaged tensor.
    """
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(path), framework="pt") as handle:
            return {key: handle.get_tensor(key) for key in keys}
    except (SafetensorError, OSError) as error:
        raise CheckpointError(f"{path}: not a readable safetensors file ({error})") from error


def read_safetensors(
    path: Path, max_layers: int | None, namings: Sequence[Naming]
) -> tuple[RawCheckpoint, Naming]:
    """Reads a safetensors state dict in any of `namings`.

    Raises:
        CheckpointError: as `state_dict_checkpoint`, or an unreadable file.
    """
    keys = safetensors_keys(path)
    return state_dict_checkpoint(
        keys,
        lambda wanted: safetensors_tensors(path, wanted),
        str(path),
        max_layers,
        "safetensors",
        namings,
    )
