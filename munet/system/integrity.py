"""Checking committed states, and moving damaged ones aside (`munet doctor`).

A state is *whole* when its manifest parses and describes it, its path records rebuild (every
component they use is in its index, every wrapped path is published with it), and every
component of its index is readable: its shard exists (not a link), the shard's header holds
the component's tensors with the recorded shapes and dtypes inside the file, and, at the
`checksums` level, the tensors hash to the recorded sha256.

Levels (what a reader pays):

- `structure`: manifest + shard headers; reads a few KiB per shard, no tensor data. Finds a
  garbage or hand-edited manifest, a deleted, truncated or replaced shard; not a flipped bit
  inside tensor data. `munet leaderboard` uses it (it shows metrics, never tensors).
- `checksums`: `structure` plus hashing every indexed component once per store object
  (committed shards never change, so a component verified once stays verified for the rest of
  the process). `SystemStore.load` uses it, so an agent never trains on another agent's
  damaged tensors: a bad state is skipped at load time, not found mid-generation.

Quarantine never deletes: a damaged state is renamed to `ROOT/.quarantine/<agent>/<state>-<utc>`
while holding the agent's lock; a damaged state whose shards a whole state still uses is left
in place (moving it would break that state) and reported.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from munet.system.errors import (
    AgentLockedError,
    StoreUnavailableError,
    SystemStateError,
)
from munet.system.state_checks import check_state_files

if TYPE_CHECKING:
    from munet.system.manifest import StateRef
    from munet.system.store import SystemStore

QUARANTINE_DIR = ".quarantine"


@dataclass(frozen=True)
class DamagedState:
    """A committed state that failed its check."""

    state: StateRef
    problem: str


@dataclass(frozen=True)
class QuarantineResult:
    """What `quarantine` did with one damaged state: moved to `moved_to`, or kept (why)."""

    state: StateRef
    moved_to: str | None
    kept_because: str | None = None


def find_damaged(store: SystemStore, verify: str = "checksums") -> list[DamagedState]:
    """Every committed state of every agent that fails its check at level `verify`, or whose
    other files (`paths.csv`, `population.json`) are damaged (`check_state_files`).

    Agent folders that are links are reported as a damaged pseudo state `<agent>/*`.
    """
    from munet.system.manifest import StateRef

    damaged = []
    for agent_id in store.agent_ids():
        try:
            states = store.list_states(agent_id)
        except StoreUnavailableError:
            raise  # An outage, not a damaged state: nothing may be quarantined for it.
        except SystemStateError as err:
            damaged.append(DamagedState(StateRef(agent_id, -1, -1), str(err)))
            continue
        for state in states:
            try:
                manifest = store.reader.check_state(state, verify)
                check_state_files(store, state, manifest)
            except StoreUnavailableError:
                raise
            except (SystemStateError, OSError) as err:
                damaged.append(DamagedState(state, str(err)))
    return damaged


def _files_used_by_whole_states(store: SystemStore, damaged: list[DamagedState]) -> dict[str, str]:
    """Shard file (relative) -> a whole state that uses it, over the whole states."""
    bad = {d.state for d in damaged}
    used: dict[str, str] = {}
    for agent_id in store.agent_ids():
        try:
            states = store.list_states(agent_id)
        except StoreUnavailableError:
            raise
        except SystemStateError:
            continue
        for state in states:
            if state in bad:
                continue
            try:
                manifest = store.read_manifest(state)
            except StoreUnavailableError:
                raise
            except SystemStateError:
                continue
            for entry in manifest.get("components", {}).values():
                if isinstance(entry, dict) and isinstance(entry.get("file"), str):
                    used.setdefault(entry["file"], state.relative_dir)
    return used


def quarantine(store: SystemStore, damaged: list[DamagedState]) -> list[QuarantineResult]:
    """Move damaged states aside into `ROOT/.quarantine/<agent>/` (never deletes).

    Each move holds the agent's lock, so a running agent's states are never moved under it.
    A state some whole state still takes shards from is kept in place.

    Returns:
        One result per damaged state.
    """
    used = _files_used_by_whole_states(store, damaged)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    results = []
    for item in damaged:
        state = item.state
        if state.cycle < 0:
            results.append(QuarantineResult(
                state, None,
                "not a state: fix it by hand (remove the link; or delete an unreadable "
                "current.json: the agent's states are then listed from their folders, and its "
                "next run writes a new commit pointer)",
            ))
            continue
        prefix = state.relative_dir + "/"
        user = next((owner for file, owner in used.items() if file.startswith(prefix)), None)
        if user is not None:
            results.append(
                QuarantineResult(state, None, f"{user} uses its shards (only they are kept)")
            )
            continue
        target_dir = store.fs.join(store.root, QUARANTINE_DIR, state.agent_id)
        target = store.fs.join(target_dir, f"{state.name}-{stamp}")
        try:
            with store.lock(state.agent_id):
                store.uncommit_state(state)  # object stores: invisible before it moves
                store.fs.makedirs(target_dir)
                store.fs.rename(store.fs.join(store.agent_dir(state.agent_id), state.name), target)
        except AgentLockedError as err:
            results.append(QuarantineResult(state, None, f"the agent is running ({err})"))
            continue
        results.append(QuarantineResult(state, target))
    return results
