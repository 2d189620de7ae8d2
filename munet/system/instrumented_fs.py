"""A `StateFS` that counts requests and bytes and adds a fixed latency per request: an object
store's round trip, simulated on any filesystem (benchmarks/system_scale.py, the lease and S3
tests)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from munet.system.fs import StateFS


class InstrumentedFS(StateFS):
    """Wraps a filesystem to count requests and bytes read, and to add a fixed latency to each
    request: an object store's round trip, simulated (benchmarks and tests).

    Args:
        inner: the filesystem doing the work.
        latency: seconds slept before each request.

    Attributes:
        requests: requests made, by operation name.
        bytes_read: bytes returned by `read_bytes` and `read_range`.
    """

    def __init__(self, inner: StateFS, latency: float = 0.0) -> None:
        self.inner = inner
        self.latency = float(latency)
        self.atomic_rename = inner.atomic_rename
        self.atomic_create = inner.atomic_create
        self.atomic_replace = inner.atomic_replace
        self.requests: dict[str, int] = {}
        self.bytes_read = 0
        self._count_lock = threading.Lock()

    def _request(self, name: str) -> None:
        with self._count_lock:
            self.requests[name] = self.requests.get(name, 0) + 1
        if self.latency > 0:
            time.sleep(self.latency)

    def _read(self, data: bytes) -> bytes:
        with self._count_lock:
            self.bytes_read += len(data)
        return data

    def reset(self) -> None:
        """Zero the counters."""
        with self._count_lock:
            self.requests = {}
            self.bytes_read = 0

    @property
    def total_requests(self) -> int:
        return sum(self.requests.values())

    def join(self, *parts: str) -> str:
        return self.inner.join(*parts)

    def listdir(self, path: str) -> list[str]:
        self._request("listdir")
        return self.inner.listdir(path)

    def exists(self, path: str) -> bool:
        self._request("exists")
        return self.inner.exists(path)

    def dirs_with_file(self, path: str, filename: str) -> list[str]:
        self._request("find")
        return self.inner.dirs_with_file(path, filename)

    def makedirs(self, path: str) -> None:
        self._request("makedirs")
        self.inner.makedirs(path)

    def write_bytes(self, path: str, data: bytes) -> None:
        self._request("write")
        self.inner.write_bytes(path, data)

    def create_bytes(self, path: str, data: bytes) -> None:
        self._request("write")
        self.inner.create_bytes(path, data)

    def write_with(self, path: str, write: Callable[[str], None], data: Callable[[], bytes]):
        self._request("write")
        self.inner.write_with(path, write, data)

    def read_versioned(self, path: str) -> tuple[bytes, str] | None:
        self._request("read")
        found = self.inner.read_versioned(path)
        if found is not None:
            self._read(found[0])
        return found

    def replace_if(self, path: str, data: bytes, version: str | None) -> str:
        self._request("write")
        return self.inner.replace_if(path, data, version)

    def list_files(self, path: str) -> list[str]:
        self._request("find")
        return self.inner.list_files(path)

    def read_bytes(self, path: str) -> bytes:
        self._request("read")
        return self._read(self.inner.read_bytes(path))

    def read_range(self, path: str, start: int, end: int) -> bytes:
        self._request("read_range")
        return self._read(self.inner.read_range(path, start, end))

    def size(self, path: str) -> int:
        self._request("size")
        return self.inner.size(path)

    def remove_file(self, path: str) -> None:
        self._request("remove")
        self.inner.remove_file(path)

    def rename(self, src: str, dst: str) -> None:
        self._request("rename")
        self.inner.rename(src, dst)

    def remove_tree(self, path: str) -> None:
        self._request("remove")
        self.inner.remove_tree(path)

    def sync_dir(self, path: str) -> None:
        self.inner.sync_dir(path)

    # No memory maps: every read goes through read_range, so it is counted.
