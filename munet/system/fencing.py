"""The fenced commit of a state on an object store: only a writer that proves it holds the
agent's lease makes a state visible, and a late write never overwrites a committed state.

On stores without atomic renames the manifest is the commit mark (written last). Committing is:

1. **Fence**: re-read the lease from the store and renew it (`AgentLock.fence`). A writer whose
   claim was taken over, or whose last renewal is older than the ttl by its own clock, stops
   here with `LeaseLostError`: it commits nothing.
2. **Create the manifest, never overwrite it**: one conditional request where the store has one
   (S3 `If-None-Match: *`, GCS `ifGenerationMatch=0`; `FsspecFS.atomic_create`), so a manifest
   that lands late (a request delayed in the network past its writer's lease) cannot replace
   the state the next holder committed: the store refuses it.
3. **A manifest found in place** (the create was refused):
   * byte for byte ours: an earlier try of this same request landed and its reply was lost;
     committed.
   * anything else appeared during this save (the save refuses a state committed before it
     started), so its writer did not hold the lease when it landed; if this writer proves
     again that it holds the lease (fence), the late manifest is removed and this writer's
     committed in its place. A writer that cannot prove it gets `LeaseLostError`.

The manifest is not the commit point on object stores: the agent's commit pointer is
(munet.system.head), written after it; what is and is not guaranteed: docs/cluster.md,
"Commits on object stores".
"""

from __future__ import annotations

import json
import logging
from typing import Any

from munet.system.errors import StateExistsError
from munet.system.fs import StateFS
from munet.system.manifest import StateRef

log = logging.getLogger("munet.system")


def manifest_writer(data: bytes) -> str | None:
    """The lease token recorded in a manifest (None: none recorded, or unreadable)."""
    try:
        writer = json.loads(data.decode()).get("writer")
    except (UnicodeDecodeError, json.JSONDecodeError, AttributeError):
        return None
    return writer if isinstance(writer, str) else None


def commit_fenced(fs: StateFS, lock: Any, state: StateRef, path: str, data: bytes) -> None:
    """Write the manifest `data` at `path` as the commit of `state`, fenced by `lock`.

    Args:
        fs: the store's filesystem (manifest-last commits).
        lock: the agent's `AgentLock`, held.
        state: the state being committed (messages).
        path: the manifest's path.
        data: the manifest.

    Raises:
        LeaseLostError: this process no longer holds the agent's lease; nothing committed.
        StateExistsError: another writer's manifest is in place and could not be replaced.
    """
    lock.fence()
    try:
        fs.create_bytes(path, data)
        return
    except FileExistsError:
        pass
    try:
        existing = fs.read_bytes(path)
    except FileNotFoundError:
        existing = None  # Removed meanwhile: try once more below.
    if existing == data:
        return
    lock.fence()  # Only a writer that still holds the lease may replace a late manifest.
    if existing is not None:
        log.warning(
            "state %s: a manifest written by %s landed after this process took the agent's "
            "lease (a delayed request of an earlier holder); replacing it with this process's",
            state.relative_dir,
            f"lease {manifest_writer(existing)}" if manifest_writer(existing) else "another writer",
        )
        try:
            fs.remove_file(path)
        except FileNotFoundError:
            pass
    try:
        fs.create_bytes(path, data)
    except FileExistsError:
        raise StateExistsError(
            f"state {state.relative_dir} was committed by another writer while this one "
            "committed it"
        ) from None
