"""The per-agent lease on shared storage (object stores, any fsspec filesystem).

Agents on different machines cannot share an `flock`, so on fsspec storage exclusion is a lease
kept in the store itself, under `<agent dir>/.lease/`:

* Each contender writes its own claim file `<token>.json` (a fresh random token, so no two
  writers ever write the same object) holding the holder (host, pid, start time, launch tag),
  an expiry time and the tokens of the expired claims it takes over.
* Then it lists the claims again. If it sees another live claim it withdraws its own, waits a
  random moment and tries again (or is refused, naming the holder). Because every contender
  writes before it lists, two of them cannot both see only themselves on a store whose writes
  and listings are read-after-write consistent (S3, GCS, a POSIX mount): at most one wins.
* The holder renews its claim (a heartbeat) every `ttl / 4` seconds. A claim whose expiry has
  passed belongs to a dead (or stalled) holder and is taken over: the taker names it in its own
  claim as superseded and deletes it. A live claim is never taken over.
* A holder that finds its claim gone, or superseded by another's, has lost the lease: `held`
  turns False, so the store refuses its next save. `held` is also False once the last renewal
  is older than the ttl (by this process's clock), so a stalled holder stops writing before
  another can take over.
* Release deletes only the holder's own claim file: another process's lease is never removed.

Expiry uses wall-clock time (`time.time()`): the machines' clocks must agree to well within the
ttl (NTP gives milliseconds; the default ttl is 30 s).
"""

from __future__ import annotations

import logging
import os
import random
import secrets
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from munet.system.errors import AgentLockedError, LeaseLostError
from munet.system.fs import StateFS
from munet.system.lease_claims import (  # noqa: F401  (re-exported: lease's public names)
    DEFAULT_LEASE_TTL,
    LEASE_TTL_ENV,
    Claim,
    default_lease_ttl,
    describe_holder,
)

log = logging.getLogger("munet.system")

LEASE_DIR = ".lease"
_ACQUIRE_ATTEMPTS = 6


class AgentLease:
    """A lease on one agent in a shared store; see the module docstring for the protocol.

    Args:
        fs: the store's filesystem.
        agent_dir: the agent's folder.
        agent_id: for messages.
        ttl: seconds a claim stays live without renewal.
        tag: names the launch this process belongs to (e.g. a Ray job). A live claim with the
            same tag is a dead earlier attempt of the same launch (Ray retried it): it is
            waited out (up to its expiry) instead of refused.
        clock: wall-clock seconds (tests pass a fake).

    Attributes:
        took_over: the holder of the expired claim taken over, if any.
    """

    def __init__(
        self,
        fs: StateFS,
        agent_dir: str,
        agent_id: str,
        *,
        ttl: float | None = None,
        tag: str | None = None,
        clock=time.time,
    ) -> None:
        self.fs = fs
        self.agent_id = agent_id
        self.dir = fs.join(agent_dir, LEASE_DIR)
        self.ttl = float(ttl if ttl is not None else default_lease_ttl())
        if not self.ttl > 0:
            raise ValueError(f"lease ttl {ttl!r}: expected seconds > 0")
        self.tag = tag
        self.clock = clock
        self.token = secrets.token_hex(16)
        self.path = fs.join(self.dir, f"{self.token}.json")
        self.took_over: dict[str, Any] | None = None
        #: Says what happened when this process's claim file vanished (set by the store: it
        #: reads the agent's commit pointer); None: not known.
        self.explain_loss: Callable[[], str | None] | None = None
        self._lost_because: str | None = None
        self._holder_info: dict[str, Any] = {}
        self.lost = False
        #: The holder that took the lease over, once `lost` (None: not known).
        self.lost_to: dict[str, Any] | None = None
        self._renewed_at = float("-inf")
        self._supersedes: list[str] = []
        self._acquired = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._io = threading.Lock()  # heartbeat vs release

    # Reading --------------------------------------------------------------------------------
    def _claims(self) -> list[Claim]:
        claims = []
        for name in self.fs.listdir(self.dir):
            if not name.endswith(".json"):
                continue
            token = name[: -len(".json")]
            try:
                data = self.fs.read_bytes(self.fs.join(self.dir, name))
            except FileNotFoundError:
                continue  # Released or taken over meanwhile.
            claims.append(Claim.from_bytes(token, data))
        return claims

    def _holder(self) -> dict[str, Any]:
        return {
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            **({"tag": self.tag} if self.tag else {}),
        }

    def holder_info(self) -> dict[str, Any]:
        """Who holds this lease (host, pid, since, launch tag), as its claim file says."""
        return dict(self._holder_info or self._holder())

    def _write_claim(self, holder: dict[str, Any]) -> None:
        # Count our own ttl from before the write: the claim may be live from its first byte.
        started = time.monotonic()
        claim = Claim(self.token, holder, self.clock() + self.ttl, self._supersedes)
        self.fs.write_bytes(self.path, claim.to_bytes())
        self._renewed_at = started

    # Acquiring ------------------------------------------------------------------------------
    @property
    def held(self) -> bool:
        """Whether this process holds the lease now (and renewed it within the ttl)."""
        return (
            self._acquired
            and not self.lost
            and time.monotonic() - self._renewed_at < self.ttl
        )

    def acquire(self) -> AgentLease:
        """Take the lease, or raise naming the live holder.

        Raises:
            AgentLockedError: another live process holds (or is taking) the lease.
        """
        if self._acquired:
            raise AgentLockedError(f"agent {self.agent_id!r}: this lease is already held")
        try:
            return self._acquire()
        except BaseException as err:
            # Interrupted (Ctrl-C, a cancelled task) or refused: leave no claim behind, if the
            # store lets us; a failed clean-up must not hide why acquiring failed (the claim
            # then simply expires). Cut short after the lease was taken (its heartbeat may
            # run), it is released: nobody would ever hold it, and the heartbeat would keep
            # it alive as long as this process lives (a Ray worker outlives its task).
            try:
                if self._acquired:
                    self.release()
                else:
                    self._delete(self.token)
            except Exception as cleanup:  # noqa: BLE001
                log.warning("agent %s: could not withdraw its lease claim after %s (%s); "
                            "it expires in %.0fs", self.agent_id, type(err).__name__,
                            cleanup, self.ttl)
            raise

    def _acquire(self) -> AgentLease:
        self.fs.makedirs(self.dir)
        holder = self._holder()
        self._holder_info = holder
        for attempt in range(_ACQUIRE_ATTEMPTS):
            now = self.clock()
            claims = [c for c in self._claims() if c.token != self.token]
            live = [c for c in claims if c.live(now)]
            if live:
                same_launch = [c for c in live if self.tag and c.holder.get("tag") == self.tag]
                if len(same_launch) == len(live):
                    # A dead earlier attempt of this launch: wait for its claim to expire.
                    wait = max(c.expires for c in live) - now
                    log.warning(
                        "agent %s: waiting %.0fs for the lease of an earlier attempt (%s) "
                        "to expire", self.agent_id, wait, describe_holder(live[0].holder),
                    )
                    time.sleep(min(max(wait, 0.0) + 0.05, self.ttl + 1.0))
                    continue
                raise self._refusal(live)
            expired = [c for c in claims if not c.live(now)]
            self._supersedes = [c.token for c in expired]
            self._write_claim(holder)
            rivals = [
                c
                for c in self._claims()
                if c.token != self.token
                and c.live(self.clock())
                and c.token not in self._supersedes
            ]
            if not rivals:
                self._acquired = True
                if expired:
                    newest = max(expired, key=lambda c: c.expires)
                    self.took_over = newest.holder or None
                for c in expired:
                    self._delete(c.token)
                self._start_heartbeat()
                return self
            # Someone else wrote a claim at the same time: both withdraw, then retry apart.
            self._delete(self.token)
            time.sleep(random.uniform(0.05, 0.25) * (attempt + 1))
        raise AgentLockedError(
            f"agent {self.agent_id!r}: could not take its lease in {self.dir} after "
            f"{_ACQUIRE_ATTEMPTS} tries (other processes keep claiming it)"
        )

    def _refusal(self, live: list[Claim]) -> AgentLockedError:
        holder = max(live, key=lambda c: c.expires).holder
        return AgentLockedError(
            f"agent {self.agent_id!r} is already running: its lease {self.dir} is held by "
            f"{describe_holder(holder)}; stop that process, or wait for the lease to expire "
            f"({self.ttl:.0f}s after its holder stops renewing it)"
        )

    def _delete(self, token: str) -> None:
        try:
            self.fs.remove_file(self.fs.join(self.dir, f"{token}.json"))
        except FileNotFoundError:
            pass

    # Heartbeat ------------------------------------------------------------------------------
    def _start_heartbeat(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(
            target=self._heartbeat_loop, name=f"lease:{self.agent_id}", daemon=True
        )
        self._thread.start()

    def _heartbeat_loop(self) -> None:
        while not self._stop.wait(self.ttl / 4):
            try:
                self.renew()
            except Exception as e:  # noqa: BLE001 - a flaky store must not kill the agent
                log.warning("agent %s: lease renewal failed (%s); retrying", self.agent_id, e)
            if self.lost:
                return

    def renew(self) -> bool:
        """Renew the claim (the heartbeat does this); False once the lease is lost."""
        with self._io:
            return self._renew(revive=True)

    def _renew(self, revive: bool) -> bool:
        """Renew; `revive`: also a claim whose ttl ran out by this process's clock, if it is
        still there and nobody superseded it (the heartbeat, after a stall)."""
        if not self._acquired or self.lost:
            return False
        mine = None
        superseded_by = None
        for c in self._claims():
            if c.token == self.token:
                mine = c
            elif self.token in c.supersedes and c.live(self.clock()):
                superseded_by = c
            elif c.token in self._supersedes:
                self._delete(c.token)  # A stalled holder wrote its old claim back.
        # A claim whose ttl ran out (by this process's clock, checked after the listing, which
        # may itself have been slow) may be being taken over right now by a process that does
        # not see this renewal. The heartbeat renews it anyway when it is still there and not
        # superseded (a stalled process goes on if nobody took over; the next fence re-reads
        # the claims), but a fence never does: no commit rests on it.
        late = time.monotonic() - self._renewed_at
        expired = late >= self.ttl and not revive
        if mine is None or superseded_by is not None or expired:
            self._mark_lost(mine, superseded_by)
            return False
        if late >= self.ttl:
            log.warning("agent %s: renewed its lease %.1fs after its ttl of %gs ran out "
                        "(nobody had taken it over)", self.agent_id, late - self.ttl, self.ttl)
        self._write_claim(mine.holder)
        return True

    def _mark_lost(self, mine: Claim | None, superseded_by: Claim | None) -> None:
        self.lost = True
        self.lost_to = superseded_by.holder if superseded_by is not None else None
        if mine is None and superseded_by is None:
            self._lost_because = self._vanished_reason()
        log.warning("agent %s: %s", self.agent_id, self._lost_reason())
        if superseded_by is not None and mine is not None:
            self._delete(self.token)

    def confirm_lost(self) -> bool:
        """Whether this process has lost the lease, asked when something else went wrong
        (the error to report is then the lost lease, not what the store said next).

        Known lost (the heartbeat or a fence saw it): True. Held by this process's clock: False.
        Otherwise (the last renewal is older than the ttl: a stalled process) the claims are read
        once: this process's claim gone, or superseded by a live one, is a lost lease. A store
        that cannot be read says nothing: False.
        """
        if self.lost:
            return True
        if not self._acquired or self.held:
            return False
        if not self._io.acquire(timeout=self.ttl):
            return self.lost  # The heartbeat is stuck on the store: only what it knows.
        try:
            if self.lost:
                return True
            now = self.clock()
            claims = self._claims()
            mine = next((c for c in claims if c.token == self.token), None)
            superseded_by = next(
                (c for c in claims if self.token in c.supersedes and c.live(now)), None
            )
            if mine is not None and superseded_by is None:
                return False
            self._mark_lost(mine, superseded_by)
            return True
        except Exception:  # noqa: BLE001 - the store is unreadable: not known
            return self.lost
        finally:
            self._io.release()

    def _vanished_reason(self) -> str:
        """Why this process's claim file is gone (no live claim names it as superseded)."""
        explained = None
        if self.explain_loss is not None:
            try:
                explained = self.explain_loss()
            except Exception:  # noqa: BLE001 - only a better message is lost
                explained = None
        return explained or (
            f"its claim file {self.path} is gone: deleted (by hand, or by a tool cleaning the "
            "store), or taken over by another process that has since finished"
        )

    def _lost_reason(self) -> str:
        if self._lost_because is not None:
            return f"lost its lease {self.dir}: {self._lost_because}"
        if self.lost_to:
            return (
                f"lost its lease {self.dir}: {describe_holder(self.lost_to)} took it over "
                f"after it was not renewed for {self.ttl:g}s"
            )
        return (
            f"lost its lease {self.dir}: it was not renewed within its ttl of {self.ttl:g}s "
            "(the store was slow or unreachable, or this process stalled)"
        )

    def lost_error(self) -> LeaseLostError:
        """The error that says this process lost the lease (and to whom, when known)."""
        return LeaseLostError(
            f"agent {self.agent_id!r} {self._lost_reason()}; this process committed nothing "
            "after that and stops: its committed states are intact, rerun to resume from them "
            "(once the other process, if any, has finished)"
        )

    def fence(self) -> float:
        """Prove from the store, right before a commit, that this process holds the lease.

        Re-reads the claims (this one present, none superseding it) and renews the claim, so
        the commit that follows has (almost) a whole ttl before anyone may take over.

        Returns:
            Seconds (monotonic) until the renewed lease could expire.

        Raises:
            LeaseLostError: the lease expired or was taken over; commit nothing.
        """
        with self._io:
            if not self._renew(revive=False):
                raise self.lost_error()
            return self._renewed_at + self.ttl - time.monotonic()

    # Releasing ------------------------------------------------------------------------------
    def release(self) -> None:
        """Stop the heartbeat and delete this process's own claim (idempotent)."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=self.ttl)
        self._thread = None
        with self._io:
            if self._acquired and not self.lost:
                self._delete(self.token)
            self._acquired = False
