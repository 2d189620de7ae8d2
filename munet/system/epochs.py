"""Taking an agent's commit pointer when its lock is taken (a new lease epoch, on object
stores: munet.system.head), and telling a holder that lost its lease what happened."""

from __future__ import annotations

from typing import TYPE_CHECKING

from munet.system.fs import content_version
from munet.system.head import HeadEntry, HeldHead, claim_epoch
from munet.system.lease import LEASE_DIR, describe_holder
from munet.system.lock import AgentLock
from munet.system.manifest import MANIFEST

if TYPE_CHECKING:
    from munet.system.layout import StateLayout


def claim_for_lock(store: StateLayout, agent_id: str, agent_lock: AgentLock) -> HeldHead:
    """Claim a new epoch of the agent's commit pointer for the lock just taken (creating the
    pointer of a store written before pointers, naming its listed states), and let the lease
    explain a loss from the pointer.

    Raises:
        AgentLockedError: the pointer kept changing while it was claimed.
        CorruptStateError: the pointer is unreadable.
    """
    lease = agent_lock.lease
    token = lease.token if lease is not None else None

    def legacy_states() -> list[HeadEntry]:
        # A store written before pointers: its listed states (intermediate ones older
        # than the latest end-of-cycle state were leftovers of the older protocol).
        states = store.listed_states(agent_id)
        eoc = [s for s in states if s.end_of_cycle]
        entries = []
        for s in states:
            if eoc and not s.end_of_cycle and (s.cycle, s.generation) < (
                eoc[-1].cycle, eoc[-1].generation
            ):
                continue
            path = store.fs.join(store.agent_dir(agent_id), s.name, MANIFEST)
            try:
                sha = content_version(store.fs.read_bytes(path))
            except FileNotFoundError:
                continue  # Removed meanwhile.
            entries.append(HeadEntry(s.name, sha, 0, None))
        return entries

    held = claim_epoch(
        store.fs,
        store.agent_dir(agent_id),
        agent_id,
        token,
        lease.holder_info() if lease is not None else {},
        legacy_states,
    )
    if lease is not None:
        lease.explain_loss = lambda: explain_loss(store, agent_id, token)
    return held


def explain_loss(store: StateLayout, agent_id: str, token: str | None) -> str | None:
    """What happened to a lease whose claim file vanished, from the commit pointer."""
    try:
        found = store.read_head(agent_id)
    except Exception:  # noqa: BLE001 - only a better message is lost
        return None
    if found is None:
        return None
    head = found[0]
    if head.writer == token:
        return (
            "its claim file was deleted while it held the lease (by hand, or by a tool "
            "cleaning the store); no other process has taken the agent over since"
        )
    claim = store.fs.join(store.agent_dir(agent_id), LEASE_DIR, f"{head.writer}.json")
    try:
        running = head.writer is not None and store.fs.exists(claim)
    except Exception:  # noqa: BLE001
        running = None
    after = {True: " and still holds it", False: " and has since finished (released it)",
             None: ""}[running]
    return (
        f"{describe_holder(head.holder)} took the agent over (lease epoch {head.epoch})"
        f"{after}"
    )
