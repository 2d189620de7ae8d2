"""munet's own state-dict names (`"<component>.<tensor>"`, a model's `state_dict()`, a hybrid's
stem included), munet export folders (`munet export`) of a singlepath path, and writing
components as a safetensors state dict in munet or timm names."""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from pathlib import Path

import torch

from munet.models.checkpoints.common import (
    BLOCK_TENSORS,
    MUNET_BLOCK,
    TOP_TENSORS,
    CheckpointError,
    Naming,
    RawCheckpoint,
    as_float32,
    is_stem_name,
    unknown_keys_error,
)
from munet.models.checkpoints.state_dict import read_safetensors
from munet.models.checkpoints.timm import timm_name
from munet.models.components import Components


def _matches(keys: Collection[str]) -> bool:
    return "embedding.weight" in keys


def _block_index(key: str) -> int | None:
    match = MUNET_BLOCK.match(key)
    return int(match.group(1)) if match else None


def _convert(
    state: Mapping[str, torch.Tensor], source: str
) -> tuple[dict[str, torch.Tensor], dict[str, str]]:
    tensors: dict[str, torch.Tensor] = {}
    sources: dict[str, str] = {}
    unknown = []
    for key, tensor in state.items():
        match = MUNET_BLOCK.fullmatch(key)
        if key in TOP_TENSORS or (match and match.group(2) in BLOCK_TENSORS) or is_stem_name(key):
            tensors[key] = as_float32(tensor)
            sources[key] = key
        else:
            unknown.append(key)
    if unknown:
        raise unknown_keys_error(source, "munet", unknown)
    return tensors, sources


MUNET = Naming(
    name="munet",
    marker="munet's 'embedding.weight'",
    matches=_matches,
    block_index=_block_index,
    convert=_convert,
)


def is_export_folder(folder: Path) -> bool:
    """Whether `folder` is a munet export (its config.json names munet's export format)."""
    from munet.models.export import CONFIG_FILE, EXPORT_FORMAT

    try:
        config = json.loads((folder / CONFIG_FILE).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False
    return isinstance(config, dict) and config.get("format") == EXPORT_FORMAT


def read_export_folder(folder: Path, max_layers: int | None) -> RawCheckpoint:
    """Reads the tensors of a munet export folder of a singlepath (`vit`) path.

    Raises:
        CheckpointError: another export version, a multipath export, unreadable tensors.
    """
    from munet.models.export import MODEL_FILE, ExportError, read_export_config

    try:
        config = read_export_config(folder)
    except ExportError as error:
        raise CheckpointError(str(error)) from error
    kind = config.get("model", {}).get("type") if isinstance(config.get("model"), dict) else None
    if kind != "vit":
        raise CheckpointError(
            f"{folder}: a munet export of a {kind!r} model; a checkpoint is one ViT (an export "
            f"of a singlepath path)"
        )
    raw, _ = read_safetensors(folder / MODEL_FILE, max_layers, (MUNET,))
    raw.layout = "munet export"
    return raw


def save_safetensors(path: str | Path, components: Components, *, naming: str = "munet") -> None:
    """Writes components as a flat safetensors state dict, with munet or timm names.

    Raises:
        ValueError: unknown naming.
    """
    from munet.files import save_safetensors_file

    if naming not in ("munet", "timm"):
        raise ValueError(f"unknown naming {naming!r}; expected 'munet' or 'timm'")
    # timm nests a hybrid's root under `.stem.` when the stem has stages.
    staged = any(component.startswith("stem_block") for component in components)
    state = {}
    for component, tensors in components.items():
        for name, tensor in tensors.items():
            flat = f"{component}.{name}"
            if naming == "timm":
                flat = timm_name(flat, staged=staged)
            state[flat] = tensor.detach().to("cpu").contiguous()
    save_safetensors_file(state, path)
