"""SystemStore: the crash-safe sharded system state on disk (or any fsspec filesystem).

What a state holds and its manifest: munet.system.manifest. The store's writing half (the
agent's lock, committing a state) is munet.system.saving, its reading half (an agent's view of
the system, checked lazily read components) munet.system.loading; this module holds the store
itself: its folders, listings and manifest reads.

Layout (one folder per agent, one folder per committed state):

    ROOT/<agent_id>/state_<cycle>_<generation>/manifest.json
                                               paths.csv
                                               population.json
                                               components-00000.safetensors ...
    ROOT/<agent_id>/.lock

* A state is written under `.tmp-state_<c>_<g>-<random>` and renamed into place (local disk),
  so a reader or a resumed agent sees a whole state or none. Killed writers leave only
  temporary folders, removed by the next holder of the agent's lock. On object stores a state
  is written in place and committed by a conditional write of the agent's commit pointer
  `ROOT/<agent_id>/current.json` (munet.system.head), which readers read first.
* Shards hold only the components this agent created since its last end-of-cycle state
  (generation 0); the manifest's component index locates every component the state's paths
  use (in this state's shards or in an older end-of-cycle state, of any agent), with shapes,
  dtypes and sha256. End-of-cycle states are never deleted; intermediate states are deleted
  once the next end-of-cycle state commits.
* `paths.csv` holds the history rows of the paths sampled since the last end-of-cycle state;
  `read_path_history` concatenates them into the full history.
* Loading an agent reads its own latest state (possibly mid-cycle) and every other agent's
  latest end-of-cycle state; tensors stay on disk until used, then are memory-mapped and
  checked against their sha256.
"""

from __future__ import annotations

import csv
import os
import threading
import time
from collections.abc import Iterable
from typing import Any

from munet.system.errors import CorruptStateError
from munet.system.fs import LocalFS, StateFS, content_version, open_state_fs
from munet.system.head import HEAD_FILE, Head
from munet.system.history import csv_to_rows
from munet.system.loading import LOAD_ATTEMPTS, StateReading
from munet.system.lock import AgentLock
from munet.system.manifest import (
    HISTORY,
    MANIFEST,
    ManifestMissingError,
    StateRef,
    history_file_name,
    parse_manifest,
    parse_state_dir,
)
from munet.system.naming import agent_class_name, validate_agent_id
from munet.system.saving import StateWriting
from munet.system.shards import ShardReader

DEFAULT_MAX_SHARD_BYTES = 1 << 30


class SystemStore(StateReading, StateWriting):
    """The system state of all agents under one root (a local path or an fsspec URL).

    Args:
        root: state dir, e.g. `/data/state` or `memory://state` (created when written).
        max_shard_bytes: a new shard starts once a shard would grow past this.
        lease_ttl: on fsspec stores, seconds an agent's lease stays live without a heartbeat
            (default `MUNET_LEASE_TTL` or 30).
        lease_tag: the launch this process belongs to (a live lease of the same launch, left
            by a killed earlier attempt, is waited out instead of refused).

    Only the process holding `lock(agent_id)` may `save_state` that agent; everyone may
    `load` and read everyone's committed states.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        max_shard_bytes: int = DEFAULT_MAX_SHARD_BYTES,
        fs: StateFS | None = None,
        lease_ttl: float | None = None,
        lease_tag: str | None = None,
    ) -> None:
        self.lease_ttl = lease_ttl
        self.lease_tag = lease_tag
        if fs is None:
            self.fs, self.root = open_state_fs(root)
        else:
            self.fs, self.root = fs, os.fspath(root)
        self.max_shard_bytes = int(max_shard_bytes)
        self._locks: dict[str, AgentLock] = {}
        self._readers: dict[str, ShardReader] = {}
        self._readers_lock = threading.Lock()
        #: (shard file, component key, sha256) of components whose checksum was verified.
        self.verified_components: set[tuple[str, str, str]] = set()
        self._warned: set[str] = set()

    def __repr__(self) -> str:
        return f"SystemStore({self.root!r})"

    # Folders --------------------------------------------------------------------------------
    def agent_dir(self, agent_id: str) -> str:
        """The agent's folder (validated id: it cannot escape the root)."""
        return self.fs.join(self.root, validate_agent_id(agent_id))

    def _abs(self, relative: str) -> str:
        parts = relative.split("/")
        if any(p in ("", ".", "..") for p in parts) or relative.startswith("/"):
            raise CorruptStateError(f"file reference {relative!r} escapes the state dir")
        validate_agent_id(parts[0])
        return self.fs.join(self.root, *parts)

    def agent_ids(self, agent_classes: Iterable[str] | None = None) -> list[str]:
        """Agents with a folder in the store, optionally only of the given classes."""
        classes = None if agent_classes is None else set(agent_classes)
        out = []
        for name in self.fs.listdir(self.root):
            try:
                validate_agent_id(name)
            except ValueError:
                continue  # Not an agent folder (a stray file, a hidden folder).
            if classes is None or agent_class_name(name) in classes:
                out.append(name)
        return out

    def read_head(self, agent_id: str) -> tuple[Head, str] | None:
        """The agent's commit pointer and its version (object stores); None without one (local
        disk, or a store written before pointers existed).

        Raises:
            CorruptStateError: the pointer is unreadable.
        """
        if self.fs.atomic_rename:
            return None
        path = self.fs.join(self.agent_dir(agent_id), HEAD_FILE)
        found = self.fs.read_versioned(path)
        if found is None:
            return None
        data, version = found
        return Head.from_bytes(data, agent_id, f"{agent_id}/{HEAD_FILE}"), version

    def list_states(self, agent_id: str) -> list[StateRef]:
        """The agent's committed states, oldest first: on object stores those its commit
        pointer names (munet.system.head), else the state folders (holding a manifest)."""
        agent_dir = self.agent_dir(agent_id)
        if self.fs.atomic_rename:
            names = self.fs.listdir(agent_dir)
        else:
            head = self.read_head(agent_id)
            if head is not None:
                return head[0].state_refs()
            return self.listed_states(agent_id)
        states = []
        for name in names:
            state = parse_state_dir(agent_id, name)
            if state is not None:
                states.append(state)
        return sorted(states, key=lambda s: (s.cycle, s.generation))

    def listed_states(self, agent_id: str) -> list[StateRef]:
        """The agent's states as listed from its folders, oldest first: on an object store
        without a commit pointer (written before pointers existed), the folders holding a
        manifest (written last: the commit mark of that older protocol)."""
        # One listing (on an object store, not one request per state).
        names = self.fs.dirs_with_file(self.agent_dir(agent_id), MANIFEST)
        states = [s for name in names if (s := parse_state_dir(agent_id, name)) is not None]
        return sorted(states, key=lambda s: (s.cycle, s.generation))

    def latest_state(self, agent_id: str, end_of_cycle: bool = False) -> StateRef | None:
        """The agent's latest committed state (only generation-0 ones if `end_of_cycle`)."""
        states = [s for s in self.list_states(agent_id) if s.end_of_cycle or not end_of_cycle]
        return states[-1] if states else None

    def read_manifest(self, state: StateRef) -> dict[str, Any]:
        """The parsed manifest of a committed state.

        Raises:
            CorruptStateError: missing, unreadable or not a manifest of this state.
        """
        path = self.fs.join(self.agent_dir(state.agent_id), state.name, MANIFEST)
        try:
            data = self.fs.read_bytes(path)
        except FileNotFoundError:
            raise ManifestMissingError(f"state {state.relative_dir} has no {MANIFEST}") from None
        if state.manifest_sha256 is not None and content_version(data) != state.manifest_sha256:
            raise CorruptStateError(
                f"state {state.relative_dir}: {MANIFEST} is not the one committed (its sha256 "
                f"differs from the one {state.agent_id}/{HEAD_FILE} records): it was replaced "
                "after the commit"
            )
        return parse_manifest(data, state)

    def read_path_history(self, agent_id: str) -> list[dict[str, str]]:
        """The agent's full path history: rows of every end-of-cycle state, then those of the
        latest state if it is mid-cycle. Cells are strings (CSV).

        A mid-cycle state its owner removes meanwhile (its end-of-cycle commit replaces it) is
        not damage: the states are listed again."""
        for attempt in range(LOAD_ATTEMPTS):
            states = self.list_states(agent_id)
            chosen = [s for s in states if s.end_of_cycle]
            if states and not states[-1].end_of_cycle:
                chosen.append(states[-1])
            rows: list[dict[str, str]] = []
            try:
                for s in chosen:
                    rows.extend(self._history_rows(s))
                return rows
            except CorruptStateError as error:
                if attempt + 1 < LOAD_ATTEMPTS and self._uncommitted_meanwhile(s, error):
                    time.sleep(0.05 * (attempt + 1))
                    continue
                raise
        raise AssertionError("not reached: the last attempt raises")

    def _history_rows(self, state: StateRef) -> list[dict[str, str]]:
        # On object stores each save names its history file (recorded in its manifest).
        name = HISTORY if self.fs.atomic_rename else self.history_file(state)
        path = self.fs.join(self.agent_dir(state.agent_id), state.name, name)
        try:
            return csv_to_rows(self.fs.read_bytes(path).decode())
        except (FileNotFoundError, UnicodeDecodeError, csv.Error) as error:
            raise CorruptStateError(
                f"state {state.relative_dir}: unreadable {name} ({error})"
            ) from None

    def history_file(self, state: StateRef) -> str:
        """The name of a committed state's history file (`paths.csv`, or the name its
        manifest records)."""
        return history_file_name(self.read_manifest(state), state)

    def is_local(self) -> bool:
        """Whether the store is on local disk (atomic commits, memory-mapped reads)."""
        return isinstance(self.fs, LocalFS)
