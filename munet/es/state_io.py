"""Saving and loading small dataclasses of tensors: safetensors for tensors, JSON for the rest.

A state class is a frozen dataclass whose fields are tensors, ``dict[str, Tensor]`` (inner
states) or JSON values. It is written as ``NAME.safetensors`` + ``NAME.json``; nothing on the load
path unpickles.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file

from munet.files import save_safetensors_file

FORMAT_VERSION = 1


def _flatten(state: Any) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    tensors: dict[str, torch.Tensor] = {}
    layout: dict[str, Any] = {}
    for field in dataclasses.fields(state):
        value = getattr(state, field.name)
        if isinstance(value, torch.Tensor):
            tensors[field.name] = value
            layout[field.name] = {"kind": "tensor"}
        elif isinstance(value, dict) and all(isinstance(v, torch.Tensor) for v in value.values()):
            for key, tensor in value.items():
                if "/" in key:
                    raise ValueError(f"state key {key!r} of field {field.name!r} contains '/'")
                tensors[f"{field.name}/{key}"] = tensor
            layout[field.name] = {"kind": "tensors", "keys": list(value)}
        else:
            json.dumps(value)  # raises TypeError early for values JSON cannot hold
            layout[field.name] = {"kind": "json", "value": value}
    return tensors, layout


def _with_suffix(base: Path, suffix: str) -> Path:
    # Appended, not substituted: a name like "state.v1" keeps its dot.
    return base.with_name(base.name + suffix)


def _write_atomically(path: Path, write) -> None:
    temporary = path.with_name(path.name + ".tmp")
    write(temporary)
    with open(temporary, "rb") as handle:
        os.fsync(handle.fileno())
    os.replace(temporary, path)


def save_state(state: Any, path: str | os.PathLike) -> None:
    """Writes ``state`` (a dataclass instance) to ``path.safetensors`` and ``path.json``."""
    base = Path(path)
    base.parent.mkdir(parents=True, exist_ok=True)
    tensors, layout = _flatten(state)
    # safetensors refuses views that share memory; give it independent contiguous copies.
    tensors = {name: tensor.detach().contiguous().clone() for name, tensor in tensors.items()}
    header = {"format_version": FORMAT_VERSION, "class": type(state).__name__, "fields": layout}
    _write_atomically(
        _with_suffix(base, ".safetensors"), lambda target: save_safetensors_file(tensors, target)
    )
    _write_atomically(
        _with_suffix(base, ".json"),
        lambda target: target.write_text(json.dumps(header, indent=1, sort_keys=True)),
    )


def load_state(state_class: type, path: str | os.PathLike) -> Any:
    """Reads a state written by ``save_state`` back into ``state_class``.

    Raises:
        FileNotFoundError: when either file is missing.
        ValueError: when the files hold another class, an unknown format, or missing tensors.
    """
    base = Path(path)
    json_path, tensor_path = _with_suffix(base, ".json"), _with_suffix(base, ".safetensors")
    for required in (json_path, tensor_path):
        if not required.exists():
            raise FileNotFoundError(f"no saved state at {required}")
    header = json.loads(json_path.read_text())
    if header.get("format_version") != FORMAT_VERSION:
        raise ValueError(
            f"{json_path}: format_version {header.get('format_version')!r}; "
            f"expected {FORMAT_VERSION}"
        )
    if header.get("class") != state_class.__name__:
        raise ValueError(
            f"{json_path} holds a {header.get('class')!r}; expected {state_class.__name__!r}"
        )
    tensors = load_file(str(tensor_path))
    values: dict[str, Any] = {}
    for name, spec in header["fields"].items():
        try:
            if spec["kind"] == "tensor":
                values[name] = tensors[name]
            elif spec["kind"] == "tensors":
                values[name] = {key: tensors[f"{name}/{key}"] for key in spec["keys"]}
            else:
                values[name] = spec["value"]
        except KeyError as missing:
            raise ValueError(f"{tensor_path} lacks tensor {missing} for field {name!r}") from None
    expected = {field.name for field in dataclasses.fields(state_class)}
    if set(values) != expected:
        raise ValueError(
            f"{json_path} has fields {sorted(values)}; {state_class.__name__} has "
            f"{sorted(expected)}"
        )
    return state_class(**values)
