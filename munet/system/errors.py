"""Exceptions raised by the system state (ids, locks, store, checksums)."""

from __future__ import annotations


class SystemStateError(Exception):
    """Base class of every error raised by `munet.system`."""


class InvalidNameError(SystemStateError, ValueError):
    """An agent id, task name or component name that is malformed or could escape the state dir."""


class AgentLockedError(SystemStateError):
    """Another live process (or another lock in this one) is running the agent."""


class LockNotHeldError(SystemStateError):
    """A state was written without holding the agent's lock."""


class StateExistsError(SystemStateError, FileExistsError):
    """A committed state with the same cycle and generation already exists."""


class CorruptStateError(SystemStateError):
    """A committed state (manifest, shard header) cannot be read or is inconsistent."""


class ComponentCorruptError(CorruptStateError):
    """A component's tensors do not match the checksum recorded when they were written."""


class StateRemovedError(SystemStateError, FileNotFoundError):
    """A state read lazily (a component's tensors are read on first use, after `load`) was
    removed since by its owner: a newer committed state replaced it (an intermediate state
    goes at the end of its cycle), or it was quarantined. Nothing is damaged: load again.

    Attributes:
        state: the removed state, as `<agent>/<state folder>`.
    """

    def __init__(self, message: str, state: str = "") -> None:
        super().__init__(message)
        self.state = state

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class UnsafePathError(SystemStateError):
    """An entry of the state dir is a symbolic link (never followed) or lies outside it."""


class LeaseLostError(AgentLockedError):
    """This process no longer holds the agent's lease (it expired or another process took it
    over): it commits nothing more; the agent's committed states are intact."""


class StoreUnavailableError(SystemStateError, ConnectionError):
    """The object store could not be reached (after bounded retries): an outage, not a damaged
    state. Committed states are intact.

    Attributes:
        endpoint: where the store was asked (a URL, or the filesystem's protocol).
        operation: what failed, e.g. `write state_1_0/manifest.json`.
    """

    def __init__(self, message: str, endpoint: str = "", operation: str = "") -> None:
        super().__init__(message)
        self.endpoint = endpoint
        self.operation = operation

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""
