"""Safetensors shards of components: writing, and lazy (memory-mapped) checked reading.

A shard holds whole components; tensor `t` of component `name:agent:id` is stored under
`name:agent:id/t`. The safetensors header is parsed here (8-byte little-endian length + JSON),
so a tensor can be built straight on a private memory map of the file (local disk) or from a
ranged read (other filesystems) without reading the rest of the shard, and nothing on this
path unpickles anything.
"""

from __future__ import annotations

import json
import math
import os
import re
import struct
import threading
from collections.abc import Mapping
from dataclasses import dataclass

import torch
from safetensors.torch import save

from munet.files import save_safetensors_file
from munet.system.component import Component, Tensors, TensorSpec, tensors_checksum
from munet.system.errors import ComponentCorruptError, CorruptStateError
from munet.system.fs import StateFS

_TO_SAFETENSORS = {
    torch.float64: "F64",
    torch.float32: "F32",
    torch.float16: "F16",
    torch.bfloat16: "BF16",
    torch.int64: "I64",
    torch.int32: "I32",
    torch.int16: "I16",
    torch.int8: "I8",
    torch.uint8: "U8",
    torch.bool: "BOOL",
}
_FROM_SAFETENSORS = {v: k for k, v in _TO_SAFETENSORS.items()}
_DTYPE_NAMES = {dtype: str(dtype).removeprefix("torch.") for dtype in _TO_SAFETENSORS}
_DTYPES_BY_NAME = {v: k for k, v in _DTYPE_NAMES.items()}
_MAX_HEADER_BYTES = 100 * 1024 * 1024


def dtype_name(dtype: torch.dtype) -> str:
    """`torch.float32` -> `float32`.

    Raises:
        ValueError: a dtype the store does not keep.
    """
    if dtype not in _DTYPE_NAMES:
        raise ValueError(f"dtype {dtype} not supported; supported: {sorted(_DTYPES_BY_NAME)}")
    return _DTYPE_NAMES[dtype]


def dtype_from_name(name: str) -> torch.dtype:
    """`float32` -> `torch.float32`.

    Raises:
        CorruptStateError: an unknown dtype name.
    """
    if name not in _DTYPES_BY_NAME:
        raise CorruptStateError(f"unknown dtype {name!r}; known: {sorted(_DTYPES_BY_NAME)}")
    return _DTYPES_BY_NAME[name]


def stored_tensor_name(key: str, tensor_name: str) -> str:
    """Name of a component's tensor inside a shard."""
    return f"{key}/{tensor_name}"


def plan_shards(components: list[Component], max_shard_bytes: int) -> list[list[Component]]:
    """Group components (whole) into shards of at most `max_shard_bytes` where possible."""
    shards: list[list[Component]] = []
    current: list[Component] = []
    size = 0
    for c in components:
        if current and size + c.num_bytes > max_shard_bytes:
            shards.append(current)
            current, size = [], 0
        current.append(c)
        size += c.num_bytes
    if current:
        shards.append(current)
    return shards


def write_shard(fs: StateFS, path: str, components: list[Component]) -> None:
    """Write components to one safetensors file, durably."""
    tensors = {
        stored_tensor_name(c.key, name): tensor.contiguous()
        for c in components
        for name, tensor in c.tensors.items()
    }
    metadata = {"format": "pt", "munet": "components"}

    def save_local(local_path: str) -> None:
        try:
            save_safetensors_file(tensors, local_path, metadata=metadata)
        except Exception as err:
            # safetensors reports I/O failures (a full disk) as its own error type: give them
            # back as the OSError they are, so callers can tell a full disk from a bug.
            found = re.search(r"os error (\d+)", str(err))
            if found is None or isinstance(err, OSError):
                raise
            code = int(found.group(1))
            raise OSError(code, os.strerror(code), local_path) from err

    fs.write_with(path, save_local, lambda: save(tensors, metadata=metadata))


@dataclass(frozen=True)
class ComponentLocation:
    """Where a component's tensors are stored and what they must hash to."""

    file: str  # path of the shard relative to the state root
    sha256: str


class ShardReader:
    """Reads tensors of one shard; the header is parsed once, data read on demand.

    Args:
        fs: filesystem.
        path: absolute (fs) path of the shard.
        display: name used in error messages.
    """

    def __init__(self, fs: StateFS, path: str, display: str) -> None:
        self.fs = fs
        self.path = path
        self.display = display
        self._lock = threading.Lock()
        self._header: dict[str, dict] | None = None
        self._data_start = 0

    def _load_header(self) -> dict[str, dict]:
        with self._lock:
            if self._header is not None:
                return self._header
            try:
                size = self.fs.size(self.path)
            except FileNotFoundError:
                raise CorruptStateError(f"shard {self.display} is missing") from None
            if size < 8:
                raise CorruptStateError(f"shard {self.display} is truncated ({size} bytes)")
            (header_len,) = struct.unpack("<Q", self.fs.read_range(self.path, 0, 8))
            if header_len > min(_MAX_HEADER_BYTES, size - 8):
                raise CorruptStateError(
                    f"shard {self.display}: header length {header_len} does not fit the file "
                    f"({size} bytes); the file is corrupt or truncated"
                )
            raw = self.fs.read_range(self.path, 8, 8 + header_len)
            try:
                header = json.loads(raw.decode())
            except (UnicodeDecodeError, json.JSONDecodeError) as e:
                raise CorruptStateError(f"shard {self.display}: corrupt header ({e})") from None
            if not isinstance(header, dict):
                raise CorruptStateError(f"shard {self.display}: header is not a JSON object")
            header.pop("__metadata__", None)
            self._data_start = 8 + header_len
            data_size = size - self._data_start
            for name, entry in header.items():
                begin, end = (
                    entry.get("data_offsets", (None, None))
                    if isinstance(entry, dict)
                    else (None, None)
                )
                if not (isinstance(begin, int) and isinstance(end, int)) or not (
                    0 <= begin <= end <= data_size
                ):
                    raise CorruptStateError(
                        f"shard {self.display}: tensor {name!r} has offsets outside the file; "
                        "the file is corrupt or truncated"
                    )
            self._header = header
            return header

    def _read_span(self, begin: int, end: int) -> tuple[torch.Tensor, int]:
        """uint8 tensor holding data bytes [begin, end) and the offset of `begin` in it.

        Each call maps (or reads) its own span: tensors of different components never share
        memory, so changing one in place cannot change another.
        """
        start, stop = self._data_start + begin, self._data_start + end
        mapped = self.fs.map_range(self.path, start, stop)
        if mapped is not None:
            buffer, shift = mapped
            return torch.frombuffer(buffer, dtype=torch.uint8, count=shift + end - begin), shift
        if stop == start:
            return torch.empty(0, dtype=torch.uint8), 0
        raw = self.fs.read_range(self.path, start, stop)
        return torch.frombuffer(bytearray(raw), dtype=torch.uint8), 0

    def check_component(self, key: str, spec: TensorSpec) -> dict[str, tuple[int, int]]:
        """Check the shard's header holds the component's tensors, without reading their data.

        Returns:
            Each tensor's data offsets.

        Raises:
            ComponentCorruptError: a tensor is missing, of another shape, dtype or size.
            CorruptStateError: the shard itself is missing, truncated or has a bad header.
        """
        header = self._load_header()
        where = f"component {key} in shard {self.display}"
        offsets: dict[str, tuple[int, int]] = {}
        for name, (shape, dtype) in spec.items():
            entry = header.get(stored_tensor_name(key, name))
            if entry is None:
                raise ComponentCorruptError(f"{where}: tensor {name!r} is missing")
            stored_dtype = _FROM_SAFETENSORS.get(entry.get("dtype"))
            stored_shape = tuple(entry.get("shape", ()))
            if stored_dtype != dtype or stored_shape != tuple(shape):
                raise ComponentCorruptError(
                    f"{where}: tensor {name!r} is {entry.get('dtype')}{list(stored_shape)}, "
                    f"expected {dtype_name(dtype)}{list(shape)}"
                )
            begin, end = entry["data_offsets"]
            expected_bytes = math.prod(shape) * torch.empty((), dtype=dtype).element_size()
            if end - begin != expected_bytes:
                raise ComponentCorruptError(
                    f"{where}: tensor {name!r} has {end - begin} bytes, expected {expected_bytes}"
                )
            offsets[name] = (begin, end)
        return offsets

    def read_component(
        self, key: str, spec: TensorSpec, sha256: str, check_checksum: bool = True
    ) -> Tensors:
        """The component's tensors, checked against the index and (unless `check_checksum` is
        False, for a component verified before) the checksum.

        Raises:
            ComponentCorruptError: a tensor is missing, of another shape or dtype, or the
                checksum differs (naming the component and the shard).
            CorruptStateError: the shard itself cannot be read.
        """
        offsets = self.check_component(key, spec)
        # One span per component (its tensors are written next to each other).
        span_begin = min((b for b, _ in offsets.values()), default=0)
        span_end = max((e for _, e in offsets.values()), default=0)
        span, shift = self._read_span(span_begin, span_end)
        tensors: Tensors = {}
        for name, (shape, dtype) in spec.items():
            begin, end = offsets[name]
            first = shift + begin - span_begin
            tensors[name] = span[first : first + end - begin].view(dtype).reshape(shape)
        got = tensors_checksum(tensors) if check_checksum else sha256
        if got != sha256:
            raise ComponentCorruptError(
                f"component {key} in shard {self.display} failed its checksum "
                f"(sha256 {got[:12]}..., expected {sha256[:12]}...): the file is corrupt"
            )
        return tensors


def spec_to_json(spec: TensorSpec) -> dict[str, dict]:
    """Index entry of a component's tensors: {name: {shape, dtype}}."""
    return {
        name: {"shape": list(shape), "dtype": dtype_name(dtype)}
        for name, (shape, dtype) in spec.items()
    }


def spec_from_json(data: Mapping[str, Mapping]) -> TensorSpec:
    """Inverse of `spec_to_json`."""
    return {
        name: (tuple(int(d) for d in entry["shape"]), dtype_from_name(entry["dtype"]))
        for name, entry in data.items()
    }
