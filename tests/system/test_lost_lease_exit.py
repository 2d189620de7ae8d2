"""A writer that lost its lease exits 3 with the lost-lease message, whatever the store's next
request says: a writer stalled mid-save past its lease (SIGSTOP), taken over (`munet doctor
--clean` takes the lock), then resumed, may see its next request fail like an outage (its
connection went stale while it was stopped) or find a file the new holder removed."""

import time

import fsspec
import pytest
import torch

from munet.cli.errors import EXIT_LOCKED, EXIT_OS_ERROR, classify
from munet.system import LeaseLostError, Population, StoreUnavailableError, SystemStore, saving

A = "VitCpu~digits"
TTL = 0.4


@pytest.fixture
def root(tmp_path):
    memory = fsspec.filesystem("memory")
    folder = f"/lost-lease-{tmp_path.name}"
    yield f"memory://{folder}"
    if memory.exists(folder):
        memory.rm(folder, recursive=True)


def _population() -> Population:
    population = Population(A)
    component = population.new_component("head", {"w": torch.ones(2)}, train_locks=[A])
    population.add_path(population.new_path({}, [component], None))
    return population


def _outage(operation: str = "write state_1_0/shard_0.safetensors") -> StoreUnavailableError:
    return StoreUnavailableError(
        f"the object store at http://127.0.0.1:9 (s3) is unreachable: {operation} failed "
        "after 1 tries in 30.0s (ConnectionClosedError); committed states are intact: rerun "
        "when it is back",
        endpoint="http://127.0.0.1:9 (s3)",
        operation=operation,
    )


def _stall_mid_save(monkeypatch, store, root, then: BaseException, *, take_over: bool = True):
    """Make the next shard write stall past the lease (its heartbeat stopped, as SIGSTOP
    does), let another process take the agent over meanwhile (as `munet doctor --clean`),
    then fail with `then`, as the first request of the resumed writer might."""
    original = saving.write_shard

    def stalled(fs, path, components):
        lock = store.writer.held_lock(A)
        lock.lease._stop.set()
        lock.lease._thread.join()
        time.sleep(TTL + 0.1)
        if take_over:
            with pytest.warns(UserWarning, match="took over a stale lock"):
                with SystemStore(root, lease_ttl=TTL).lock(A):
                    pass
        monkeypatch.setattr(saving, "write_shard", original)
        raise then

    monkeypatch.setattr(saving, "write_shard", stalled)


@pytest.mark.parametrize(
    "then",
    [_outage(), FileNotFoundError(2, "No such file or directory", "state_1_0/manifest.json")],
    ids=["outage", "file-removed"],
)
def test_a_writer_taken_over_mid_save_exits_3_whatever_the_store_says_next(
    root, monkeypatch, then
):
    store = SystemStore(root, lease_ttl=TTL)
    population = _population()
    with pytest.raises(LeaseLostError) as err:
        with store.lock(A):
            _stall_mid_save(monkeypatch, store, root, then)
            store.save_state(population, 1, 0)
    assert err.value.__cause__ is then  # what the store said is kept, for --debug
    code, message = classify(err.value)
    assert code == EXIT_LOCKED, message
    assert "lost its lease" in message and "committed nothing" in message, message
    assert SystemStore(root).list_states(A) == []


def test_a_lease_known_lost_wins_over_the_next_outage(root):
    """The heartbeat saw the takeover; the next request (a load, a save) fails like an
    outage: the lost lease is reported, without asking the store again."""
    store = SystemStore(root, lease_ttl=30)
    with pytest.raises(LeaseLostError, match="lost its lease") as err:
        with store.lock(A) as lock:
            store.fs.remove_file(lock.lease.path)  # taken over, the taker since finished
            assert lock.lease.renew() is False and lock.lease.lost
            raise _outage("list VitCpu~digits")
    assert classify(err.value)[0] == EXIT_LOCKED


def test_an_outage_with_the_lease_not_taken_over_stays_an_outage(root, monkeypatch):
    """Stalled past the lease but nobody took over: the outage is the truth (exit 9)."""
    store = SystemStore(root, lease_ttl=TTL)
    outage = _outage()
    with pytest.raises(StoreUnavailableError) as err:
        with store.lock(A):
            _stall_mid_save(monkeypatch, store, root, outage, take_over=False)
            store.save_state(_population(), 1, 0)
    assert err.value is outage
    assert classify(err.value)[0] == EXIT_OS_ERROR
    # And with the lease held (renewed within its ttl), no question is asked of the store.
    with pytest.raises(StoreUnavailableError):
        with store.lock(A) as lock:
            assert lock.held
            raise _outage("list VitCpu~digits")


def test_an_unreadable_store_after_the_stall_stays_an_outage(root, monkeypatch):
    """Stalled and taken over, but the store cannot be read to tell: the outage is reported."""
    store = SystemStore(root, lease_ttl=TTL)
    outage = _outage()

    def unreachable():
        raise _outage("list .lease")

    with pytest.raises(StoreUnavailableError) as err:
        with store.lock(A) as lock:
            _stall_mid_save(monkeypatch, store, root, outage)
            monkeypatch.setattr(lock.lease, "_claims", unreachable)  # this process's only
            store.save_state(_population(), 1, 0)
    assert err.value is outage
