"""The storage seam: where the state dir lives (local disk by default, any fsspec URL).

Everything the store does to files goes through `StateFS`, with `/`-separated paths relative
to nothing (absolute local paths or the fsspec path of the URL). `LocalFS` gives durable,
atomic commits (fsync + rename) and memory-mapped reads. `FsspecFS` runs the same store on any
fsspec filesystem (object stores, `memory://`): there a directory rename is not atomic, so the
store writes a state in place and its manifest last, which is the commit marker readers need.

fsspec caches directory listings in each filesystem instance (s3fs and gcsfs: for ever by
default) and shares instances between every user of the same URL in a process, so `FsspecFS`
drops the cached listing of a path before each listing or metadata query: an agent that runs for
days still sees the states other agents committed after it started. Reads of part of a file are
ranged requests (`cat_file(start, end)`): opening a path reads its components' bytes, not
whole shards.
"""

from __future__ import annotations

import errno
import mmap
import os
import shutil
import stat
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import TypeVar

import fsspec

from munet.system.errors import UnsafePathError
from munet.system.outage import (
    RetryPolicy,
    call_with_retries,
    client_retry_options,
    disable_client_retries,
    endpoint_of,
)

T = TypeVar("T")

# Opening with O_NOFOLLOW fails (ELOOP) when the last path component is a symbolic link;
# the folders above it are checked with lstat (`LocalFS._refuse_links`).
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


class StateFS(ABC):
    """File operations the store needs."""

    #: Whether `rename` of a directory is atomic (a state becomes visible all at once).
    atomic_rename: bool = False
    #: Whether `create_bytes` is one atomic create-if-absent (no window between its check and
    #: its write).
    atomic_create: bool = False

    def join(self, *parts: str) -> str:
        """Join path parts with `/`."""
        return "/".join(p.rstrip("/") for p in parts[:-1]) + "/" + parts[-1]

    @abstractmethod
    def listdir(self, path: str) -> list[str]:
        """Names (not paths) in a directory; [] when it does not exist."""

    @abstractmethod
    def exists(self, path: str) -> bool:
        """Whether a file or directory exists."""

    def dirs_with_file(self, path: str, filename: str) -> list[str]:
        """Names of the subdirectories of `path` that hold a file `filename`."""
        return [
            name for name in self.listdir(path) if self.exists(self.join(path, name, filename))
        ]

    @abstractmethod
    def makedirs(self, path: str) -> None:
        """Create a directory and its parents (no error if it exists)."""

    @abstractmethod
    def write_bytes(self, path: str, data: bytes) -> None:
        """Write a whole file durably."""

    def create_bytes(self, path: str, data: bytes) -> None:
        """Write a whole file that must not exist yet (where the store can, in one atomic
        conditional request; see `atomic_create`).

        Raises:
            FileExistsError: the file exists (nothing was written).
        """
        if self.exists(path):
            raise FileExistsError(errno.EEXIST, "already exists", path)
        self.write_bytes(path, data)

    def write_with(self, path: str, write: Callable[[str], None], data: Callable[[], bytes]):
        """Write a file either by handing a local path to `write` or by storing `data()`."""
        self.write_bytes(path, data())

    @abstractmethod
    def read_bytes(self, path: str) -> bytes:
        """Read a whole file."""

    @abstractmethod
    def read_range(self, path: str, start: int, end: int) -> bytes:
        """Read bytes [start, end) of a file."""

    @abstractmethod
    def size(self, path: str) -> int:
        """Size of a file in bytes."""

    @abstractmethod
    def remove_file(self, path: str) -> None:
        """Delete one file.

        Raises:
            FileNotFoundError: it does not exist.
        """

    @abstractmethod
    def rename(self, src: str, dst: str) -> None:
        """Rename a directory (atomic where `atomic_rename`)."""

    @abstractmethod
    def remove_tree(self, path: str) -> None:
        """Remove a directory and everything under it (no error if missing)."""

    def sync_dir(self, path: str) -> None:
        """Make a directory's entries durable (no-op where meaningless)."""
        return None

    def map_range(self, path: str, start: int, end: int) -> tuple[mmap.mmap, int] | None:
        """A private (copy-on-write) memory map covering bytes [start, end) of a file, and the
        offset of `start` in it; None where memory maps are unsupported."""
        return None


class LocalFS(StateFS):
    """Local (POSIX) disk: fsync'ed writes, atomic renames, memory-mapped reads.

    Nothing under `root` is followed through a symbolic link: every operation first checks
    (lstat) each entry between the root and its target, and files are opened with O_NOFOLLOW,
    so a link planted in the state dir (say `.lock -> ~/.bashrc`) is refused with
    `UnsafePathError` instead of being read, truncated or written through. The root itself
    may be a link (it is resolved once, when the store opens).

    Args:
        root: the state dir; None checks only the last component of each path.
    """

    atomic_rename = True
    atomic_create = True  # O_EXCL

    def __init__(self, root: str | None = None) -> None:
        self.root = None if root is None else os.path.abspath(root)

    def join(self, *parts: str) -> str:
        return os.path.join(*parts)

    def _refuse_links(self, path: str) -> None:
        """Raise `UnsafePathError` if an existing entry from the root down to `path` is a link."""
        if self.root is None:
            candidates = [path]
        else:
            relative = os.path.relpath(path, self.root)
            if relative == os.curdir:
                return
            if relative == os.pardir or relative.startswith(os.pardir + os.sep):
                raise UnsafePathError(f"{path} is outside the state dir {self.root}")
            candidates = []
            current = self.root
            for part in relative.split(os.sep):
                current = os.path.join(current, part)
                candidates.append(current)
        for candidate in candidates:
            try:
                mode = os.lstat(candidate).st_mode
            except (FileNotFoundError, NotADirectoryError):
                return  # Nothing further down exists either.
            if stat.S_ISLNK(mode):
                raise UnsafePathError(_link_message(candidate, self.root))

    def _open(self, path: str, flags: int, mode: int = 0o644) -> int:
        self._refuse_links(path)
        try:
            return os.open(path, flags | _NOFOLLOW | _CLOEXEC, mode)
        except OSError as err:
            # ELOOP: the link appeared after the check (or the platform reports it so).
            if os.path.islink(path):
                raise UnsafePathError(_link_message(path, self.root)) from None
            raise err

    def listdir(self, path: str) -> list[str]:
        self._refuse_links(path)
        try:
            return sorted(os.listdir(path))
        except (FileNotFoundError, NotADirectoryError):
            return []

    def exists(self, path: str) -> bool:
        self._refuse_links(path)
        return os.path.lexists(path)

    def is_link(self, path: str) -> bool:
        """Whether `path` itself is a symbolic link (not followed)."""
        return os.path.islink(path)

    def makedirs(self, path: str) -> None:
        self._refuse_links(path)
        os.makedirs(path, exist_ok=True)
        self._refuse_links(path)  # A link planted meanwhile would have been followed.

    def write_bytes(self, path: str, data: bytes) -> None:
        fd = self._open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())

    def create_bytes(self, path: str, data: bytes) -> None:
        fd = self._open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())

    def write_with(self, path: str, write: Callable[[str], None], data: Callable[[], bytes]):
        # Let the writer stream to disk (no second copy in memory), then make it durable. The
        # file is created here first (no-follow), so the writer never opens a planted link.
        os.close(self._open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC))
        write(path)
        fd = self._open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def read_bytes(self, path: str) -> bytes:
        with os.fdopen(self._open(path, os.O_RDONLY), "rb") as f:
            return f.read()

    def read_range(self, path: str, start: int, end: int) -> bytes:
        with os.fdopen(self._open(path, os.O_RDONLY), "rb") as f:
            f.seek(start)
            return f.read(end - start)

    def size(self, path: str) -> int:
        self._refuse_links(path)
        return os.lstat(path).st_size

    def remove_file(self, path: str) -> None:
        # A link itself is removed, never its target; a linked folder above it is refused.
        self._refuse_links(os.path.dirname(path))
        os.remove(path)

    def rename(self, src: str, dst: str) -> None:
        # os.rename of a directory onto a missing name is atomic on POSIX; it fails (rather
        # than merging) if dst exists and is not empty. It renames a link itself, never its
        # target, but links are refused anyway.
        self._refuse_links(src)
        self._refuse_links(dst)
        os.rename(src, dst)
        self.sync_dir(os.path.dirname(dst))

    def remove_tree(self, path: str) -> None:
        # rmtree never follows links (it removes them, or refuses a link as its top).
        if os.path.islink(path):
            os.unlink(path)
            return
        shutil.rmtree(path, ignore_errors=True)

    def sync_dir(self, path: str) -> None:
        try:
            fd = self._open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        except OSError:
            return
        try:
            os.fsync(fd)
        except OSError:
            pass  # Some filesystems refuse fsync on directories; the rename still happened.
        finally:
            os.close(fd)

    def map_range(self, path: str, start: int, end: int) -> tuple[mmap.mmap, int] | None:
        if end <= start:
            return None
        aligned = start - start % mmap.ALLOCATIONGRANULARITY
        fd = self._open(path, os.O_RDONLY)
        try:
            # ACCESS_COPY: pages are read from the file on demand and writes stay private to
            # this map, so tensors built on it are writable without ever touching the file.
            mapped = mmap.mmap(fd, end - aligned, offset=aligned, access=mmap.ACCESS_COPY)
        finally:
            os.close(fd)  # The map keeps its own reference to the file.
        return mapped, start - aligned


def _link_message(path: str, root: str | None) -> str:
    try:
        target = os.readlink(path)
    except OSError:
        target = "?"
    resolved = os.path.realpath(path)
    inside = root is not None and (resolved == root or resolved.startswith(root + os.sep))
    where = "inside" if inside else "outside"
    return (
        f"{path} is a symbolic link (to {target}, {where} the state dir); munet never follows "
        "links in a state dir: remove the link (or replace it with the real file or folder)"
    )


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
                # s3fs maps a failed `If-None-Match` it does not recognise to EINVAL.
                if "PreconditionFailed" in repr(err.__cause__) or "412" in str(err):
                    raise FileExistsError(errno.EEXIST, "already exists", path) from err
                raise

        self._call("create", path, create)
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
