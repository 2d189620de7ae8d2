"""Reading the system: an agent's view of it (`load`), the latest good state of each agent,
and lazily read, checked components (the reading half of `munet.system.store.SystemStore`).
"""

from __future__ import annotations

import csv
import threading
import time
import warnings
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from munet.system.component import Component
from munet.system.errors import CorruptStateError, StateRemovedError, SystemStateError
from munet.system.history import csv_to_rows
from munet.system.layout import LOAD_ATTEMPTS, StateLayout
from munet.system.manifest import (
    StateRef,
    history_file_name,
    parse_state_dir,
)
from munet.system.naming import parse_component_key, validate_agent_id
from munet.system.population import Population
from munet.system.records import assemble_paths
from munet.system.scoring import ScorerDecay
from munet.system.shards import ComponentLocation, ShardReader, spec_from_json
from munet.system.state_checks import check_state_files, check_verify_level

#: Threads reading other agents' states at a load.
LOAD_THREADS = 16


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


class StateReader:
    """Reads the system under a layout: an agent's view of it (`load`), each agent's latest
    good state, and lazily read components checked against their sha256; held by
    `SystemStore` (its reading half), with the caches one store object keeps.

    Args:
        layout: the store's folders and listings (the `SystemStore` itself).
    """

    def __init__(self, layout: StateLayout) -> None:
        self.layout = layout
        self.fs = layout.fs
        self._readers: dict[str, ShardReader] = {}
        self._readers_lock = threading.Lock()
        #: (shard file, component key, sha256) of components whose checksum was verified.
        self.verified_components: set[tuple[str, str, str]] = set()
        self._warned: set[str] = set()

    # Loading --------------------------------------------------------------------------------
    def shard_reader(self, relative_file: str) -> ShardReader:
        """The (cached) reader of a shard, given relative to the state root."""
        with self._readers_lock:
            reader = self._readers.get(relative_file)
            if reader is None:
                reader = ShardReader(self.fs, self.layout.abs_path(relative_file), relative_file)
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
        self.layout.abs_path(location.file)  # Refuse references escaping the state dir up front.

        def load() -> dict:
            # Verified at load by this store (committed shards never change): skip the rehash.
            verified = (location.file, key, location.sha256) in self.verified_components
            try:
                return self.shard_reader(location.file).read_component(
                    key, spec, location.sha256, check_checksum=not verified
                )
            except (FileNotFoundError, CorruptStateError) as e:
                raise self._lazy_read_error(key, location.file, e) from None

        return Component(
            name,
            owner,
            component_id,
            loader=load,
            spec=spec,
            checksum=location.sha256,
            location=location,
        )

    def _lazy_read_error(self, key: str, file: str, error: Exception) -> SystemStateError:
        """What a shard that fails a lazy read (after `load`) means: its state was removed
        since (`StateRemovedError`: load again), or, still committed, damage."""
        agent_id, _, rest = file.partition("/")
        state = parse_state_dir(agent_id, rest.partition("/")[0])
        removed = False
        if state is not None:
            try:
                removed = state not in self.layout.list_states(agent_id)
            except (SystemStateError, OSError):
                removed = False  # Not known (the store is unreachable): as it was.
        if removed:
            assert state is not None
            return StateRemovedError(
                f"state {state.relative_dir} was removed after it was loaded (its owner "
                "committed a newer state, or it was quarantined), so component "
                f"{key} can no longer be read from it: load again (SystemStore.load) to read "
                "the agent's current state",
                state=state.relative_dir,
            )
        if isinstance(error, CorruptStateError):
            return error
        return CorruptStateError(f"shard {file} is missing (component {key})")

    def warn_once(self, message: str, stacklevel: int = 2) -> None:
        """Warn about a damaged state once per store object (loads repeat every cycle)."""
        with self._readers_lock:  # Loads read other agents' states in threads.
            if message in self._warned:
                return
            self._warned.add(message)
        warnings.warn(message, stacklevel=stacklevel + 1)

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
        found = self._latest_good(agent_id, end_of_cycle=end_of_cycle, strict=strict, verify=verify)
        return None if found is None else (found[0], found[1])

    def _read_history(self, state: StateRef, manifest: Mapping[str, Any]) -> list[dict]:
        """The history rows of a state, unchecked (verify level `none`)."""
        name = history_file_name(dict(manifest), state)
        path = self.fs.join(self.layout.agent_dir(state.agent_id), state.name, name)
        try:
            return list(csv_to_rows(self.fs.read_bytes(path).decode()))
        except (FileNotFoundError, UnicodeDecodeError, csv.Error) as e:
            raise CorruptStateError(
                f"state {state.relative_dir}: unreadable {name} ({e})"
            ) from None

    def _latest_good(
        self,
        agent_id: str,
        *,
        end_of_cycle: bool = False,
        strict: bool = False,
        verify: str = "checksums",
        with_history: bool = False,
    ) -> tuple[StateRef, dict[str, Any], list[dict] | None] | None:
        """`latest_good_state`, and with `with_history` (the agent's own state) the history
        rows of a mid-cycle state (None for an end-of-cycle one), read in the same attempt: a
        state its owner removes meanwhile (the end-of-cycle commit replaces it) is listed
        again. Its `paths.csv` and population file are checked too (`check_state_files`)
        unless `verify` is `none`."""
        check_verify_level(verify)
        for attempt in range(LOAD_ATTEMPTS):
            try:
                states = [
                    s
                    for s in self.layout.list_states(agent_id)
                    if s.end_of_cycle or not end_of_cycle
                ]
            except (SystemStateError, OSError) as e:
                if strict:
                    raise
                self.warn_once(f"skipping agent {agent_id}: {e}", stacklevel=3)
                return None
            relist = False
            for state in reversed(states):
                try:
                    manifest = self.layout.read_manifest(state)
                    self.check_manifest(state, manifest)
                    self.check_components(state, manifest, verify)
                    history = None
                    if with_history:
                        # The agent's own state: its history goes on into its next state, so
                        # it is checked as `munet doctor` checks it (a damaged one is refused
                        # like a damaged manifest), read in the same attempt as the manifest
                        # (a state its owner removes meanwhile is listed again).
                        if verify != "none":
                            history = check_state_files(self.layout, state, manifest)
                        elif not state.end_of_cycle:
                            history = self._read_history(state, manifest)
                        if state.end_of_cycle:
                            history = None  # a new cycle starts a new history
                    return state, manifest, history
                except (SystemStateError, OSError) as e:
                    if attempt + 1 < LOAD_ATTEMPTS and self.layout.uncommitted_meanwhile(state, e):
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
            CorruptStateError: the agent's own latest state is damaged: its manifest,
                shards, `paths.csv` or population file (the message names the file and the
                problem; `munet doctor --quarantine` moves the state aside).
            UnsafePathError: the agent's own folder or state holds a symbolic link.
        """
        validate_agent_id(agent_id)
        if verify is None:
            verify = "checksums" if self.fs.atomic_rename else "structure"
        manifests: list[tuple[StateRef, dict[str, Any]]] = []
        own_found = self._latest_good(agent_id, strict=True, verify=verify, with_history=True)
        own = None if own_found is None else (own_found[0], own_found[1])
        if own is not None:
            manifests.append(own)
        others = [a for a in self.layout.agent_ids(agent_classes) if a != agent_id]

        def read(other: str) -> tuple[StateRef, dict[str, Any]] | None:
            return self.latest_good_state(other, end_of_cycle=True, verify=verify)

        # Independent reads, each a few round trips on an object store: read concurrently
        # (1,000 agents at 20 ms per request took ~40 s one after another), kept in order.
        workers = min(LOAD_THREADS, len(others))
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
            if own_found is not None and own_found[2] is not None:
                population.history = own_found[2]
        assemble_paths(population, manifests, self.lazy_component)
        return LoadedState(
            population=population,
            cycle=own[0].cycle if own else 0,
            generation=own[0].generation if own else 0,
            config=own_manifest.get("config") if own_manifest else None,
            state=own[0] if own else None,
            loaded_states=[s for s, _ in manifests],
        )

    # Checks (munet.system.integrity's levels) ----------------------------------------------
    def check_manifest(self, state: StateRef, manifest: dict[str, Any]) -> None:
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
            Population(state.agent_id), [(state, manifest)], self.lazy_component, log_orphans=False
        )

    def check_components(self, state: StateRef, manifest: dict[str, Any], verify: str) -> int:
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
            component = self.lazy_component(key, entry)
            location = component.location
            reader = self.shard_reader(location.file)
            if verify == "checksums":
                token = (location.file, key, location.sha256)
                if token not in self.verified_components:
                    # Read and drop: the tensors (and their memory maps) go once hashed.
                    reader.read_component(key, component.spec, location.sha256)
                    self.verified_components.add(token)
            else:
                reader.check_component(key, component.spec)
            count += 1
        return count

    def check_state(self, state: StateRef, verify: str = "checksums") -> dict[str, Any]:
        """The manifest of a state, once the state is checked whole at level `verify`.

        Raises:
            SystemStateError: the state is damaged (a `CorruptStateError` naming the file and
                the problem, or an `UnsafePathError` for a link).
        """
        manifest = self.layout.read_manifest(state)
        self.check_manifest(state, manifest)
        self.check_components(state, manifest, verify)
        return manifest

    # Maintenance ----------------------------------------------------------------------------
    def verify_state(self, state: StateRef) -> int:
        """Read every component a committed state indexes and check its checksum.

        Returns:
            The number of components checked.

        Raises:
            CorruptStateError / ComponentCorruptError: naming the first bad component or file.
        """
        manifest = self.layout.read_manifest(state)
        self.check_manifest(state, manifest)
        for shard_name, info in manifest.get("shards", {}).items():
            path = self.fs.join(self.layout.agent_dir(state.agent_id), state.name, shard_name)
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
