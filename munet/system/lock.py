"""The per-agent lock: one process at a time runs (writes) an agent.

On local disk the lock is an `flock` on `<agent dir>/.lock`: the kernel drops it when its
process dies, however it dies, so a lock left by a `kill -9` is free and the next process takes
it over (the file still names the dead owner, which is reported). The file is never deleted:
deleting a lock file lets two processes lock two different inodes. The file also records the
owner (host, pid, start time) so a refusal says who holds the agent.

On other filesystems (object stores, any fsspec URL; local disk without flock) processes on
different machines share no kernel, so the lock is a lease in the store itself: claim files with
a heartbeat and an expiry (`munet.system.lease`). A killed holder's lease is taken over once it
expires; a live holder's never is.
"""

from __future__ import annotations

import json
import os
import socket
import time
import warnings
from typing import Any

from munet.system.errors import AgentLockedError, LockNotHeldError

try:
    import fcntl
except ImportError:  # Not POSIX (Windows): fall back to the lease.
    fcntl = None  # type: ignore[assignment]
from munet.system.fs import LocalFS, StateFS
from munet.system.lease import AgentLease
from munet.system.lease import describe_holder as _describe

LOCK_FILE = ".lock"


def _owner_info() -> dict[str, Any]:
    return {
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def _parse_owner(data: bytes) -> dict[str, Any] | None:
    try:
        owner = json.loads(data.decode() or "null")
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    return owner if isinstance(owner, dict) else None


class AgentLock:
    """Exclusive right to run one agent; a context manager.

    Args:
        fs: the state dir's filesystem.
        agent_dir: the agent's folder (created if missing).
        agent_id: for messages.
        lease_ttl: seconds a lease stays live without a heartbeat (fsspec stores; default
            `MUNET_LEASE_TTL` or 30).
        lease_tag: the launch this process belongs to; a live lease of the same launch (a
            killed earlier attempt) is waited out instead of refused.

    Attributes:
        took_over: the previous owner when a stale lock (dead process) was taken over.
    """

    def __init__(
        self,
        fs: StateFS,
        agent_dir: str,
        agent_id: str,
        *,
        lease_ttl: float | None = None,
        lease_tag: str | None = None,
    ) -> None:
        self.fs = fs
        self.agent_dir = agent_dir
        self.agent_id = agent_id
        self.path = fs.join(agent_dir, LOCK_FILE)
        self.took_over: dict[str, Any] | None = None
        self._fd: int | None = None
        self._held = False
        self.lease: AgentLease | None = None
        #: On object stores, the agent's commit pointer as this holder last wrote it
        #: (munet.system.head.HeldHead), set by the store once the lock is taken.
        self.head: Any = None
        if not (isinstance(fs, LocalFS) and fcntl is not None):
            self.lease = AgentLease(fs, agent_dir, agent_id, ttl=lease_ttl, tag=lease_tag)
            self.path = self.lease.dir

    @property
    def held(self) -> bool:
        """Whether this object holds the lock now (a lost or unrenewed lease is not held)."""
        if self.lease is not None:
            return self._held and self.lease.held
        return self._held

    def fence(self) -> float:
        """Prove, right before a commit, that this process still holds the lock.

        An flock is held by the kernel for as long as this process lives: nothing to check. A
        lease is re-read from the store and renewed (`AgentLease.fence`).

        Returns:
            Seconds the lock is sure to stay held (infinite for an flock).

        Raises:
            LockNotHeldError: this object does not hold the lock.
            LeaseLostError: the lease expired or another process took it over.
        """
        if not self._held:
            raise LockNotHeldError(f"agent {self.agent_id!r}: its lock is not held")
        if self.lease is None:
            return float("inf")
        return self.lease.fence()

    def acquire(self, stacklevel: int = 2) -> AgentLock:
        """Take the lock.

        Args:
            stacklevel: where the stale-lock warning points (2: the caller).

        Raises:
            AgentLockedError: a live process (or another lock in this process) holds it.
        """
        if self._held:
            raise AgentLockedError(f"agent {self.agent_id!r}: this lock is already held")
        self.fs.makedirs(self.agent_dir)
        try:
            if self.lease is None:
                self._acquire_flock()
            else:
                self.lease.acquire()
                self.took_over = self.lease.took_over
            self._held = True
            if self.took_over:
                gone = "that process is gone" if self.lease is None else "its lease expired"
                warnings.warn(
                    f"agent {self.agent_id!r}: took over a stale lock left by "
                    f"{_describe(self.took_over)} ({gone})",
                    stacklevel=stacklevel,
                )
        except BaseException:
            # Cut short once taken (Ctrl-C or a cancelled task between two instructions, the
            # warning turned into an error): the caller never gets this lock, so give it back.
            self.release()
            raise
        return self

    def _acquire_flock(self) -> None:
        # No-follow: a `.lock` planted as a link must not truncate the file it points to.
        # 0o666 under the umask: under umask 002 a group member can open (and lock) it too.
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = _parse_owner(os.pread(fd, 4096, 0))
            os.close(fd)
            raise AgentLockedError(
                f"agent {self.agent_id!r} is already running: its lock {self.path} is held by "
                f"{_describe(owner)}; stop that process or choose another agent"
            ) from None
        self._fd = fd  # held from here: a cut-short acquire's release closes it
        previous = _parse_owner(os.pread(fd, 4096, 0))
        if previous and previous.get("pid") is not None:
            self.took_over = previous
        data = json.dumps(_owner_info()).encode()
        os.ftruncate(fd, 0)
        os.pwrite(fd, data, 0)
        os.fsync(fd)

    def release(self) -> None:
        """Give the lock back (idempotent; also what an interrupted `acquire` took)."""
        self._held = False
        if self._fd is not None:
            # Clear the owner so the next taker does not report a stale lock.
            os.ftruncate(self._fd, 0)
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
        elif self.lease is not None:
            self.lease.release()

    def __enter__(self) -> AgentLock:
        if not self._held:
            self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
