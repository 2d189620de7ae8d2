"""SystemStore: the crash-safe sharded system state on disk (or any fsspec filesystem).

What a state holds and its manifest: munet.system.manifest.

Layout (one folder per agent, one folder per committed state):

    ROOT/<agent_id>/state_<cycle>_<generation>/manifest.json
                                               paths.csv
                                               population.json
                                               components-00000.safetensors ...
    ROOT/<agent_id>/.lock

* A state is written under `.tmp-state_<c>_<g>-<random>` and renamed into place (local disk),
  so a reader or a resumed agent sees a whole state or none. Killed writers leave only
  temporary folders, removed by the next holder of the agent's lock.
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

import json
import os
import secrets
import threading
import time
import warnings
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from munet.system.component import Component
from munet.system.errors import (
    CorruptStateError,
    LockNotHeldError,
    StateExistsError,
    SystemStateError,
)
from munet.system.fs import LocalFS, StateFS, open_state_fs
from munet.system.history import csv_to_rows, rows_to_csv
from munet.system.integrity import check_components, check_manifest, check_verify_level
from munet.system.lock import LOCK_FILE, AgentLock
from munet.system.manifest import (
    HISTORY,
    MANIFEST,
    POPULATION,
    ManifestMissingError,
    StateRef,
    build_manifest,
    component_index,
    parse_manifest,
    parse_state_dir,
)
from munet.system.naming import (
    agent_class_name,
    parse_component_key,
    validate_agent_id,
)
from munet.system.path import Path
from munet.system.population import Population
from munet.system.records import (
    assemble_paths,
    json_default,
    path_record,
    publish_closure,
    seen_metrics,
)
from munet.system.scoring import ScorerDecay
from munet.system.shards import (
    ComponentLocation,
    ShardReader,
    plan_shards,
    spec_from_json,
    write_shard,
)

_TMP_PREFIX = ".tmp-"
#: Listings of an agent's states tried while states vanish under the reader; then a state that
#: still fails to read is treated as damaged.
_LOAD_ATTEMPTS = 3
#: Threads reading other agents' states at a load.
_LOAD_THREADS = 16
DEFAULT_MAX_SHARD_BYTES = 1 << 30


@dataclass
class LoadedState:
    """What `SystemStore.load` returns.

    Attributes:
        population: the agent's population (own latest paths + others' published paths).
        cycle: cycle of the agent's latest state (0 without one).
        generation: generation of the agent's latest state (0 without one).
        config: the agent config stored with its latest state, or None.
        state: the agent's latest state, or None for a fresh agent.
        loaded_states: the state of every agent read, own first.
    """

    population: Population
    cycle: int
    generation: int
    config: dict[str, Any] | None
    state: StateRef | None
    loaded_states: list[StateRef]


class SystemStore:
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

    def list_states(self, agent_id: str) -> list[StateRef]:
        """The agent's committed states, oldest first."""
        agent_dir = self.agent_dir(agent_id)
        if self.fs.atomic_rename:
            names = self.fs.listdir(agent_dir)
        else:
            # Manifest-last commits: only folders holding a manifest count, found with one
            # listing (on an object store, not one request per state).
            names = self.fs.dirs_with_file(agent_dir, MANIFEST)
        states = []
        for name in names:
            state = parse_state_dir(agent_id, name)
            if state is not None:
                states.append(state)
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
        return parse_manifest(data, state)

    def read_path_history(self, agent_id: str) -> list[dict[str, str]]:
        """The agent's full path history: rows of every end-of-cycle state, then those of the
        latest state if it is mid-cycle. Cells are strings (CSV)."""
        states = self.list_states(agent_id)
        chosen = [s for s in states if s.end_of_cycle]
        if states and not states[-1].end_of_cycle:
            chosen.append(states[-1])
        rows: list[dict[str, str]] = []
        for s in chosen:
            path = self.fs.join(self.agent_dir(agent_id), s.name, HISTORY)
            rows.extend(csv_to_rows(self.fs.read_bytes(path).decode()))
        return rows

    # Locking --------------------------------------------------------------------------------
    @contextmanager
    def lock(self, agent_id: str) -> Iterator[AgentLock]:
        """Hold the agent's lock: only its holder may save the agent's states.

        On entry, leftovers of killed writers (temporary folders, intermediate states older
        than the latest end-of-cycle state) are removed.

        Raises:
            AgentLockedError: another process (or another lock here) runs the agent.
            UnsafePathError: the agent's folder or lock file is a symbolic link.
        """
        agent_dir = self.agent_dir(agent_id)
        # Refuses (UnsafePathError) an agent folder or `.lock` that is a link, before opening.
        self.fs.exists(self.fs.join(agent_dir, LOCK_FILE))
        # stacklevel 4: acquire <- this generator <- contextlib's __enter__ <- the caller.
        agent_lock = AgentLock(
            self.fs,
            agent_dir,
            agent_id,
            lease_ttl=self.lease_ttl,
            lease_tag=self.lease_tag,
        ).acquire(stacklevel=4)
        self._locks[agent_id] = agent_lock
        try:
            self._clean_leftovers(agent_id)
            yield agent_lock
        finally:
            self._locks.pop(agent_id, None)
            agent_lock.release()

    def _clean_leftovers(self, agent_id: str) -> None:
        agent_dir = self.agent_dir(agent_id)
        for name in self.fs.listdir(agent_dir):
            if name.startswith(_TMP_PREFIX):
                self.fs.remove_tree(self.fs.join(agent_dir, name))
        latest_eoc = self.latest_state(agent_id, end_of_cycle=True)
        if latest_eoc is not None:
            self._remove_intermediate_before(agent_id, latest_eoc)

    def _remove_intermediate_before(self, agent_id: str, state: StateRef) -> None:
        for s in self.list_states(agent_id):
            if not s.end_of_cycle and (s.cycle, s.generation) < (state.cycle, state.generation):
                self._remove_state(s)

    def _remove_state(self, state: StateRef) -> None:
        """Uncommit a state first, then delete it, so a kill in between leaves no half state."""
        agent_dir = self.agent_dir(state.agent_id)
        folder = self.fs.join(agent_dir, state.name)
        if self.fs.atomic_rename:
            doomed = self.fs.join(agent_dir, f"{_TMP_PREFIX}{state.name}-{secrets.token_hex(4)}")
            self.fs.rename(folder, doomed)
            self.fs.remove_tree(doomed)
        else:
            self.fs.remove_tree(self.fs.join(folder, MANIFEST))
            self.fs.remove_tree(folder)

    # Saving ---------------------------------------------------------------------------------
    def save_state(
        self,
        population: Population,
        cycle: int,
        generation: int,
        config: Mapping[str, Any] | None = None,
        published: Iterable[Path] | None = None,
    ) -> StateRef:
        """Commit the agent's state `state_<cycle>_<generation>` (generation 0: end of cycle).

        Runs the population's garbage collection first (as the seed's `save_state`), writes the
        components this agent created since its last end-of-cycle state that the published
        paths use, the manifest and the history rows, then commits atomically. After an
        end-of-cycle commit, intermediate states are deleted.

        Args:
            population: the agent's population (its `agent_id` names the agent).
            cycle: completed cycles.
            generation: generations done in the current cycle (0 at the end of a cycle).
            config: the agent config as a JSON-able dict (stored as is).
            published: paths to publish; default the agent's own paths. Paths they wrap as
                components are published with them.

        Returns:
            The committed state.

        Raises:
            LockNotHeldError: this store does not hold `lock(agent_id)`.
            StateExistsError: the state was already committed.
            ValueError: bad cycle/generation, or a path uses a component the store cannot
                locate (not created by this agent and not loaded from the store).
        """
        agent_id = population.agent_id
        lock = self._locks.get(agent_id)
        if lock is None or not lock.held:
            raise LockNotHeldError(
                f"save_state({agent_id!r}) needs the agent's lock: wrap the run in "
                f"`with store.lock({agent_id!r}):`"
            )
        for value, what in ((cycle, "cycle"), (generation, "generation")):
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{what} {value!r}: expected an int >= 0")
        state = StateRef(agent_id, cycle, generation)
        agent_dir = self.agent_dir(agent_id)
        final_dir = self.fs.join(agent_dir, state.name)
        if self.fs.exists(final_dir):
            if self.fs.atomic_rename or self.fs.exists(self.fs.join(final_dir, MANIFEST)):
                raise StateExistsError(f"state {state.relative_dir} is already committed")
            self.fs.remove_tree(final_dir)  # An uncommitted in-place write of a failed save.
        latest = self.latest_state(agent_id)
        if latest is not None and (cycle, generation) < (latest.cycle, latest.generation):
            raise ValueError(
                f"state {state.name} is older than the agent's latest state {latest.name}"
            )
        config_json = json.loads(json.dumps(dict(config or {}), default=json_default))

        population.garbage_collect_paths()
        own = population.own_paths
        to_publish = publish_closure(own if published is None else published)
        index, to_write = component_index(population, to_publish)

        if self.fs.atomic_rename:
            work_dir = self.fs.join(agent_dir, f"{_TMP_PREFIX}{state.name}-{secrets.token_hex(4)}")
        else:
            work_dir = final_dir
        try:
            self._write_state(
                work_dir, final_dir, state, population, to_publish, index, to_write, config_json
            )
        except BaseException:
            # Nothing of a failed save may look committed; a killed process leaves the folder
            # to the next holder of the lock.
            self.fs.remove_tree(work_dir)
            raise

        # Committed: later states and loads locate the written components in the new shards.
        for c in to_write:
            c.location = ComponentLocation(index[c.key]["file"], index[c.key]["sha256"])
        if generation == 0:
            population.first_unsaved_component_id = population.next_component_id
            population.history = []
            self._remove_intermediate_before(agent_id, state)
        return state

    def _write_state(
        self,
        work_dir: str,
        final_dir: str,
        state: StateRef,
        population: Population,
        to_publish: list[Path],
        index: dict[str, dict[str, Any]],
        to_write: list[Component],
        config_json: dict[str, Any],
    ) -> None:
        self.fs.makedirs(work_dir)
        shard_names: dict[str, str] = {}
        shards_info: dict[str, Any] = {}
        for i, shard in enumerate(plan_shards(to_write, self.max_shard_bytes)):
            shard_name = f"components-{i:05d}.safetensors"
            write_shard(self.fs, self.fs.join(work_dir, shard_name), shard)
            shards_info[shard_name] = {
                "bytes": self.fs.size(self.fs.join(work_dir, shard_name)),
                "components": [c.key for c in shard],
            }
            for c in shard:
                shard_names[c.key] = shard_name
        for key, shard_name in shard_names.items():
            index[key]["file"] = f"{state.relative_dir}/{shard_name}"

        records = {p.full_id: path_record(p) for p in to_publish}
        # Paths of other agents are described by their own agents' states; here only how this
        # agent saw them (score, accounted params), so the manifest does not grow with copies
        # of the whole system.
        population_entries = [
            {"path": p.full_id, "metrics": seen_metrics(p)}
            if p.full_id not in records
            else {"path": p.full_id}
            for p in population.all_paths()
        ]
        manifest = build_manifest(
            state, population, config_json, to_publish, records, index, shards_info
        )
        manifest_bytes = json.dumps(manifest, indent=1, default=json_default).encode()
        self.fs.write_bytes(
            self.fs.join(work_dir, HISTORY), rows_to_csv(population.history).encode()
        )
        self.fs.write_bytes(
            self.fs.join(work_dir, POPULATION),
            json.dumps({"population": population_entries}, default=json_default).encode(),
        )
        # The manifest goes last: on filesystems without atomic rename it is the commit mark.
        self.fs.write_bytes(self.fs.join(work_dir, MANIFEST), manifest_bytes)
        if self.fs.atomic_rename:
            self.fs.sync_dir(work_dir)
            self.fs.rename(work_dir, final_dir)

    # Loading --------------------------------------------------------------------------------
    def shard_reader(self, relative_file: str) -> ShardReader:
        """The (cached) reader of a shard, given relative to the state root."""
        with self._readers_lock:
            reader = self._readers.get(relative_file)
            if reader is None:
                reader = ShardReader(self.fs, self._abs(relative_file), relative_file)
                self._readers[relative_file] = reader
            return reader

    def lazy_component(self, key: str, entry: Mapping[str, Any]) -> Component:
        """A component of a manifest's index whose tensors are read (and checked) on first use.

        Raises:
            CorruptStateError: a malformed index entry or a file reference escaping the root.
        """
        try:
            name, owner, component_id = parse_component_key(key)
        except ValueError as e:
            raise CorruptStateError(f"bad component key in the index: {e}") from None
        try:
            spec = spec_from_json(entry["tensors"])
            if not isinstance(entry["file"], str) or not isinstance(entry["sha256"], str):
                raise TypeError("file and sha256 must be strings")
            location = ComponentLocation(entry["file"], entry["sha256"])
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise CorruptStateError(f"component {key}: bad index entry ({e})") from None
        self._abs(location.file)  # Refuse references escaping the state dir up front.

        def load() -> dict:
            # Verified at load by this store (committed shards never change): skip the rehash.
            verified = (location.file, key, location.sha256) in self.verified_components
            return self.shard_reader(location.file).read_component(
                key, spec, location.sha256, check_checksum=not verified
            )

        return Component(
            name,
            owner,
            component_id,
            loader=load,
            spec=spec,
            checksum=location.sha256,
            location=location,
        )

    def warn_once(self, message: str, stacklevel: int = 2) -> None:
        """Warn about a damaged state once per store object (loads repeat every cycle)."""
        with self._readers_lock:  # Loads read other agents' states in threads.
            if message in self._warned:
                return
            self._warned.add(message)
        warnings.warn(message, stacklevel=stacklevel + 1)

    def _uncommitted_meanwhile(self, state: StateRef, error: Exception) -> bool:
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
            return isinstance(error, ManifestMissingError) or not self.fs.exists(
                self.fs.join(folder, MANIFEST)
            )
        except SystemStateError:
            return False  # There, but a link: damaged, not gone.

    def latest_good_state(
        self,
        agent_id: str,
        *,
        end_of_cycle: bool = False,
        strict: bool = False,
        verify: str = "checksums",
    ) -> tuple[StateRef, dict[str, Any]] | None:
        """The agent's latest whole state and its manifest, checked at level `verify`
        (see munet.system.integrity: `none`, `structure`, `checksums`).

        A damaged state is skipped with one warning naming the file and the problem, in favour
        of the agent's previous state (`strict=False`, for other agents' states); with
        `strict` (an agent's own state) the error is raised instead.

        Returns:
            (state, manifest), or None when the agent has no whole state.

        Raises:
            SystemStateError: with `strict`, the latest state is damaged.
        """
        check_verify_level(verify)
        for attempt in range(_LOAD_ATTEMPTS):
            try:
                states = [
                    s for s in self.list_states(agent_id) if s.end_of_cycle or not end_of_cycle
                ]
            except (SystemStateError, OSError) as e:
                if strict:
                    raise
                self.warn_once(f"skipping agent {agent_id}: {e}", stacklevel=3)
                return None
            relist = False
            for state in reversed(states):
                try:
                    manifest = self.read_manifest(state)
                    check_manifest(self, state, manifest)
                    check_components(self, state, manifest, verify)
                    return state, manifest
                except (SystemStateError, OSError) as e:
                    if attempt + 1 < _LOAD_ATTEMPTS and self._uncommitted_meanwhile(state, e):
                        relist = True  # Removed by its owner meanwhile: list again.
                        break
                    if strict:
                        raise
                    text = str(e)
                    if not text.startswith(f"state {state.relative_dir}"):
                        text = f"state {state.relative_dir}: {text}"
                    self.warn_once(f"skipping damaged {text}", stacklevel=3)
            if not relist:
                return None
            time.sleep(0.05 * (attempt + 1))
        return None  # Not reached: the last attempt never lists again.

    def load(
        self,
        agent_id: str,
        agent_classes: Iterable[str] | None = None,
        *,
        scorer: ScorerDecay | None = None,
        max_task_population_size: int | None = None,
        verify: str | None = None,
    ) -> LoadedState:
        """Open the system as seen by `agent_id`.

        Reads the agent's own latest state (possibly mid-cycle) and the latest end-of-cycle
        state of every other agent of `agent_classes` (the seed's `agent_classes_to_load`;
        None: all). Each path's agent locks the components the path uses; an orphaned parent
        falls back to a root-model path. Tensors are read on first use.

        Args:
            agent_id: the agent to load (need not have a state yet).
            agent_classes: agent classes whose states to read besides the agent's own.
            scorer: the population's scorer.
            max_task_population_size: the population's size limit.
            verify: how states are checked before use (munet.system.integrity):
                `checksums` (the default on local disk) hashes each component once per
                store object, `structure` (the default on other filesystems, where hashing
                would download every tensor) checks manifests and shard headers only,
                `none` nothing.
                A damaged state of another agent is skipped with one warning, in favour of
                its previous end-of-cycle state; components are hashed again on first use
                unless verified here.

        Returns:
            The population and the agent's cycle, generation and stored config.

        Raises:
            CorruptStateError: the agent's own latest state is damaged (the message names
                the file and the problem).
            UnsafePathError: the agent's own folder or state holds a symbolic link.
        """
        validate_agent_id(agent_id)
        if verify is None:
            verify = "checksums" if self.fs.atomic_rename else "structure"
        manifests: list[tuple[StateRef, dict[str, Any]]] = []
        own = self.latest_good_state(agent_id, strict=True, verify=verify)
        if own is not None:
            manifests.append(own)
        others = [a for a in self.agent_ids(agent_classes) if a != agent_id]

        def read(other: str) -> tuple[StateRef, dict[str, Any]] | None:
            return self.latest_good_state(other, end_of_cycle=True, verify=verify)

        # Independent reads, each a few round trips on an object store: read concurrently
        # (1,000 agents at 20 ms per request took ~40 s one after another), kept in order.
        workers = min(_LOAD_THREADS, len(others))
        if workers > 1:
            with ThreadPoolExecutor(workers, thread_name_prefix="munet-load") as pool:
                found = list(pool.map(read, others))
        else:
            found = [read(other) for other in others]
        manifests.extend(f for f in found if f is not None)

        own_manifest = own[1] if own is not None else None
        population = Population(
            agent_id,
            scorer,
            max_task_population_size,
            next_path_id=int(own_manifest["next_path_id"]) if own_manifest else 0,
            next_component_id=int(own_manifest["next_component_id"]) if own_manifest else 0,
        )
        if own_manifest is not None:
            population.first_unsaved_component_id = int(own_manifest["first_unsaved_component_id"])
            if not own[0].end_of_cycle:
                history = self.fs.join(self.agent_dir(agent_id), own[0].name, HISTORY)
                try:
                    text = self.fs.read_bytes(history).decode()
                except (FileNotFoundError, UnicodeDecodeError) as e:
                    raise CorruptStateError(
                        f"state {own[0].relative_dir}: unreadable {HISTORY} ({e})"
                    ) from None
                population.history = list(csv_to_rows(text))
        assemble_paths(population, manifests, self.lazy_component)
        return LoadedState(
            population=population,
            cycle=own[0].cycle if own else 0,
            generation=own[0].generation if own else 0,
            config=own_manifest.get("config") if own_manifest else None,
            state=own[0] if own else None,
            loaded_states=[s for s, _ in manifests],
        )

    # Maintenance ----------------------------------------------------------------------------
    def verify_state(self, state: StateRef) -> int:
        """Read every component a committed state indexes and check its checksum.

        Returns:
            The number of components checked.

        Raises:
            CorruptStateError / ComponentCorruptError: naming the first bad component or file.
        """
        manifest = self.read_manifest(state)
        check_manifest(self, state, manifest)
        for shard_name, info in manifest.get("shards", {}).items():
            path = self.fs.join(self.agent_dir(state.agent_id), state.name, shard_name)
            if not self.fs.exists(path) or self.fs.size(path) != info["bytes"]:
                raise CorruptStateError(
                    f"state {state.relative_dir}: shard {shard_name} is missing or truncated"
                )
        count = 0
        for key, entry in manifest["components"].items():
            self.lazy_component(key, entry).tensors  # noqa: B018  (loads and verifies)
            count += 1
        return count

    def close(self) -> None:
        """Drop cached shard readers (their memory maps close once no tensor uses them)."""
        with self._readers_lock:
            self._readers.clear()

    def is_local(self) -> bool:
        """Whether the store is on local disk (atomic commits, memory-mapped reads)."""
        return isinstance(self.fs, LocalFS)
