"""Files in the state dir that no committed state uses: what `munet doctor` reports as strays
and what the next holder of an agent's lock removes.

Where they come from:

* on object stores (commit pointer, munet.system.head): the files of states the pointer no
  longer names (intermediate states dropped by an end-of-cycle commit, if their removal was
  interrupted; states quarantined half-way), a killed holder's unfinished save, and requests
  of a holder that lost its lease landing late (a manifest, shards, history files): anything
  under the agent's folder that no state the pointer names lists (its manifest, history and
  population files, its shards, and shards its component index points to);
* on an object store without a pointer yet (written before pointers): state folders without
  a manifest;
* on local disk: `.tmp-*` folders of killed writers (a state is renamed into place whole).

When they go: each time a process takes the agent's lock (before it loads or writes), and the
folders of the intermediate states an end-of-cycle commit drops, right after that commit. A late
request that lands after that waits for the next holder (or `munet doctor --clean`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from munet.system.errors import StoreUnavailableError, SystemStateError
from munet.system.head import HEAD_FILE
from munet.system.lease import LEASE_DIR
from munet.system.manifest import (
    MANIFEST,
    POPULATION,
    history_file_name,
    parse_state_dir,
    recorded_file_name,
)

if TYPE_CHECKING:
    from munet.system.layout import StateLayout

#: Prefix of a state being written (local disk) or being deleted.
TMP_PREFIX = ".tmp-"


@dataclass(frozen=True)
class StrayFiles:
    """Files of one folder of an agent that no committed state uses.

    Attributes:
        agent_id: the agent.
        folder: the folder, relative to the agent's folder (`state_0_2`, `.tmp-...`).
        files: the files, relative to the agent's folder (for a whole folder: the folder).
        why: what they are.
    """

    agent_id: str
    folder: str
    files: tuple[str, ...]
    why: str
    whole_folder: bool


def find_strays(store: StateLayout, agent_id: str) -> list[StrayFiles]:
    """The agent's files that no committed state uses (see the module docstring).

    Raises:
        StoreUnavailableError: the store is unreachable.
    """
    agent_dir = store.agent_dir(agent_id)
    if store.fs.atomic_rename:
        return [
            StrayFiles(agent_id, name, (name,), "an unfinished or deleted state", True)
            for name in store.fs.listdir(agent_dir)
            if name.startswith(TMP_PREFIX)
        ]
    found = store.read_head(agent_id)
    files = store.fs.list_files(agent_dir)
    by_folder: dict[str, list[str]] = {}
    for file in files:
        folder, _, rest = file.partition("/")
        if rest and folder != LEASE_DIR:
            by_folder.setdefault(folder, []).append(file)
    if found is None:  # Before pointers: a state folder without a manifest is unfinished.
        return [
            StrayFiles(agent_id, folder, tuple(names), "a state folder without a manifest",
                       True)
            for folder, names in sorted(by_folder.items())
            if parse_state_dir(agent_id, folder) is not None
            and f"{folder}/{MANIFEST}" not in names
        ]
    head = found[0]
    named = {entry.name for entry in head.states}
    # Only folders holding files of more than one save need their manifest read (each save
    # names its files with a suffix of its own): taking a lock stays a few requests.
    mixed = [s for s in head.state_refs() if not _one_save(by_folder.get(s.name, []))]
    used = _used_files(store, agent_id, mixed)
    examined = {s.name for s in mixed}
    strays = []
    for folder, names in sorted(by_folder.items()):
        if folder not in named:
            strays.append(StrayFiles(
                agent_id, folder, tuple(names),
                "a state its commit pointer does not name (deleted, unfinished, or written "
                "late by a holder that had lost the lease)", True,
            ))
            continue
        if folder not in examined or used.get(folder) is None:
            continue  # One save's files only; or an unreadable manifest: damage, not strays.
        extra = tuple(n for n in names if n.split("/", 1)[1] not in used[folder])
        if extra:
            strays.append(StrayFiles(
                agent_id, folder, extra,
                "files the committed state does not use (a failed or late write)", False,
            ))
    return strays


_SAVE_FILE = re.compile(
    r"(?:components-\d+|paths|population)(?:\.([0-9a-f]{8}))?\.(?:safetensors|csv|json)"
)


def _one_save(files: list[str]) -> bool:
    """Whether a state folder's files (`folder/name`) are those of a single save: the
    manifest and files that all carry one save's suffix (none: the files of an older store)."""
    suffixes = set()
    for file in files:
        name = file.split("/", 1)[1]
        if name == MANIFEST:
            continue
        match = _SAVE_FILE.fullmatch(name)
        if match is None:
            return False
        suffixes.add(match.group(1))
    return len(suffixes) <= 1


def _used_files(store: StateLayout, agent_id: str, states) -> dict[str, set[str] | None]:
    """Per committed state folder, the file names its manifest uses (None: unreadable)."""
    used: dict[str, set[str] | None] = {}
    for state in states:
        try:
            manifest = store.read_manifest(state)
            names = {
                MANIFEST,
                history_file_name(manifest, state),
                recorded_file_name(manifest, "population_file", POPULATION, state),
                *manifest.get("shards", {}),
            }
        except StoreUnavailableError:
            raise
        except (SystemStateError, OSError, AttributeError):
            used[state.name] = None
            continue
        used.setdefault(state.name, set()).update(names)
        # Shards of older states its index points to stay used too.
        for entry in (manifest.get("components") or {}).values():
            file = entry.get("file") if isinstance(entry, dict) else None
            parts = file.split("/") if isinstance(file, str) else []
            if len(parts) == 3 and parts[0] == agent_id:
                target = used.setdefault(parts[1], set())
                if target is not None:
                    target.add(parts[2])
    return used


def remove_strays(store: StateLayout, agent_id: str) -> list[StrayFiles]:
    """Remove the agent's strays (the caller holds its lock).

    Returns:
        What was removed.
    """
    strays = find_strays(store, agent_id)
    agent_dir = store.agent_dir(agent_id)
    for stray in strays:
        if stray.whole_folder:
            store.fs.remove_tree(store.fs.join(agent_dir, stray.folder))
            continue
        for file in stray.files:
            try:
                store.fs.remove_file(store.fs.join(agent_dir, *file.split("/")))
            except FileNotFoundError:
                pass
    return strays


__all__ = ["HEAD_FILE", "StrayFiles", "find_strays", "remove_strays"]
