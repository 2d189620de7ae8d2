"""Fenced commits on S3 (moto on 127.0.0.1): a writer whose requests are held in the network
past its lease (a delaying proxy in front of the server) commits nothing after another process
took the agent over, whether its requests were held from its shards on (it never sends its
manifest) or from its manifest PUT on (the store refuses the late PUT: `If-None-Match`)."""

from __future__ import annotations

import threading
import time
import warnings

import pytest
import torch

from munet.system import AgentLockedError, LeaseLostError, Population, SystemStore
from munet.system.fsspec_fs import FsspecFS
from munet.system.integrity import find_damaged
from tests.cluster.delay_proxy import DelayProxy

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

AGENT = "Vit~fenced"
TTL = 2.0
# The writer's requests are held until the test releases them, once the other writer took
# over and committed (well past the held writer's lease); this long at most, so that a test
# failing meanwhile does not hang.
HOLD = 120.0


def _population(value: float) -> Population:
    population = Population(AGENT)
    component = population.new_component("encoderblock_0", {"w": torch.full((4, 4), value)})
    path = population.new_path({"n": 1}, [component], None)
    path.metrics["quality"] = 0.5
    population.add_path(path)
    return population


def _take_lock(store: SystemStore, deadline: float):
    """Enter `store.lock(AGENT)` once the old holder's lease expired (bounded)."""
    while True:
        context = store.lock(AGENT)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # "took over a stale lock"
                return context, context.__enter__()
        except AgentLockedError:
            assert time.monotonic() < deadline, "the delayed writer's lease never expired"
            time.sleep(0.1)


@pytest.mark.parametrize(
    "held_from", [b"components-", b"manifest.json"], ids=["from-shards", "from-manifest"]
)
def test_a_writer_delayed_past_its_lease_commits_nothing_after_the_takeover(
    s3_endpoint, s3_url, held_from
):
    import s3fs

    proxy = DelayProxy(int(s3_endpoint.rsplit(":", 1)[1]))
    root = s3_url.removeprefix("s3://")
    delayed_fs = FsspecFS(s3fs.S3FileSystem(skip_instance_cache=True, endpoint_url=proxy.url))
    writer_a = SystemStore(root, fs=delayed_fs, lease_ttl=TTL)
    outcome: dict[str, object] = {}
    first_committed = threading.Event()

    def run_a() -> None:
        try:
            with writer_a.lock(AGENT):
                population = _population(1.0)
                writer_a.save_state(population, 0, 1)
                first_committed.set()
                proxy.arm(held_from, HOLD)  # from now on A's requests are held
                population.paths[AGENT][0].metrics["quality"] = 0.6
                writer_a.save_state(population, 0, 2, {"by": "A"})
            outcome["a"] = "committed state_0_2"
        except BaseException as err:  # noqa: BLE001 - reported to the test thread
            outcome["a"] = err
        finally:
            first_committed.set()

    thread_a = threading.Thread(target=run_a, daemon=True)
    thread_a.start()
    try:
        assert first_committed.wait(60), "A did not commit its first state"
        deadline = time.monotonic() + 30
        while proxy.triggered_at is None:
            assert time.monotonic() < deadline and thread_a.is_alive(), outcome
            time.sleep(0.02)
        # B takes the agent over once A's lease expired, redoes generation 2 and commits it,
        # all while A's requests are still held.
        writer_b = SystemStore(s3_url, lease_ttl=TTL)
        context, lock_b = _take_lock(writer_b, time.monotonic() + 30)
        try:
            loaded = writer_b.load(AGENT)
            assert (loaded.cycle, loaded.generation) == (0, 1)
            writer_b.save_state(loaded.population, 0, 2, {"by": "B"})
            token_b = lock_b.lease.token
        finally:
            context.__exit__(None, None, None)
        assert proxy.holding, "A's requests were let through before B committed"
        proxy.release()
        thread_a.join(60)
        assert not thread_a.is_alive()
    finally:
        proxy.close()

    # A learnt it lost the lease (exit 3 from the command line), and committed nothing more.
    assert isinstance(outcome["a"], LeaseLostError), outcome
    assert "lost its lease" in str(outcome["a"])
    reader = SystemStore(s3_url)
    states = reader.list_states(AGENT)
    assert [s.name for s in states] == ["state_0_1", "state_0_2"]
    manifest = reader.read_manifest(states[1])
    assert manifest["writer"] == token_b and manifest["config"] == {"by": "B"}
    for state in states:  # whole and checksummed: A's late files changed none of B's
        assert reader.verify_state(state) == 1
    assert find_damaged(reader) == []  # `munet doctor`: history and population files too
    resumed = reader.load(AGENT)  # reads B's history file (each save names its own)
    assert (resumed.generation, resumed.config) == (2, {"by": "B"})


def test_a_manifest_landing_after_the_takeover_is_never_visible(s3_endpoint, s3_url):
    """Writer A's manifest request is held in the network past its lease; B takes the agent
    over and waits until A's manifest has landed before committing anything. The manifest
    lands in a state folder, but the commit pointer (B bumped its epoch when it took the lock)
    never names it: no reader ever sees A's late state, A learns it committed nothing, and
    every state a reader sees verifies. B's next holder removes A's late files."""
    import s3fs

    from munet.system.strays import find_strays

    proxy = DelayProxy(int(s3_endpoint.rsplit(":", 1)[1]))
    root = s3_url.removeprefix("s3://")
    delayed_fs = FsspecFS(s3fs.S3FileSystem(skip_instance_cache=True, endpoint_url=proxy.url))
    writer_a = SystemStore(root, fs=delayed_fs, lease_ttl=TTL)
    outcome: dict[str, object] = {}
    first_committed = threading.Event()
    stop_reading = threading.Event()
    seen: list[tuple[str, object]] = []  # (state, config) every reader load saw
    reader_errors: list[BaseException] = []

    def run_a() -> None:
        try:
            with writer_a.lock(AGENT):
                population = _population(1.0)
                writer_a.save_state(population, 0, 1, {"by": "A"})
                first_committed.set()
                proxy.arm(b"manifest.json", HOLD)  # A's manifest PUT (and all after) held
                population.paths[AGENT][0].metrics["quality"] = 0.6
                writer_a.save_state(population, 0, 2, {"by": "late A"})
            outcome["a"] = "committed state_0_2"
        except BaseException as err:  # noqa: BLE001 - reported to the test thread
            outcome["a"] = err
        finally:
            first_committed.set()

    def read_all_the_time() -> None:
        reader = SystemStore(s3_url)
        while not stop_reading.is_set():
            try:
                for state in reader.list_states(AGENT):
                    seen.append((state.name, reader.read_manifest(state)["config"]))
                    assert reader.verify_state(state) == 1
                loaded = reader.load(AGENT)
                seen.append((loaded.state.name, loaded.config))
            except BaseException as err:  # noqa: BLE001
                reader_errors.append(err)
                return
            time.sleep(0.05)

    thread_a = threading.Thread(target=run_a, daemon=True)
    thread_a.start()
    reader_thread = threading.Thread(target=read_all_the_time, daemon=True)
    try:
        assert first_committed.wait(60), "A did not commit its first state"
        reader_thread.start()
        deadline = time.monotonic() + 30
        while proxy.triggered_at is None:
            assert time.monotonic() < deadline and thread_a.is_alive(), outcome
            time.sleep(0.02)
        writer_b = SystemStore(s3_url, lease_ttl=TTL)
        context, lock_b = _take_lock(writer_b, time.monotonic() + 30)
        try:
            assert proxy.holding, "A's requests were let through before B took over"
            proxy.release()
            thread_a.join(60)  # A's manifest lands, then its pointer write is refused
            assert not thread_a.is_alive()
            late = f"{writer_b.agent_dir(AGENT)}/state_0_2/manifest.json"
            assert writer_b.fs.exists(late)  # A's manifest did land ...
            assert [s.name for s in writer_b.list_states(AGENT)] == ["state_0_1"]  # ... unseen
            loaded = writer_b.load(AGENT)
            assert (loaded.cycle, loaded.generation) == (0, 1)
            writer_b.save_state(loaded.population, 0, 2, {"by": "B"})
            token_b = lock_b.lease.token
        finally:
            context.__exit__(None, None, None)
        time.sleep(0.3)  # a few more reads of B's state
    finally:
        stop_reading.set()
        proxy.close()
        reader_thread.join(60)

    assert isinstance(outcome["a"], LeaseLostError), outcome
    assert "commit pointer" in str(outcome["a"]) and "took the agent over" in str(outcome["a"])
    assert not reader_errors, reader_errors
    assert seen and ("state_0_2", {"by": "late A"}) not in seen
    assert all(config in ({"by": "A"}, {"by": "B"}) for _, config in seen), seen
    reader = SystemStore(s3_url)
    states = reader.list_states(AGENT)
    assert [s.name for s in states] == ["state_0_1", "state_0_2"]
    manifest = reader.read_manifest(states[1])
    assert manifest["writer"] == token_b and manifest["config"] == {"by": "B"}
    for state in states:
        assert reader.verify_state(state) == 1
    assert find_damaged(reader) == []
    # B cleared the uncommitted state_0_2 folder (A's late files) before writing its own.
    assert find_strays(reader, AGENT) == []
    assert reader.load(AGENT).config == {"by": "B"}
