"""SystemStore: the crash-safe sharded system state on disk (or any fsspec filesystem).

What a state holds and its manifest: munet.system.manifest. A store is its layout (folders,
listings, manifest and history reads: munet.system.layout) and holds a reader (an agent's view
of the system, checked lazily read components: munet.system.loading) and a writer (the agent's
lock, committing a state: munet.system.saving), whose methods it offers as its own.

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

import os
from collections.abc import Iterable, Mapping
from contextlib import AbstractContextManager
from typing import Any

from munet.system.component import Component
from munet.system.fs import StateFS
from munet.system.fsspec_fs import open_state_fs
from munet.system.layout import StateLayout
from munet.system.loading import LoadedState, StateReader
from munet.system.lock import AgentLock
from munet.system.manifest import StateRef
from munet.system.path import Path
from munet.system.population import Population
from munet.system.saving import StateWriter
from munet.system.scoring import ScorerDecay
from munet.system.shards import ShardReader

DEFAULT_MAX_SHARD_BYTES = 1 << 30


class SystemStore(StateLayout):
    """The system state of all agents under one root (a local path or an fsspec URL).

    Args:
        root: state dir, e.g. `/data/state` or `memory://state` (created when written).
        max_shard_bytes: a new shard starts once a shard would grow past this.
        lease_ttl: on fsspec stores, seconds an agent's lease stays live without a heartbeat
            (default `MUNET_LEASE_TTL` or 30).
        lease_tag: the launch this process belongs to (a live lease of the same launch, left
            by a killed earlier attempt, is waited out instead of refused).

    Only the process holding `lock(agent_id)` may `save_state` that agent; everyone may
    `load` and read everyone's committed states. The listings and reads of the layout are
    the store's own (munet.system.layout); reading is its `reader`'s
    (munet.system.loading.StateReader), writing its `writer`'s
    (munet.system.saving.StateWriter).
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
        if fs is None:
            fs, root = open_state_fs(root)
        super().__init__(fs, root)
        self.reader = StateReader(self)
        self.writer = StateWriter(self, max_shard_bytes, lease_ttl, lease_tag)

    def __repr__(self) -> str:
        return f"SystemStore({self.root!r})"

    # Reading (the reader's) -------------------------------------------------------------------
    def load(
        self,
        agent_id: str,
        agent_classes: Iterable[str] | None = None,
        *,
        scorer: ScorerDecay | None = None,
        max_task_population_size: int | None = None,
        verify: str | None = None,
    ) -> LoadedState:
        """Open the system as seen by `agent_id`: see
        :meth:`munet.system.loading.StateReader.load`."""
        return self.reader.load(
            agent_id,
            agent_classes,
            scorer=scorer,
            max_task_population_size=max_task_population_size,
            verify=verify,
        )

    def latest_good_state(
        self,
        agent_id: str,
        *,
        end_of_cycle: bool = False,
        strict: bool = False,
        verify: str = "checksums",
    ) -> tuple[StateRef, dict[str, Any]] | None:
        """The agent's latest whole state and its manifest: see
        :meth:`munet.system.loading.StateReader.latest_good_state`."""
        return self.reader.latest_good_state(
            agent_id, end_of_cycle=end_of_cycle, strict=strict, verify=verify
        )

    def lazy_component(self, key: str, entry: Mapping[str, Any]) -> Component:
        """A component of a manifest's index, read and checked on first use."""
        return self.reader.lazy_component(key, entry)

    def shard_reader(self, relative_file: str) -> ShardReader:
        """The (cached) reader of a shard, given relative to the state root."""
        return self.reader.shard_reader(relative_file)

    @property
    def verified_components(self) -> set[tuple[str, str, str]]:
        """(shard file, component key, sha256) of the components this store verified."""
        return self.reader.verified_components

    def verify_state(self, state: StateRef) -> int:
        """Read every component of a committed state and check its checksum: see
        :meth:`munet.system.loading.StateReader.verify_state`."""
        return self.reader.verify_state(state)

    def close(self) -> None:
        """Drop cached shard readers (their memory maps close once no tensor uses them)."""
        self.reader.close()

    # Writing (the writer's) -------------------------------------------------------------------
    def lock(self, agent_id: str) -> AbstractContextManager[AgentLock]:
        """Hold the agent's lock: see :meth:`munet.system.saving.StateWriter.lock` (its
        context manager itself, so that its warnings point at the caller)."""
        return self.writer.lock(agent_id)

    def save_state(
        self,
        population: Population,
        cycle: int,
        generation: int,
        config: Mapping[str, Any] | None = None,
        published: Iterable[Path] | None = None,
    ) -> StateRef:
        """Commit the agent's state `state_<cycle>_<generation>`: see
        :meth:`munet.system.saving.StateWriter.save_state`."""
        return self.writer.save_state(population, cycle, generation, config, published)

    def uncommit_state(self, state: StateRef) -> None:
        """Make a committed state invisible before it is moved or removed: see
        :meth:`munet.system.saving.StateWriter.uncommit_state`."""
        self.writer.uncommit_state(state)

    @property
    def lease_ttl(self) -> float | None:
        return self.writer.lease_ttl

    @property
    def lease_tag(self) -> str | None:
        return self.writer.lease_tag

    @property
    def max_shard_bytes(self) -> int:
        return self.writer.max_shard_bytes
