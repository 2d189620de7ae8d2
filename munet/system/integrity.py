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

import json
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from munet.system.errors import (
    AgentLockedError,
    CorruptStateError,
    StoreUnavailableError,
    SystemStateError,
)
from munet.system.population import Population
from munet.system.records import assemble_paths

if TYPE_CHECKING:
    from munet.system.manifest import StateRef
    from munet.system.store import SystemStore

VERIFY_LEVELS = ("none", "structure", "checksums")
QUARANTINE_DIR = ".quarantine"


def check_verify_level(verify: str) -> str:
    """Return `verify` if it is a known level.

    Raises:
        ValueError: an unknown level (naming the known ones).
    """
    if verify not in VERIFY_LEVELS:
        raise ValueError(f"unknown verify level {verify!r}; known: {', '.join(VERIFY_LEVELS)}")
    return verify


def check_manifest(store: SystemStore, state: StateRef, manifest: dict[str, Any]) -> None:
    """Check a parsed manifest rebuilds into paths (no tensor is read).

    Raises:
        CorruptStateError: naming the state and what is wrong.
    """
    where = f"state {state.relative_dir}"
    for key, kind in (
        ("components", dict),
        ("paths", dict),
        ("published", list),
        ("shards", dict),
        ("next_path_id", int),
        ("next_component_id", int),
        ("first_unsaved_component_id", int),
    ):
        if not isinstance(manifest.get(key), kind):
            raise CorruptStateError(
                f"{where}: manifest entry {key!r} is {manifest.get(key)!r:.60}, "
                f"expected a {kind.__name__}"
            )
    # Rebuild the state's paths into a scratch population: every record and index entry is
    # parsed exactly as a load would, with lazy components (nothing read from the shards).
    # Parents in other states are not loaded here: no orphan messages.
    assemble_paths(
        Population(state.agent_id), [(state, manifest)], store.lazy_component, log_orphans=False
    )


def check_components(
    store: SystemStore, state: StateRef, manifest: dict[str, Any], verify: str
) -> int:
    """Check every component a state indexes at level `verify`.

    Returns:
        The number of components checked.

    Raises:
        CorruptStateError / ComponentCorruptError / UnsafePathError: the first bad one.
    """
    if verify == "none":
        return 0
    count = 0
    for key, entry in manifest["components"].items():
        component = store.lazy_component(key, entry)
        location = component.location
        reader = store.shard_reader(location.file)
        if verify == "checksums":
            token = (location.file, key, location.sha256)
            if token not in store.verified_components:
                # Read and drop: the tensors (and their memory maps) go once hashed.
                reader.read_component(key, component.spec, location.sha256)
                store.verified_components.add(token)
        else:
            reader.check_component(key, component.spec)
        count += 1
    return count


def check_state_files(
    store: SystemStore, state: StateRef, manifest: dict[str, Any]
) -> list[dict[str, str]]:
    """Check the files of a state besides its manifest and shards: the path history
    (`paths.csv`: parseable, the fixed columns, one well-formed row of this agent per
    sampled path, as many rows as the manifest counts) and the population file (JSON).

    Returns:
        The history's rows (`munet.system.history.csv_to_rows`).

    Raises:
        CorruptStateError: naming the file and what is wrong.
    """
    from munet.system.history import check_history_rows, csv_to_rows
    from munet.system.manifest import history_file_name

    folder = store.fs.join(store.agent_dir(state.agent_id), state.name)
    where = f"state {state.relative_dir}"
    # On object stores each save names its files apart (recorded in the manifest).
    history = history_file_name(manifest, state)
    try:
        text = store.fs.read_bytes(store.fs.join(folder, history)).decode("utf-8")
        rows = check_history_rows(text, state.agent_id, manifest.get("next_path_id"))
    except FileNotFoundError:
        raise CorruptStateError(f"{where}: {history} is missing") from None
    except (UnicodeDecodeError, ValueError) as error:
        raise CorruptStateError(f"{where}: {history}: {error}") from None
    expected = manifest.get("history_rows")
    if isinstance(expected, int) and rows != expected:
        raise CorruptStateError(
            f"{where}: {history} has {rows} rows; the manifest records {expected}"
        )
    if isinstance(manifest.get("population_file"), str):  # not in states written before it
        _check_population_file(store, state, manifest)
    return csv_to_rows(text)


def _check_population_file(store: SystemStore, state: StateRef, manifest: dict[str, Any]) -> None:
    from munet.system.manifest import POPULATION, recorded_file_name

    folder = store.fs.join(store.agent_dir(state.agent_id), state.name)
    where = f"state {state.relative_dir}"
    population = recorded_file_name(manifest, "population_file", POPULATION, state)
    try:
        data = json.loads(store.fs.read_bytes(store.fs.join(folder, population)))
    except FileNotFoundError:
        raise CorruptStateError(f"{where}: {population} is missing") from None
    except ValueError as error:
        raise CorruptStateError(f"{where}: {population} is not JSON ({error})") from None
    entries = data.get("population") if isinstance(data, dict) else None
    if not isinstance(entries, list) or not all(
        isinstance(e, dict) and isinstance(e.get("path"), str) for e in entries
    ):
        raise CorruptStateError(f"{where}: {population} holds no list of path entries")


def check_state(store: SystemStore, state: StateRef, verify: str = "checksums") -> dict[str, Any]:
    """The manifest of a state, once the state is checked whole at level `verify`.

    Raises:
        SystemStateError: the state is damaged (a `CorruptStateError` naming the file and the
            problem, or an `UnsafePathError` for a link).
    """
    manifest = store.read_manifest(state)
    check_manifest(store, state, manifest)
    check_components(store, state, manifest, verify)
    return manifest


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
                manifest = check_state(store, state, verify)
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
