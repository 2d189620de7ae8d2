"""The commit pointer of an agent on an object store: one object per agent, `<agent
dir>/current.json`, that names the agent's committed states and the lease epoch that wrote it.

It is replaced only by a conditional write on the version the writer last read or wrote (S3
`If-Match` on its ETag, `If-None-Match: *` to create it; `StateFS.replace_if`), as table formats
commit on object stores (Apache Iceberg's metadata pointer, Delta Lake's put-if-absent log).

* **Epochs.** Whoever takes the agent's lock first bumps the pointer's epoch (a conditional
  write naming itself). Every later write of the previous holder is conditioned on a version
  that no longer exists, so the store refuses it, however late it lands: a manifest delayed in
  the network past its writer's lease may land in a state folder, but the pointer never names
  it, and a state the pointer does not name is invisible to every reader.
* **Commits.** A state is committed when a conditional write of the pointer naming it (with its
  manifest's sha256) succeeds; an end-of-cycle commit drops the intermediate states from the
  pointer in the same write, so they stop being visible at once, before their files go.
* **Readers** read the pointer first (one GET) and see exactly the states it names; a manifest
  whose bytes do not hash to the recorded sha256 is damaged (a file replaced after its commit).
* **Stores written before the pointer existed** have none: readers then list the state folders
  holding a manifest (the older rule), and the first holder of the agent's lock writes the
  pointer naming exactly those states (`If-None-Match: *`), after which it alone decides.

Local disk has no pointer: a state is committed by an atomic rename under an `flock`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from munet.system.errors import AgentLockedError, CorruptStateError, LeaseLostError
from munet.system.fs import StateFS, VersionMismatchError
from munet.system.lease import describe_holder
from munet.system.manifest import StateRef, parse_state_dir

HEAD_FILE = "current.json"
HEAD_FORMAT = "munet-agent-head"
HEAD_VERSION = 1


@dataclass(frozen=True)
class HeadEntry:
    """One committed state named by the pointer."""

    name: str
    manifest_sha256: str
    epoch: int
    writer: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "manifest_sha256": self.manifest_sha256,
            "epoch": self.epoch,
            "writer": self.writer,
        }


@dataclass
class Head:
    """The pointer's content.

    Attributes:
        agent_id: the agent.
        epoch: bumped by every holder of the agent's lock when it takes it.
        writer: the lease token of the epoch's holder (None: a lock without a lease).
        holder: who holds the epoch (host, pid, since, launch tag), for messages.
        states: the committed states, oldest first.
    """

    agent_id: str
    epoch: int = 0
    writer: str | None = None
    holder: dict[str, Any] = field(default_factory=dict)
    states: list[HeadEntry] = field(default_factory=list)

    def to_bytes(self) -> bytes:
        return json.dumps(
            {
                "format": HEAD_FORMAT,
                "version": HEAD_VERSION,
                "agent_id": self.agent_id,
                "epoch": self.epoch,
                "writer": self.writer,
                "holder": self.holder,
                "states": [s.to_json() for s in self.states],
            },
            indent=1,
        ).encode()

    @staticmethod
    def from_bytes(data: bytes, agent_id: str, where: str) -> Head:
        """Parse a pointer.

        Raises:
            CorruptStateError: not a pointer of this agent (naming `where`).
        """
        try:
            raw = json.loads(data.decode())
            if raw.get("format") != HEAD_FORMAT or raw.get("agent_id") != agent_id:
                raise ValueError("not this agent's commit pointer")
            if raw.get("version") != HEAD_VERSION:
                raise ValueError(f"version {raw.get('version')!r}, expected {HEAD_VERSION}")
            states = []
            for entry in raw["states"]:
                if parse_state_dir(agent_id, entry["name"]) is None:
                    raise ValueError(f"bad state name {entry['name']!r}")
                states.append(
                    HeadEntry(
                        str(entry["name"]),
                        str(entry["manifest_sha256"]),
                        int(entry["epoch"]),
                        entry.get("writer"),
                    )
                )
            return Head(
                agent_id,
                int(raw["epoch"]),
                raw.get("writer"),
                dict(raw.get("holder") or {}),
                states,
            )
        except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError, ValueError,
                AttributeError) as err:
            raise CorruptStateError(f"{where}: unreadable commit pointer ({err})") from None

    def state_refs(self) -> list[StateRef]:
        """The committed states, oldest first (each with its manifest's sha256)."""
        refs = []
        for entry in self.states:
            ref = parse_state_dir(self.agent_id, entry.name)
            assert ref is not None  # checked when parsed
            refs.append(
                StateRef(ref.agent_id, ref.cycle, ref.generation, entry.manifest_sha256)
            )
        return sorted(refs, key=lambda s: (s.cycle, s.generation))

    def entry(self, name: str) -> HeadEntry | None:
        return next((s for s in self.states if s.name == name), None)

    def committing(self, entry: HeadEntry) -> Head:
        """The pointer once `entry` is committed: an end-of-cycle state drops the intermediate
        states (they stop being visible in the same write); any entry of the same name (a
        state re-committed after being quarantined) is replaced."""
        state = parse_state_dir(self.agent_id, entry.name)
        kept = [
            s
            for s in self.states
            if s.name != entry.name
            and not (state is not None and state.end_of_cycle and not _is_end_of_cycle(s))
        ]
        return Head(self.agent_id, self.epoch, self.writer, self.holder, [*kept, entry])

    def without(self, names: set[str]) -> Head:
        """The pointer with the states `names` uncommitted."""
        kept = [s for s in self.states if s.name not in names]
        return Head(self.agent_id, self.epoch, self.writer, self.holder, kept)


def _is_end_of_cycle(entry: HeadEntry) -> bool:
    state = parse_state_dir("", entry.name)
    return state is not None and state.end_of_cycle


@dataclass
class HeldHead:
    """The pointer as its epoch's holder last wrote it, and that version (the condition of
    its next write)."""

    head: Head
    version: str


def head_path(fs: StateFS, agent_dir: str) -> str:
    return fs.join(agent_dir, HEAD_FILE)


def claim_epoch(
    fs: StateFS,
    agent_dir: str,
    agent_id: str,
    writer: str | None,
    holder: dict[str, Any],
    legacy_states: Callable[[], list[HeadEntry]],
) -> HeldHead:
    """Start a new epoch: rewrite the pointer naming this holder, conditioned on the version
    read, so that every later write of an earlier holder is refused.

    Args:
        fs: the store's filesystem.
        agent_dir: the agent's folder.
        agent_id: the agent.
        writer: this holder's lease token.
        holder: who this is (messages).
        legacy_states: the committed states of a store without a pointer yet (listed from
            the folders holding a manifest); called only then.

    Raises:
        AgentLockedError: other writes of the pointer kept landing between its read and
            this write.
        CorruptStateError: the pointer is unreadable.
    """
    path = head_path(fs, agent_dir)
    for _ in range(_CLAIM_ATTEMPTS):
        found = fs.read_versioned(path)
        if found is None:
            head, version = Head(agent_id, 0, None, {}, legacy_states()), None
        else:
            head, version = Head.from_bytes(found[0], agent_id, f"{agent_id}/{HEAD_FILE}"), found[1]
        claimed = Head(agent_id, head.epoch + 1, writer, holder, head.states)
        try:
            return HeldHead(claimed, fs.replace_if(path, claimed.to_bytes(), version))
        except VersionMismatchError:
            # A late commit of the previous holder landed in between (or a legacy store got
            # its pointer from another process): read it again and claim after it.
            continue
    raise AgentLockedError(
        f"agent {agent_id!r}: its commit pointer {path} kept changing while this process "
        f"claimed it ({_CLAIM_ATTEMPTS} tries): another process is writing it"
    )


def commit_to_head(
    fs: StateFS, agent_dir: str, held: HeldHead, entry: HeadEntry
) -> list[str]:
    """Commit a state: the conditional write of the pointer naming it.

    Args:
        fs: the store's filesystem.
        agent_dir: the agent's folder.
        held: this holder's pointer (updated in place once written).
        entry: the state being committed.

    Returns:
        The names of the states this commit uncommitted (intermediate states dropped by an
        end-of-cycle commit), whose files may now be removed.

    Raises:
        LeaseLostError: another process claimed a new epoch since this one's: nothing
            committed (the state's files are left for the new holder to clean up).
    """
    new = held.head.committing(entry)
    return _replace(fs, agent_dir, held, new, f"commit {entry.name}")


def uncommit_from_head(fs: StateFS, agent_dir: str, held: HeldHead, names: set[str]) -> None:
    """Drop states from the pointer (quarantine): invisible from this write on.

    Raises:
        LeaseLostError: another process claimed a new epoch since this one's.
    """
    _replace(fs, agent_dir, held, held.head.without(names), f"uncommit {sorted(names)}")


def _replace(fs: StateFS, agent_dir: str, held: HeldHead, new: Head, what: str) -> list[str]:
    path = head_path(fs, agent_dir)
    data = new.to_bytes()
    try:
        version = fs.replace_if(path, data, held.version)
    except VersionMismatchError:
        found = fs.read_versioned(path)
        if found is None or found[0] != data:
            raise LeaseLostError(_lost_message(held.head, found, path, what)) from None
        version = found[1]  # An earlier try of this same write landed; its reply was lost.
    kept = {s.name for s in new.states}
    dropped = [s.name for s in held.head.states if s.name not in kept]
    held.head, held.version = new, version
    return dropped


def _lost_message(mine: Head, found: tuple[bytes, str] | None, path: str, what: str) -> str:
    who = "it was deleted"
    if found is not None:
        try:
            theirs = Head.from_bytes(found[0], mine.agent_id, path)
            who = (
                f"{describe_holder(theirs.holder)} took the agent over (lease epoch "
                f"{theirs.epoch}; this process held epoch {mine.epoch})"
            )
        except CorruptStateError:
            who = "it was overwritten with something unreadable"
    return (
        f"agent {mine.agent_id!r} lost its lease: its commit pointer {path} changed since this "
        f"process last wrote it ({who}), so the store refused its {what}; this process "
        "committed nothing more (what it wrote is invisible to every reader, and removed by "
        "the next holder) and stops: rerun to resume from the committed states"
    )


_CLAIM_ATTEMPTS = 8
