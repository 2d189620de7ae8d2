"""A launch on a Ray cluster of three nodes (a head and two workers of one CPU each, all on
127.0.0.1: munet.cluster.local_cluster) against one store on the S3 test server, that loses a
worker node while its agent runs: the launch finishes, the agent resumes on a surviving node
from its last committed state, no committed state is lost, no lease is left, every state
verifies."""

from __future__ import annotations

import _thread
import threading
import time

import psutil
import pytest

pytest.importorskip("ray")

from munet.system import SystemStore  # noqa: E402
from munet.system.lease import LEASE_DIR  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

TASKS = ["synth/shape", "synth/count", "digits"]
CYCLES = 3
# The whole test: past it the launch is interrupted (as Ctrl-C) and the test fails.
DEADLINE_S = 420
LOOPBACK = {"127.0.0.1", "::ffff:127.0.0.1", "::1"}


def _listening_addresses() -> set[str]:
    addresses = set()
    for process in psutil.Process().children(recursive=True):
        try:
            for conn in process.net_connections(kind="inet"):
                if conn.status == psutil.CONN_LISTEN:
                    addresses.add(conn.laddr.ip)
        except psutil.Error:
            continue
    return addresses


def _wait_gone(pid: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
        assert time.monotonic() < deadline, f"the lost node's worker {pid} still runs"
        time.sleep(0.1)


def test_a_launch_survives_the_loss_of_a_node(s3_url, tiny_config, tiny_overrides):
    from munet.agents.root import create_root_model
    from munet.cluster import AgentSpec, launch
    from munet.cluster.local_cluster import LocalCluster

    create_root_model(tiny_config, s3_url, "random_init")
    # Five generations a cycle: the node goes while its agent is mid-cycle, with a cycle and a
    # half left to run.
    specs = [AgentSpec("VitCpu", task, overrides=("num_samples_per_cycle=6",)) for task in TASKS]
    agents = [s.agent_id for s in specs]
    store = SystemStore(s3_url)
    lost: dict[str, dict] = {}  # per agent of the lost node: its commits when the node went

    with LocalCluster(workers=2, cpus_per_node=1) as cluster:
        nodes = {cluster.head_id, *cluster.worker_ids}
        addresses = _listening_addresses()

        def on_event(event):
            # An agent on a worker node has finished a cycle and committed a generation of the
            # next: that node goes, now.
            if (lost or event["kind"] != "generation" or event["cycle"] < 1
                    or event["node_id"] not in cluster.worker_ids):
                return
            victim = event["node_id"]
            on_victim = {e["agent_id"]: e["pid"] for e in events_seen
                         if e["kind"] == "start" and e["node_id"] == victim}
            cluster.remove_worker(victim)
            for agent_id, pid in on_victim.items():
                _wait_gone(pid, timeout=30)  # nothing of it commits after the snapshot
                lost[agent_id] = {
                    "node": victim,
                    "states": store.list_states(agent_id),
                    "history": store.read_path_history(agent_id),
                }

        events_seen: list[dict] = []

        def record(event):
            events_seen.append(event)
            on_event(event)

        watchdog = threading.Timer(DEADLINE_S, _thread.interrupt_main)
        watchdog.start()
        try:
            result = launch(specs, s3_url, CYCLES, overrides=tiny_overrides,
                            ray_address=cluster.address, lease_ttl=3, max_retries=2,
                            stop_timeout=20, echo=lambda line: None, on_event=record)
        finally:
            watchdog.cancel()
        addresses |= _listening_addresses()

    assert not result.interrupted, f"the launch ran past {DEADLINE_S}s"
    assert not result.failures, result.failures
    assert addresses and addresses <= LOOPBACK, addresses
    assert lost, "no agent ran on a worker node"
    starts = [e for e in result.events if e["kind"] == "start"]
    # Spread: the first attempts ran on all three nodes (one CPU each, three agents).
    assert {e["node_id"] for e in starts if e["agent_id"] not in lost or e["state"] is None} \
        == nodes
    assert set(result.summaries) == set(agents)
    assert all(s["cycle"] == CYCLES for s in result.summaries.values())
    for agent_id, before in lost.items():
        runs = [e for e in starts if e["agent_id"] == agent_id]
        assert len(runs) == 2, runs
        # Resumed on a surviving node from the last state it had committed.
        assert runs[1]["node_id"] in nodes - {before["node"]}
        assert any(s.end_of_cycle for s in before["states"]), before["states"]
        assert not before["states"][-1].end_of_cycle, before["states"]  # went mid-cycle
        assert runs[1]["state"] == before["states"][-1].name
        after = store.list_states(agent_id)
        # No committed state lost: every end-of-cycle state is kept as it was (the same
        # manifest), and the history then is the start of the history now.
        kept = {(s.name, s.manifest_sha256) for s in after}
        assert all((s.name, s.manifest_sha256) in kept for s in before["states"] if s.end_of_cycle)
        assert before["history"], before
        # A later row may add columns (a metric first recorded later): the CSV then pads
        # the earlier rows with empty cells. Every recorded value is kept.
        final = [_filled(row) for row in store.read_path_history(agent_id)]
        assert final[: len(before["history"])] == [_filled(row) for row in before["history"]]
    for agent_id in agents:
        states = store.list_states(agent_id)
        assert states[-1].cycle == CYCLES and states[-1].end_of_cycle, (agent_id, states)
        for state in states:
            store.verify_state(state)
        # No lease left: the lost node's lease was taken over and every holder released.
        lease_dir = store.fs.join(store.agent_dir(agent_id), LEASE_DIR)
        assert not [n for n in store.fs.listdir(lease_dir) if n.endswith(".json")], agent_id


def _filled(row: dict[str, str]) -> dict[str, str]:
    """A history row without its empty cells."""
    return {key: value for key, value in row.items() if value != ""}
