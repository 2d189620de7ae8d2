"""The store's layout: an agent's folder, its committed states (listed from the commit pointer
on object stores, from the folders on local disk), their manifests and path histories.

What the reader (munet.system.loading), the writer (munet.system.saving) and the store's
maintenance (munet.system.strays, munet.system.epochs, munet.system.integrity) share; the
layout of the files is described in munet.system.store.
"""

from __future__ import annotations

import csv
import os
import time
from collections.abc import Iterable
from typing import Any

from munet.system.errors import CorruptStateError, SystemStateError
from munet.system.fs import LocalFS, StateFS, content_version
from munet.system.head import HEAD_FILE, Head
from munet.system.history import csv_to_rows
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

#: Listings of an agent's states tried while states vanish under the reader; then a state that
#: still fails to read is treated as damaged.
LOAD_ATTEMPTS = 3


class StateLayout:
    """The folders and committed states under one state dir, read-only.

    Args:
        fs: the filesystem (munet.system.fs).
        root: the state dir on it.
    """

    def __init__(self, fs: StateFS, root: str | os.PathLike[str]) -> None:
        self.fs = fs
        self.root = os.fspath(root)

    # Folders --------------------------------------------------------------------------------
    def agent_dir(self, agent_id: str) -> str:
        """The agent's folder (validated id: it cannot escape the root)."""
        return self.fs.join(self.root, validate_agent_id(agent_id))

    def abs_path(self, relative: str) -> str:
        """A file of the state dir given relative to it (refused if it escapes the root)."""
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
                if attempt + 1 < LOAD_ATTEMPTS and self.uncommitted_meanwhile(s, error):
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

    def uncommitted_meanwhile(self, state: StateRef, error: Exception) -> bool:
        """Whether a listed state that failed to read may just have stopped being committed,
        so that listing again is the answer rather than calling it damaged.

        Its owner deletes it when a newer end-of-cycle state replaces it: with atomic renames
        the folder goes at once; on manifest-last stores the manifest goes first, so a folder
        whose manifest is missing is a leftover being removed, not a committed state (and a
        listing that shows a manifest a read does not find is asked again).
        """
        folder = self.fs.join(self.agent_dir(state.agent_id), state.name)
        try:
            if self.fs.atomic_rename:
                return not self.fs.exists(folder)
            if state.manifest_sha256 is not None:  # listed from the commit pointer
                # Dropped from the pointer meanwhile; or a manifest it names missed by one
                # read (asked again; still missing at the last attempt: damaged).
                return isinstance(error, ManifestMissingError) or state not in self.list_states(
                    state.agent_id
                )
            return isinstance(error, ManifestMissingError) or not self.fs.exists(
                self.fs.join(folder, MANIFEST)
            )
        except SystemStateError:
            return False  # There, but a link: damaged, not gone.
