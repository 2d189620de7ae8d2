"""munet's own state-dict names (`"<component>.<tensor>"`, a model's `state_dict()`), and
writing components as a safetensors state dict in munet or timm names."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path

import torch

from munet.models.checkpoints.common import (
    BLOCK_TENSORS,
    MUNET_BLOCK,
    TOP_TENSORS,
    Naming,
    as_float32,
    unknown_keys_error,
)
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
        if key in TOP_TENSORS or (match and match.group(2) in BLOCK_TENSORS):
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


def save_safetensors(path: str | Path, components: Components, *, naming: str = "munet") -> None:
    """Writes components as a flat safetensors state dict, with munet or timm names.

    Raises:
        ValueError: unknown naming.
    """
    from safetensors.torch import save_file

    if naming not in ("munet", "timm"):
        raise ValueError(f"unknown naming {naming!r}; expected 'munet' or 'timm'")
    state = {}
    for component, tensors in components.items():
        for name, tensor in tensors.items():
            flat = f"{component}.{name}"
            if naming == "timm":
                flat = timm_name(flat)
            state[flat] = tensor.detach().to("cpu").contiguous()
    save_file(state, str(path))
