"""The storage seam: where the state dir lives (local disk by default, any fsspec URL).

Everything the store does to files goes through `StateFS`, with `/`-separated paths relative
to nothing (absolute local paths or the fsspec path of the URL). `LocalFS` gives durable,
atomic commits (fsync + rename) and memory-mapped reads. `FsspecFS` (munet.system.fsspec_fs)
runs the same store on any fsspec filesystem (object stores, `memory://`): there a directory
rename is not atomic, so the store writes a state in place and its manifest last, which is the
commit marker readers need.

fsspec caches directory listings in each filesystem instance (s3fs and gcsfs: for ever by
default) and shares instances between every user of the same URL in a process, so `FsspecFS`
drops the cached listing of a path before each listing or metadata query: an agent that runs for
days still sees the states other agents committed after it started. Reads of part of a file are
ranged requests (`cat_file(start, end)`): opening a path reads its components' bytes, not
whole shards.
"""

from __future__ import annotations

import errno
import hashlib
import mmap
import os
import shutil
import stat
from abc import ABC, abstractmethod
from collections.abc import Callable

from munet.system.errors import UnsafePathError

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

    # Versioned files (compare-and-swap): the commit pointer of object stores. -----------------
    #: Whether `replace_if` is one conditional request the store decides (S3 `If-Match` /
    #: `If-None-Match`; in-process for `memory://`). Elsewhere it is a read, a comparison and
    #: a write, with a window between them.
    atomic_replace: bool = False

    def read_versioned(self, path: str) -> tuple[bytes, str] | None:
        """A file's bytes and its version (a token that changes whenever the file does), read
        together; None when it does not exist."""
        try:
            data = self.read_bytes(path)
        except FileNotFoundError:
            return None
        return data, content_version(data)

    def replace_if(self, path: str, data: bytes, version: str | None) -> str:
        """Write a whole file only if its version is still `version` (None: only if it does
        not exist), as one conditional request where `atomic_replace`.

        Returns:
            The new version.

        Raises:
            VersionMismatchError: the file changed (or appeared, or vanished); nothing written.
        """
        current = self.read_versioned(path)
        found = None if current is None else current[1]
        if found != version:
            raise VersionMismatchError(path, version, found)
        self.write_bytes(path, data)
        return content_version(data)

    def list_files(self, path: str) -> list[str]:
        """Every file under `path`, as `/`-separated paths relative to it ([] if missing)."""
        raise NotImplementedError

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


class VersionMismatchError(Exception):
    """A conditional write found another version of the file than the one it was given."""

    def __init__(self, path: str, expected: str | None, found: str | None = None) -> None:
        super().__init__(
            f"{path}: version {found or 'none'} where {expected or 'none'} was expected"
        )
        self.path, self.expected, self.found = path, expected, found


def content_version(data: bytes) -> str:
    """The version of a file where the store keeps none: the sha256 of its bytes."""
    return hashlib.sha256(data).hexdigest()


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

    def _open(self, path: str, flags: int, mode: int = 0o666) -> int:
        # 0o666: the process's umask decides (0644 under 022, 0664 under 002), as for any
        # file a program creates, so a group sharing the state dir can write it.
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

    def list_files(self, path: str) -> list[str]:
        self._refuse_links(path)
        out = []
        # os.walk never descends into linked folders (followlinks=False); links are listed.
        for folder, _, files in os.walk(path):
            relative = os.path.relpath(folder, path)
            for name in files:
                out.append(name if relative == os.curdir else f"{relative}/{name}")
        return sorted(out)

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


__all__ = ["LocalFS", "StateFS"]
