"""What a committed state is on disk: its folder name, its file names and its manifest.

A state `ROOT/<agent_id>/state_<cycle>_<generation>/` holds `manifest.json` (the commit mark on
stores without atomic renames: written last, deleted first), `paths.csv` (history rows),
`population.json` (how the agent saw the system) and the component shards. The manifest's
component index locates every component the state's published paths use, in this state's
shards or in an older end-of-cycle state of any agent, with shapes, dtypes and sha256.
"""

from __future__ import annotations

import json
import os
import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from munet.system.component import Component, tensors_checksum
from munet.system.errors import CorruptStateError
from munet.system.path import Path
from munet.system.population import Population
from munet.system.shards import ComponentLocation, spec_to_json

MANIFEST = "manifest.json"
HISTORY = "paths.csv"
# How the agent saw the whole system (one entry per path of every agent): it grows with the
# number of agents, so it is kept out of the manifest that every other agent reads.
POPULATION = "population.json"
FORMAT = "munet-system-state"
FORMAT_VERSION = 1
_STATE_DIR = re.compile(r"^state_(\d+)_(\d+)$")


def state_dir_name(cycle: int, generation: int) -> str:
    """`state_<cycle>_<generation>`."""
    return f"state_{cycle}_{generation}"


def recorded_file_name(
    manifest: dict[str, Any], key: str, default: str, state: StateRef
) -> str:
    """A file of the state whose name its manifest records under `key` (object stores name
    each save's files apart), or `default`.

    Raises:
        CorruptStateError: the recorded name is not a plain file name.
    """
    name = manifest.get(key) or default
    if not isinstance(name, str) or "/" in name or "\\" in name or name in (".", ".."):
        raise CorruptStateError(f"state {state.relative_dir}: bad {key} {name!r}")
    return name


def history_file_name(manifest: dict[str, Any], state: StateRef) -> str:
    """The state's history file: `paths.csv`, or the name its manifest records."""
    return recorded_file_name(manifest, "history_file", HISTORY, state)


class ManifestMissingError(CorruptStateError):
    """A listed state's manifest was not found when read."""


@dataclass(frozen=True)
class StateRef:
    """A committed state of one agent.

    Attributes:
        manifest_sha256: on object stores, the sha256 of the manifest the agent's commit
            pointer names (munet.system.head); None where states are listed from folders.
            Not part of the state's identity (equality, hashing).
    """

    agent_id: str
    cycle: int
    generation: int
    manifest_sha256: str | None = field(default=None, compare=False)

    @property
    def name(self) -> str:
        return state_dir_name(self.cycle, self.generation)

    @property
    def relative_dir(self) -> str:
        """`<agent_id>/state_<c>_<g>`, relative to the state root."""
        return f"{self.agent_id}/{self.name}"

    @property
    def end_of_cycle(self) -> bool:
        return self.generation == 0


def parse_state_dir(agent_id: str, name: str) -> StateRef | None:
    """The state a folder name denotes, or None for any other name."""
    m = _STATE_DIR.match(name)
    if m is None:
        return None
    return StateRef(agent_id, int(m.group(1)), int(m.group(2)))


def parse_manifest(data: bytes, state: StateRef) -> dict[str, Any]:
    """The manifest of `state` from its file's bytes.

    Raises:
        CorruptStateError: unreadable, or not a manifest of this state and format version.
    """
    try:
        manifest = json.loads(data.decode())
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CorruptStateError(f"state {state.relative_dir}: corrupt {MANIFEST}: {e}") from None
    if (
        not isinstance(manifest, dict)
        or manifest.get("format") != FORMAT
        or manifest.get("agent_id") != state.agent_id
        or manifest.get("cycle") != state.cycle
        or manifest.get("generation") != state.generation
    ):
        raise CorruptStateError(
            f"state {state.relative_dir}: {MANIFEST} does not describe this state"
        )
    if manifest.get("version") != FORMAT_VERSION:
        raise CorruptStateError(
            f"state {state.relative_dir}: format version {manifest.get('version')!r}, "
            f"this munet reads version {FORMAT_VERSION}"
        )
    return manifest


def build_manifest(
    state: StateRef,
    population: Population,
    config_json: dict[str, Any],
    published: list[Path],
    records: dict[str, Any],
    index: dict[str, dict[str, Any]],
    shards_info: dict[str, Any],
) -> dict[str, Any]:
    """The manifest of a state being committed (see the module docstring)."""
    generation = state.generation
    return {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "agent_id": state.agent_id,
        "task_name": population.task_name,
        "cycle": state.cycle,
        "generation": generation,
        "end_of_cycle": generation == 0,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "config": config_json,
        "next_path_id": population.next_path_id,
        "next_component_id": population.next_component_id,
        "first_unsaved_component_id": (
            population.next_component_id
            if generation == 0
            else population.first_unsaved_component_id
        ),
        "published": [p.full_id for p in published],
        "population_file": POPULATION,
        "paths": records,
        "components": index,
        "shards": shards_info,
        "history_rows": len(population.history),
    }


def component_index(
    population: Population, paths: list[Path]
) -> tuple[dict[str, dict[str, Any]], list[Component]]:
    """The manifest's component index for `paths`, and the components to write to new shards
    (the agent's components created since its last end-of-cycle state, checksummed here;
    their `file` entries are filled in once the shards are written).

    Raises:
        ValueError: a path uses another agent's component not loaded from the store.
    """
    index: dict[str, dict[str, Any]] = {}
    to_write: list[Component] = []
    for path in paths:
        for c in path.comps_only():
            if c.key in index:
                continue
            entry: dict[str, Any] = {
                "name": c.name,
                "agent_id": c.agent_id,
                "id": c.id,
                "num_params": c.num_params,
                "tensors": spec_to_json(c.spec),
            }
            unsaved = (
                c.agent_id == population.agent_id
                and c.id >= population.first_unsaved_component_id
            )
            if unsaved or (c.location is None and c.agent_id == population.agent_id):
                entry["file"] = None  # Filled in once the shard is written.
                to_write.append(c)
            elif isinstance(c.location, ComponentLocation):
                entry["sha256"] = c.location.sha256
                entry["file"] = c.location.file
            else:
                raise ValueError(
                    f"path {path.full_id} uses component {c.key} of agent {c.agent_id}, "
                    "which was not loaded from this store: only the owner can save it"
                )
            index[c.key] = entry
    compute_checksums(to_write)
    for c in to_write:
        index[c.key]["sha256"] = c.checksum
    return index, to_write


def compute_checksums(components: list[Component]) -> None:
    """Fill in missing checksums, hashing components in parallel (hashlib releases the GIL)."""
    todo = [c for c in components if c.checksum is None]
    if not todo:
        return
    workers = min(len(todo), os.cpu_count() or 1, 8)
    if workers == 1:
        for c in todo:
            c.checksum = tensors_checksum(c.tensors)
        return
    with ThreadPoolExecutor(workers) as pool:
        for c, digest in zip(
            todo, pool.map(lambda c: tensors_checksum(c.tensors), todo), strict=True
        ):
            c.checksum = digest
