"""Writing an agent's states: its lock, and the commit of a state (the writing half of
`munet.system.store.SystemStore`).

A state is written under `.tmp-state_<c>_<g>-<random>` and renamed into place on local disk;
on object stores it is written in place and the manifest, written last, commits it. Only the
holder of the agent's lock writes; taking the lock removes what killed writers left.
"""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager, nullcontext
from typing import Any

from munet.interrupts import stop_signals_deferred
from munet.system.component import Component
from munet.system.epochs import claim_for_lock
from munet.system.errors import LeaseLostError, LockNotHeldError, StateExistsError
from munet.system.fencing import commit_fenced
from munet.system.fs import content_version
from munet.system.head import HeadEntry, commit_to_head, uncommit_from_head
from munet.system.history import rows_to_csv
from munet.system.layout import StateLayout
from munet.system.lock import LOCK_FILE, AgentLock
from munet.system.manifest import (
    HISTORY,
    MANIFEST,
    POPULATION,
    StateRef,
    build_manifest,
    component_index,
)
from munet.system.path import Path
from munet.system.population import Population
from munet.system.records import json_default, path_record, publish_closure, seen_metrics
from munet.system.shards import ComponentLocation, plan_shards, write_shard
from munet.system.strays import TMP_PREFIX, remove_strays

log = logging.getLogger("munet.system")


class StateWriter:
    """Writes agents' states under a layout: the agent's lock, the commit of a state, its
    retirement; held by `SystemStore` (its writing half).

    Args:
        layout: the store's folders and listings (the `SystemStore` itself).
        max_shard_bytes: a new shard starts once a shard would grow past this.
        lease_ttl: on fsspec stores, seconds a lease stays live without a heartbeat.
        lease_tag: the launch this process belongs to (munet.system.lease).
    """

    def __init__(
        self,
        layout: StateLayout,
        max_shard_bytes: int,
        lease_ttl: float | None = None,
        lease_tag: str | None = None,
    ) -> None:
        self.layout = layout
        self.fs = layout.fs
        self.max_shard_bytes = int(max_shard_bytes)
        self.lease_ttl = lease_ttl
        self.lease_tag = lease_tag
        self._locks: dict[str, AgentLock] = {}

    def held_lock(self, agent_id: str) -> AgentLock | None:
        """This store's lock of the agent, while `lock(agent_id)` holds it."""
        return self._locks.get(agent_id)

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
        agent_dir = self.layout.agent_dir(agent_id)
        # Refuses (UnsafePathError) an agent folder or `.lock` that is a link, before opening.
        self.fs.exists(self.fs.join(agent_dir, LOCK_FILE))
        # stacklevel 4: acquire <- this generator <- contextlib's __enter__ <- the caller.
        agent_lock = AgentLock(
            self.fs,
            agent_dir,
            agent_id,
            lease_ttl=self.lease_ttl,
            lease_tag=self.lease_tag,
        )
        # Acquired inside the try: an interrupt landing right after the lock was taken (a
        # cancelled Ray task is interrupted between any two instructions) still releases it.
        try:
            agent_lock.acquire(stacklevel=4)
            self._locks[agent_id] = agent_lock
            if not self.fs.atomic_rename:
                # Before anything else: a new epoch, so no later write of an earlier holder
                # can commit (munet.system.head).
                agent_lock.head = claim_for_lock(self.layout, agent_id, agent_lock)
            self._clean_leftovers(agent_id)
            yield agent_lock
        except BaseException as err:
            if self._locks.get(agent_id) is agent_lock:
                del self._locks[agent_id]
            # A lease lost meanwhile (a stalled writer taken over) is why the run ended, not
            # what the store answered next (a stale connection read as an outage, a file the
            # new holder removed): report the lost lease (exit 3), asked before release.
            lease = agent_lock.lease
            lost = (
                lease is not None
                and isinstance(err, Exception)
                and not isinstance(err, LeaseLostError)
                and lease.confirm_lost()
            )
            # The error that ended the run is the one to report: a release that fails too
            # (the store is unreachable) only leaves a lease that expires by itself.
            try:
                agent_lock.release()
            except Exception as cleanup:  # noqa: BLE001
                log.warning("agent %s: could not release its lock after %s (%s)", agent_id,
                            type(err).__name__, cleanup)
            if lost:
                assert lease is not None
                raise lease.lost_error() from err
            raise
        self._locks.pop(agent_id, None)
        agent_lock.release()

    def uncommit_state(self, state: StateRef) -> None:
        """Make a committed state invisible before its folder is moved or removed (the
        caller holds the agent's lock): on object stores, a conditional write of the commit
        pointer without it; on local disk the move itself does it.

        Raises:
            LockNotHeldError: this store does not hold the agent's lock.
            LeaseLostError: another process took the agent over.
        """
        lock = self._locks.get(state.agent_id)
        if lock is None or not lock.held:
            raise LockNotHeldError(f"uncommitting {state.relative_dir} needs the agent's lock")
        if lock.head is not None:
            uncommit_from_head(
                self.fs, self.layout.agent_dir(state.agent_id), lock.head, {state.name}
            )

    def _clean_leftovers(self, agent_id: str) -> None:
        agent_dir = self.layout.agent_dir(agent_id)
        if not self.fs.atomic_rename:
            # Files no committed state uses: states deleted or quarantined half-way, writes
            # of killed holders, and late writes of holders that lost the lease.
            remove_strays(self.layout, agent_id)
            return
        for name in self.fs.listdir(agent_dir):
            if name.startswith(TMP_PREFIX):
                with stop_signals_deferred():  # removed whole, not cut half-way by a stop
                    self.fs.remove_tree(self.fs.join(agent_dir, name))
        latest_eoc = self.layout.latest_state(agent_id, end_of_cycle=True)
        if latest_eoc is not None:
            self._remove_intermediate_before(agent_id, latest_eoc)

    def _remove_intermediate_before(self, agent_id: str, state: StateRef) -> None:
        for s in self.layout.list_states(agent_id):
            if not s.end_of_cycle and (s.cycle, s.generation) < (state.cycle, state.generation):
                self._remove_state(s)

    def _remove_state(self, state: StateRef) -> None:
        """Uncommit a state first, then delete it, so a kill in between leaves no half state."""
        agent_dir = self.layout.agent_dir(state.agent_id)
        folder = self.fs.join(agent_dir, state.name)
        if self.fs.atomic_rename:
            doomed = self.fs.join(agent_dir, f"{TMP_PREFIX}{state.name}-{secrets.token_hex(4)}")
            with stop_signals_deferred():  # a stop in between would leave the `.tmp-` folder
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
        if lock is not None and lock.lease is not None and not lock.held:
            raise lock.lease.lost_error()
        if lock is None or not lock.held:
            raise LockNotHeldError(
                f"save_state({agent_id!r}) needs the agent's lock: wrap the run in "
                f"`with store.lock({agent_id!r}):`"
            )
        for value, what in ((cycle, "cycle"), (generation, "generation")):
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{what} {value!r}: expected an int >= 0")
        state = StateRef(agent_id, cycle, generation)
        agent_dir = self.layout.agent_dir(agent_id)
        final_dir = self.fs.join(agent_dir, state.name)
        if lock.head is not None:
            if lock.head.head.entry(state.name) is not None:
                raise StateExistsError(f"state {state.relative_dir} is already committed")
            # Not committed: a folder there is a failed, killed or late write, invisible.
            self.fs.remove_tree(final_dir)
        elif self.fs.exists(final_dir):
            if self.fs.atomic_rename or self.fs.exists(self.fs.join(final_dir, MANIFEST)):
                raise StateExistsError(f"state {state.relative_dir} is already committed")
            self.fs.remove_tree(final_dir)  # An uncommitted in-place write of a failed save.
        latest = self.layout.latest_state(agent_id)
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
            work_dir = self.fs.join(agent_dir, f"{TMP_PREFIX}{state.name}-{secrets.token_hex(4)}")
        else:
            work_dir = final_dir
        try:
            # On local disk: every file written, synced and fenced; renamed into place below.
            dropped = self._write_state(
                lock, work_dir, final_dir, state, population, to_publish, index, to_write,
                config_json,
            )
        except BaseException as err:
            self._discard_failed_save(lock, work_dir, err)
            raise

        # On local disk the rename commits, and the intermediate states the commit retires are
        # removed (each renamed to a `.tmp-` name, then deleted): one step that a stop (SIGTERM,
        # Ctrl-C) waits for, so that it never leaves a half-deleted folder behind.
        with stop_signals_deferred() if self.fs.atomic_rename else nullcontext():
            if self.fs.atomic_rename:
                try:
                    self.fs.rename(work_dir, final_dir)  # fails if the state exists
                except BaseException as err:
                    self._discard_failed_save(lock, work_dir, err)
                    raise
            # Committed: later states and loads locate the written components in the new
            # shards.
            for c in to_write:
                c.location = ComponentLocation(index[c.key]["file"], index[c.key]["sha256"])
            if generation == 0:
                population.first_unsaved_component_id = population.next_component_id
                population.history = []
                if lock.head is None:
                    self._remove_intermediate_before(agent_id, state)
            for name in dropped:  # uncommitted by this commit's pointer write: now unused
                self.fs.remove_tree(self.fs.join(agent_dir, name))
        return state

    def _discard_failed_save(self, lock: AgentLock, work_dir: str, err: BaseException) -> None:
        """Remove what a save that failed (or was interrupted) wrote, where it is this
        process's to remove."""
        if lock.head is not None:
            # Invisible unless the pointer names it, and whether a failed pointer write
            # landed is not known here: the next holder removes what no state uses.
            return
        # Nothing of a failed save may look committed; a killed process leaves the folder
        # to the next holder of the lock. In place (object stores), the folder may hold
        # another writer's state once the lease is lost or the state exists: left alone.
        ours = self.fs.atomic_rename or (
            not isinstance(err, (LeaseLostError, StateExistsError)) and lock.held
        )
        if not ours:
            return
        # A second stop signal (Ctrl-C pressed again) waits until the folder is gone.
        with stop_signals_deferred() if self.fs.atomic_rename else nullcontext():
            try:
                if not self.fs.atomic_rename:
                    self.fs.remove_tree(self.fs.join(work_dir, MANIFEST))
                self.fs.remove_tree(work_dir)
            except Exception as cleanup:  # noqa: BLE001 - never hide why the save failed
                log.warning("could not remove the failed save %s (%s)", work_dir, cleanup)

    def _write_state(
        self,
        lock: AgentLock,
        work_dir: str,
        final_dir: str,
        state: StateRef,
        population: Population,
        to_publish: list[Path],
        index: dict[str, dict[str, Any]],
        to_write: list[Component],
        config_json: dict[str, Any],
    ) -> list[str]:
        """Write the state and, on object stores, commit it (on local disk the caller's
        rename commits it); returns the states its commit uncommitted."""
        self.fs.makedirs(work_dir)
        # In place (object stores), every file but the manifest has a name of its own to this
        # save: a request of an earlier holder that lands late (delayed past its lease) adds
        # an unreferenced file, and never changes a file of the state committed meanwhile.
        suffix = "" if self.fs.atomic_rename else f".{secrets.token_hex(4)}"
        history_name, population_name = HISTORY, POPULATION
        if suffix:
            history_name = HISTORY.replace(".csv", f"{suffix}.csv")
            population_name = POPULATION.replace(".json", f"{suffix}.json")
        shard_names: dict[str, str] = {}
        shards_info: dict[str, Any] = {}
        for i, shard in enumerate(plan_shards(to_write, self.max_shard_bytes)):
            shard_name = f"components-{i:05d}{suffix}.safetensors"
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
        if suffix:
            manifest["population_file"] = population_name
            manifest["history_file"] = history_name
        if lock.lease is not None:
            manifest["writer"] = lock.lease.token  # whose lease committed it (fencing)
        manifest_bytes = json.dumps(manifest, indent=1, default=json_default).encode()
        self.fs.write_bytes(
            self.fs.join(work_dir, history_name), rows_to_csv(population.history).encode()
        )
        self.fs.write_bytes(
            self.fs.join(work_dir, population_name),
            json.dumps({"population": population_entries}, default=json_default).encode(),
        )
        # The manifest goes last: on filesystems without atomic rename it is the commit mark.
        if self.fs.atomic_rename:
            self.fs.write_bytes(self.fs.join(work_dir, MANIFEST), manifest_bytes)
            self.fs.sync_dir(work_dir)
            lock.fence()  # an flock: held for as long as this process lives
            return []  # the caller renames it into place (the commit)
        commit_fenced(self.fs, lock, state, self.fs.join(work_dir, MANIFEST), manifest_bytes)
        if lock.head is None:
            return []
        # The commit point: the pointer's conditional write (refused once another process
        # claimed a newer epoch, however late this request lands).
        entry = HeadEntry(
            state.name,
            content_version(manifest_bytes),
            lock.head.head.epoch,
            lock.lease.token if lock.lease is not None else None,
        )
        return commit_to_head(self.fs, self.layout.agent_dir(state.agent_id), lock.head, entry)
