"""The lease that guards an agent on shared storage: one holder even when contenders race
through a slow store, expiry and takeover, loss detection, release only by the owner."""

import itertools
import json
import logging
import threading
import time

import fsspec
import pytest

from munet.system import AgentLockedError, SystemStore
from munet.system.fsspec_fs import FsspecFS
from munet.system.instrumented_fs import InstrumentedFS
from munet.system.lease import AgentLease, default_lease_ttl

A = "VitCpu~digits"


@pytest.fixture
def memory_fs(tmp_path):
    memory = fsspec.filesystem("memory")
    root = f"/lease-{tmp_path.name}"
    yield FsspecFS(memory), root
    if memory.exists(root):
        memory.rm(root, recursive=True)


def _race(fs, agent_dir, contenders, ttl=30.0):
    """Start `contenders` acquisitions at once; return the winners and the refusals."""
    barrier = threading.Barrier(contenders)
    winners, refusals = [], []

    def contend():
        lease = AgentLease(fs, agent_dir, A, ttl=ttl)
        barrier.wait()
        try:
            lease.acquire()
            winners.append(lease)
        except AgentLockedError as e:
            refusals.append(str(e))

    threads = [threading.Thread(target=contend) for _ in range(contenders)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return winners, refusals


def test_racing_contenders_through_a_50ms_store_get_one_holder(memory_fs):
    inner, root = memory_fs
    slow = InstrumentedFS(inner, latency=0.05)
    for trial in range(5):
        agent_dir = f"{root}/trial{trial}/{A}"
        winners, refusals = _race(slow, agent_dir, contenders=3)
        assert len(winners) == 1, (trial, refusals)
        assert len(refusals) == 2
        for message in refusals:
            assert f"agent '{A}' is already running" in message or "could not take" in message
        winners[0].release()
        assert inner.listdir(f"{agent_dir}/.lease") == []
    assert slow.requests["write"] >= 15  # every contender really wrote a claim


def test_dead_holder_is_taken_over_after_expiry_a_live_one_never(memory_fs):
    fs, root = memory_fs
    agent_dir = f"{root}/{A}"
    holder = AgentLease(fs, agent_dir, A, ttl=0.6, tag="launch-1").acquire()
    # Alive: the heartbeat (every ttl/4) keeps it, well past several ttls.
    deadline = time.monotonic() + 1.5
    while time.monotonic() < deadline:
        with pytest.raises(AgentLockedError, match="launch launch-1"):
            AgentLease(fs, agent_dir, A, ttl=0.6).acquire()
        time.sleep(0.2)
    assert holder.held
    # Dead: its heartbeat stops (as when its process is killed); the lease expires.
    holder._stop.set()
    holder._thread.join()
    with pytest.raises(AgentLockedError):
        AgentLease(fs, agent_dir, A, ttl=0.6).acquire()
    time.sleep(0.7)
    assert not holder.held  # it knows it may no longer write
    taker = AgentLease(fs, agent_dir, A, ttl=0.6).acquire()
    assert taker.took_over["tag"] == "launch-1"
    # The old holder comes back: it finds it lost the lease and does not remove the new one.
    assert holder.renew() is False and holder.lost
    holder.release()
    assert fs.listdir(f"{agent_dir}/.lease") == [f"{taker.token}.json"]
    taker.release()
    assert fs.listdir(f"{agent_dir}/.lease") == []


def test_a_stalled_holder_that_writes_its_claim_back_loses(memory_fs):
    fs, root = memory_fs
    agent_dir = f"{root}/{A}"
    stalled = AgentLease(fs, agent_dir, A, ttl=0.4).acquire()
    stalled._stop.set()
    stalled._thread.join()
    time.sleep(0.5)
    taker = AgentLease(fs, agent_dir, A, ttl=0.4).acquire()
    # The stalled holder wakes up and writes its claim back, live again.
    claim = json.loads(taker.fs.read_bytes(taker.path))
    claim.update(token=stalled.token, supersedes=[], expires=time.time() + 60)
    fs.write_bytes(stalled.path, json.dumps(claim).encode())
    # Its claim, rewritten after the takeover, is superseded: both sides agree who holds it.
    assert stalled.renew() is False
    assert taker.renew() is True
    taker.release()


def test_same_launch_waits_out_its_dead_attempt(memory_fs, caplog):
    fs, root = memory_fs
    agent_dir = f"{root}/{A}"
    # Expiry is judged by the lease's clock: here a fake one, so the retry first sees the dead
    # attempt's claim live (at 1000, it expires at 1000.5), then expired (at 1001), however
    # slowly this machine runs.
    dead = AgentLease(fs, agent_dir, A, ttl=0.5, tag="job-7", clock=lambda: 1000.0).acquire()
    dead._stop.set()
    dead._thread.join()
    ticks = itertools.chain([1000.0], itertools.repeat(1001.0))
    with caplog.at_level(logging.WARNING, logger="munet.system"):
        retry = AgentLease(
            fs, agent_dir, A, ttl=0.5, tag="job-7", clock=lambda: next(ticks)
        ).acquire()
    # It waited for the live claim of its launch to expire (not refused), then took it over.
    assert "waiting" in caplog.text and "earlier attempt" in caplog.text
    assert "(launch job-7)" in caplog.text
    assert retry.took_over["tag"] == "job-7"
    # Another launch is refused while the retry's claim is live.
    with pytest.raises(AgentLockedError, match="job-7"):
        AgentLease(fs, agent_dir, A, ttl=0.5, tag="job-8", clock=lambda: 1001.0).acquire()
    retry.release()


def test_store_refuses_to_save_once_the_lease_is_lost(memory_fs):
    from munet.cli.errors import EXIT_LOCKED, classify
    from munet.system import LeaseLostError, Population

    _, root = memory_fs
    store = SystemStore(f"memory://{root}", lease_ttl=0.4)
    population = Population(A)
    with store.lock(A) as lock:
        lock.lease._stop.set()
        lock.lease._thread.join()
        time.sleep(0.5)
        with pytest.raises(LeaseLostError, match="not renewed within its ttl of 0.4s") as err:
            store.save_state(population, 1, 0)
    # A lost lease is a lock held elsewhere (exit 3), not bad input: no API hint.
    code, message = classify(err.value)
    assert code == EXIT_LOCKED and "store.lock" not in message
    assert store.list_states(A) == []


def test_lease_ttl_from_the_environment(monkeypatch):
    monkeypatch.setenv("MUNET_LEASE_TTL", "2.5")
    assert default_lease_ttl() == 2.5
    monkeypatch.setenv("MUNET_LEASE_TTL", "soon")
    with pytest.raises(ValueError, match="MUNET_LEASE_TTL='soon'"):
        default_lease_ttl()


def _stall(lock) -> None:
    """Stop a holder's heartbeat, as a process stalled (or a store too slow) would."""
    lock.lease._stop.set()
    lock.lease._thread.join()


def test_a_claim_deleted_by_hand_is_reported_as_such(memory_fs):
    from munet.system import LeaseLostError, Population

    fs, root = memory_fs
    store = SystemStore(f"memory://{root}", lease_ttl=30)
    with store.lock(A) as lock:
        fs.remove_file(lock.lease.path)  # an operator "unlocks" the agent by hand
        with pytest.raises(LeaseLostError) as err:
            store.save_state(Population(A), 1, 0)
    message = str(err.value)
    assert "its claim file was deleted while it held the lease" in message, message
    assert "no other process has taken the agent over" in message
    assert "not renewed" not in message


def test_a_takeover_by_a_holder_that_finished_is_reported_as_such(memory_fs):
    from munet.system import LeaseLostError, Population

    _, root = memory_fs
    old = SystemStore(f"memory://{root}", lease_ttl=0.4)
    with old.lock(A) as lock:
        _stall(lock)
        time.sleep(0.5)
        taker = SystemStore(f"memory://{root}", lease_ttl=0.4)
        with pytest.warns(UserWarning, match="took over a stale lock"):
            with taker.lock(A) as taken:
                holder = taken.lease.holder_info()
        # The taker finished (released its claim) before the old holder noticed anything.
        with pytest.raises(LeaseLostError) as err:
            lock.lease.renew()
            old.save_state(Population(A), 1, 0)
    message = str(err.value)
    assert f"pid {holder['pid']} on host {holder['host']}" in message, message
    assert "took the agent over (lease epoch 2) and has since finished" in message, message
    assert "not renewed within its ttl" not in message


def _then_interrupt(original):
    def wrapped(self, *args, **kwargs):
        original(self, *args, **kwargs)
        raise KeyboardInterrupt

    return wrapped


@pytest.mark.parametrize("cut_after", ["the heartbeat starts", "the lease", "the lock"])
def test_an_interrupt_just_after_the_lease_is_taken_leaves_it_free(
    memory_fs, monkeypatch, cut_after
):
    """A cancelled Ray task is interrupted between any two instructions (munet.job_cancel).
    One landing just after the lease was taken, before the caller's `with` holds the lock,
    must give it back: its heartbeat would otherwise renew it for as long as the worker
    process lives, and every later run of the agent would be refused."""
    from munet.system.lock import AgentLock

    _, root = memory_fs
    target = {
        "the heartbeat starts": (AgentLease, "_start_heartbeat"),
        "the lease": (AgentLease, "acquire"),
        "the lock": (AgentLock, "acquire"),
    }[cut_after]
    monkeypatch.setattr(*target, _then_interrupt(getattr(*target)))
    store = SystemStore(f"memory://{root}", lease_ttl=60)
    with pytest.raises(KeyboardInterrupt):
        with store.lock(A):
            pytest.fail("the body must not run")
    monkeypatch.undo()
    assert not [t for t in threading.enumerate() if t.name == f"lease:{A}" and t.is_alive()]
    with SystemStore(f"memory://{root}", lease_ttl=60).lock(A):  # at once, not in 60 s
        pass
