"""The store on any fsspec filesystem (object stores, `memory://`), and `open_state_fs`, which
picks the filesystem for a state dir given as a path or URL (see `munet.system.fs`).

There a directory rename is not atomic, so the store writes a state in place and its manifest
last (created, never overwritten: `munet.system.fencing`). Every request is retried on
transient errors within a bound, then reported as an outage (`munet.system.outage`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import threading
from collections.abc import Callable
from typing import TypeVar

import fsspec
import fsspec.asyn

from munet.system.fs import LocalFS, StateFS, VersionMismatchError
from munet.system.outage import (
    RetryPolicy,
    call_with_retries,
    client_retry_options,
    disable_client_retries,
    endpoint_of,
)

T = TypeVar("T")


class FsspecFS(StateFS):
    """Any fsspec filesystem. Commits are manifest-last, not rename-based.

    Every request is retried on transient errors (network, overloaded server) within `retry`,
    then fails with `StoreUnavailableError` naming the endpoint and the operation
    (`munet.system.outage`).
    """

    atomic_rename = False

    def __init__(self, fs: fsspec.AbstractFileSystem, retry: RetryPolicy | None = None) -> None:
        self.fs = fs
        self.retry = retry if retry is not None else RetryPolicy.from_env()
        self.endpoint = endpoint_of(fs)
        # Stores whose create-only write is one conditional request (S3 `If-None-Match: *`,
        # GCS `ifGenerationMatch=0`); elsewhere it is a check, then a write.
        self.atomic_create = type(fs).__module__.split(".")[0] in ("s3fs", "gcsfs")
        # Conditional replacement (the commit pointer): S3's `If-Match` on the ETag, and the
        # in-process memory filesystem under a lock. GCS's generation match is not wired
        # through gcsfs here (create-if-absent only): there and elsewhere it is
        # read-compare-write (docs/cluster.md says what that leaves open).
        self._s3 = type(fs).__module__.split(".")[0] == "s3fs"
        self._memory = getattr(fs, "protocol", None) in ("memory", ("memory",))
        self.atomic_replace = self._s3 or self._memory

    def _call(self, operation: str, path: str, request: Callable[[], T]) -> T:
        return call_with_retries(request, f"{operation} {path}", self.endpoint, self.retry)

    def _forget(self, path: str) -> None:
        """Drop fsspec's cached listing of `path` (and its parents): ask the store afresh."""
        self.fs.invalidate_cache(path)

    def listdir(self, path: str) -> list[str]:
        self._forget(path)
        try:
            entries = self._call("list", path, lambda: self.fs.ls(path, detail=False))
        except FileNotFoundError:
            return []
        base = path.rstrip("/")
        # Some stores list a directory's own marker object; it is not an entry.
        return sorted(
            e.rstrip("/").rsplit("/", 1)[-1] for e in entries if e.rstrip("/") != base
        )

    def exists(self, path: str) -> bool:
        self._forget(path)
        return self._call("check", path, lambda: self.fs.exists(path))

    def dirs_with_file(self, path: str, filename: str) -> list[str]:
        # One recursive listing (object stores page through keys, 1,000 per request) instead
        # of an existence check per subdirectory.
        self._forget(path)
        try:
            files = self._call("list", path, lambda: self.fs.find(path))
        except FileNotFoundError:
            return []
        base = path.rstrip("/") + "/"
        found = set()
        for file in files:
            file = file.lstrip("/") if not base.startswith("/") else file
            if not file.startswith(base):
                continue
            parts = file[len(base) :].split("/")
            if len(parts) == 2 and parts[1] == filename:
                found.add(parts[0])
        return sorted(found)

    def makedirs(self, path: str) -> None:
        self._call("create folder", path, lambda: self.fs.makedirs(path, exist_ok=True))

    def write_bytes(self, path: str, data: bytes) -> None:
        # One PUT: an object store makes the whole object visible at once, never a prefix.
        self._call("write", path, lambda: self.fs.pipe_file(path, data))
        self._forget(path)

    def create_bytes(self, path: str, data: bytes) -> None:
        def create() -> None:
            try:
                self.fs.pipe_file(path, data, mode="create")
            except FileExistsError:
                raise
            except OSError as err:
                if _precondition_failed(err):
                    raise FileExistsError(errno.EEXIST, "already exists", path) from err
                raise

        self._call("create", path, create)
        self._forget(path)

    def list_files(self, path: str) -> list[str]:
        self._forget(path)
        try:
            files = self._call("list", path, lambda: self.fs.find(path))
        except FileNotFoundError:
            return []
        base = path.strip("/") + "/"
        return sorted(f.strip("/")[len(base):] for f in files if f.strip("/").startswith(base))

    def read_versioned(self, path: str) -> tuple[bytes, str] | None:
        if not self._s3:
            with _MEMORY_LOCK if self._memory else _NO_LOCK:
                return super().read_versioned(path)
        self._forget(path)
        bucket, key, _ = self.fs.split_path(path)

        async def get() -> tuple[bytes, str]:
            # One GET: the bytes and the ETag of the same version of the object.
            response = await self.fs._call_s3("get_object", Bucket=bucket, Key=key)
            try:
                return await response["Body"].read(), response["ETag"]
            finally:
                response["Body"].close()

        try:
            return self._call("read", path, lambda: fsspec.asyn.sync(self.fs.loop, get))
        except FileNotFoundError:
            return None

    def replace_if(self, path: str, data: bytes, version: str | None) -> str:
        if not self._s3:
            with _MEMORY_LOCK if self._memory else _NO_LOCK:
                return super().replace_if(path, data, version)
        condition = {"IfNoneMatch": "*"} if version is None else {"IfMatch": version}

        def put() -> str:
            try:
                out = self.fs.pipe_file(path, data, **condition)
            except FileNotFoundError:
                raise VersionMismatchError(path, version, None) from None  # If-Match, gone
            except OSError as err:
                if _precondition_failed(err):
                    raise VersionMismatchError(path, version, "another") from None
                raise
            return out["ETag"]

        try:
            return self._call("replace", path, put)
        finally:
            self._forget(path)

    def read_bytes(self, path: str) -> bytes:
        # s3fs checks the file's size first, from a cached listing of its folder when there
        # is one (see open_state_fs): drop it so a file written since is found.
        self._forget(path)
        return self._call("read", path, lambda: self.fs.cat_file(path))

    def read_range(self, path: str, start: int, end: int) -> bytes:
        return self._call(
            "read", f"{path}[{start}:{end}]", lambda: self.fs.cat_file(path, start=start, end=end)
        )

    def size(self, path: str) -> int:
        self._forget(path)
        return int(self._call("check", path, lambda: self.fs.size(path)))

    def remove_file(self, path: str) -> None:
        self._forget(path)
        if not self.exists(path):
            raise FileNotFoundError(path)
        self._call("delete", path, lambda: self.fs.rm_file(path))
        self._forget(path)

    def rename(self, src: str, dst: str) -> None:
        self._call("rename", src, lambda: self.fs.mv(src, dst, recursive=True))
        self._forget(src)
        self._forget(dst)

    def remove_tree(self, path: str) -> None:
        if self.exists(path):
            self._call("delete", path, lambda: self.fs.rm(path, recursive=True))
        self._forget(path)


def _precondition_failed(err: OSError) -> bool:
    """Whether s3fs's error is a failed condition (`412 PreconditionFailed`, or AWS's `409
    ConditionalRequestConflict` between two conditional writes): s3fs maps codes it does not
    recognise to EINVAL, keeping the botocore error as the cause."""
    text = f"{err} {err.__cause__!r}"
    return any(mark in text for mark in ("PreconditionFailed", "412", "ConditionalRequest"))


# memory:// lives in this process: one lock makes its compare-and-swap atomic.
_MEMORY_LOCK = threading.RLock()
_NO_LOCK = contextlib.nullcontext()


def open_state_fs(root: str | os.PathLike[str]) -> tuple[StateFS, str]:
    """The filesystem and root path for a state dir given as a local path or fsspec URL.

    `file://` URLs and plain paths use `LocalFS`; anything else (`memory://`, `s3://`, ...)
    uses fsspec.
    """
    root = os.fspath(root)
    if "://" not in root or root.startswith("file://"):
        local = root[len("file://") :] if root.startswith("file://") else root
        # The root itself may be a link (a user's choice); what lies under it may not.
        resolved = os.path.realpath(local)
        return LocalFS(resolved), resolved
    try:
        # No listings cache: fsspec keeps a folder's listing for ever and answers later
        # existence and size checks inside it from that listing, so a state committed after
        # its folder was first listed would stay invisible (s3fs reads a file's size that way
        # before every whole-file read: a manifest written later read as missing).
        protocol = root.split("://", 1)[0]
        fs, path = fsspec.core.url_to_fs(
            root, use_listings_cache=False, **client_retry_options(protocol)
        )
    except TypeError:  # A filesystem whose constructor takes no storage options.
        fs, path = fsspec.core.url_to_fs(root)
    disable_client_retries(fs)
    return FsspecFS(fs), path.rstrip("/")
