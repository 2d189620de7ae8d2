"""`torch.save`d state dicts (`.pth`, `.pt`, `.bin`, e.g. a Hugging Face `pytorch_model.bin`),
read with `torch.load(weights_only=True)`: only tensors and plain containers are accepted, so
loading runs no code from the file.

Accepted content: a flat {key: tensor}, or one wrapped the way training scripts save it
(`{"state_dict": ...}`, `{"model": ...}` or `{"module": ...}` beside non-tensor entries such
as an epoch counter), with DistributedDataParallel's `module.` key prefix removed.
"""

from __future__ import annotations

import logging
import pickle
import re
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import torch

from munet.models.checkpoints.common import CheckpointError, Naming, RawCheckpoint
from munet.models.checkpoints.state_dict import state_dict_checkpoint

logger = logging.getLogger(__name__)

TORCH_SUFFIXES = (".pth", ".pt", ".bin")
_WRAPPERS = ("state_dict", "model", "module")


def load_torch_state_dict(path: Path) -> dict[str, torch.Tensor]:
    """Loads a `torch.save`d state dict as {key: tensor} on the CPU.

    A zip-format file (torch >= 1.6) is memory-mapped, so tensors that are never asked for
    (blocks past a cap) are never read from disk.

    Raises:
        CheckpointError: not a torch file, a file needing code to unpickle (a whole pickled
            model, custom classes), or content that is not a {name: tensor} state dict.
    """
    try:
        loaded = torch.load(
            path, map_location="cpu", weights_only=True, mmap=zipfile.is_zipfile(path)
        )
    except (pickle.UnpicklingError, RuntimeError, EOFError, OSError, ValueError) as error:
        raise CheckpointError(
            f"{path}: not a torch state dict that torch.load(weights_only=True) can read "
            f"({_reason(error)}); munet reads a saved state_dict() of tensors, never a "
            f"pickled model object"
        ) from error
    return _unwrap(loaded, str(path))


def _reason(error: Exception) -> str:
    """The informative part of torch.load's error (not its advice to turn weights_only off)."""
    text = str(error)
    marker = "WeightsUnpickler error:"
    if marker in text:
        text = text.split(marker, 1)[1]
    paragraphs = [" ".join(part.split()) for part in text.split("\n\n")]
    first = next((part for part in paragraphs if part), "")
    sentence = re.split(r"(?<=[a-z0-9])\. ", first, maxsplit=1)[0]
    return sentence.rstrip(".") or type(error).__name__


def _unwrap(loaded: object, source: str) -> dict[str, torch.Tensor]:
    if isinstance(loaded, Mapping) and not any(
        isinstance(value, torch.Tensor) for value in loaded.values()
    ):
        for wrapper in _WRAPPERS:
            if isinstance(loaded.get(wrapper), Mapping):
                logger.info("%s: reading the state dict under %r", source, wrapper)
                loaded = loaded[wrapper]
                break
    if not isinstance(loaded, Mapping):
        raise CheckpointError(
            f"{source}: holds a {type(loaded).__name__}, expected a state dict {{name: tensor}}"
        )
    not_tensors = [key for key, value in loaded.items() if not isinstance(value, torch.Tensor)]
    if not_tensors:
        key = not_tensors[0]
        raise CheckpointError(
            f"{source}: key {key!r} holds a {type(loaded[key]).__name__}, not a tensor "
            f"(expected a state dict {{name: tensor}}; wrappers read: {list(_WRAPPERS)})"
        )
    state = {str(key): value for key, value in loaded.items()}
    if state and all(key.startswith("module.") for key in state):
        state = {key.removeprefix("module."): value for key, value in state.items()}
    return state


def read_torch(
    path: Path, max_layers: int | None, namings: Sequence[Naming]
) -> tuple[RawCheckpoint, Naming]:
    """Reads a `.pth`/`.pt`/`.bin` state dict in any of `namings` (detected by key layout).

    Raises:
        CheckpointError: as `load_torch_state_dict` and `state_dict_checkpoint`.
    """
    state = load_torch_state_dict(path)
    # Cloned: a memory-mapped tensor would otherwise keep reading the user's file.
    return state_dict_checkpoint(
        list(state),
        lambda wanted: {key: state[key].clone() for key in wanted},
        str(path),
        max_layers,
        "torch",
        namings,
    )
