"""`munet launch` on a local Ray (2 CPUs, 127.0.0.1 only): three tiny VitCpu agents for two
cycles on a local dir (the command line) and on the S3 server, with one agent's worker
SIGKILLed mid-cycle and resumed by Ray's retry, then stopped by Ctrl-C."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

import pytest

pytest.importorskip("ray")

from munet.system import SystemStore  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

TASKS = ["synth/shape", "synth/count", "digits"]


def _verify(state_dir: str, agents: list[str], cycles: int) -> None:
    store = SystemStore(state_dir)
    for agent_id in agents:
        states = store.list_states(agent_id)
        assert states[-1].cycle == cycles and states[-1].end_of_cycle, (agent_id, states)
        for state in states:
            store.verify_state(state)


def _launch_command(state_dir, cycles, overrides):
    # Architecture overrides are the singlepath preset's (multipath hparams differ).
    shared = [o for o in overrides if "num_layers" not in o and "ds_image_size" not in o]
    own = [o for o in overrides if o not in shared]
    sets = [arg for o in shared for arg in ("--set", o)]
    agent_sets = [arg for o in own for arg in ("--agent-set", "VitCpu", o)]
    return [sys.executable, "-m", "munet", "launch", "--agent", "VitCpu", "--tasks",
            ",".join(TASKS), "--agent", "MultiVitCpu", "--tasks", "synth/shape",
            "--cycles", str(cycles), "-d", state_dir, "--num-cpus", "2",
            "--root", "random_init", *sets, *agent_sets]


def test_cli_launch_of_mixed_presets_on_a_local_dir(tmp_path, tiny_overrides):
    state_dir = str(tmp_path / "state")
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    done = subprocess.run(_launch_command(state_dir, 2, tiny_overrides), env=env,
                          capture_output=True, text=True, timeout=540)
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    agents = [f"VitCpu~{t.replace('/', '~')}" for t in TASKS] + ["MultiVitCpu~synth~shape"]
    # The multipath agent starts once its singlepath agent and another one to draw a subpath
    # from (the random_init root is not one by default) published a cycle.
    assert re.search(r"\[MultiVitCpu~synth~shape\] starts once VitCpu~synth~shape and one of "
                     r"VitCpu~[^\n]+ has finished a cycle", out), out
    started = out.index("[MultiVitCpu~synth~shape] started")
    assert out.index("[VitCpu~synth~shape] cycle 1/2 done") < started
    others = [f"[VitCpu~{t.replace('/', '~')}] cycle 1/2 done" for t in TASKS if t != "synth/shape"]
    assert min(out.index(o) for o in others) < started
    for agent_id in agents:
        # One line per finished generation (one per cycle here) and per cycle, per agent.
        # With totals (issue 24): `cycle 1/2 gen 1/2`.
        assert len(re.findall(rf"\[{agent_id}\] cycle \d/2 gen 1/\d done", out)) == 2, out
        assert f"[{agent_id}] cycle 1/2 done" in out and f"[{agent_id}] cycle 2/2 done" in out
        assert f"[{agent_id}] finished: 2 cycles" in out
    assert "avg score" in out  # the leaderboard
    # Ray's own start-up notices stay out of munet's output (issue 24).
    assert "WARNING" not in done.stderr and "Started a local Ray" not in done.stderr, done.stderr
    _verify(state_dir, agents, 2)


@pytest.fixture(scope="module")
def local_ray():
    import ray

    from munet.cluster import init_ray

    # Started with SIGINT ignored, as under a CI job or `nohup`: the Ray processes inherit the
    # ignore, which once made Ray's cancel a no-op (the Ctrl-C test below covers it).
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        started = init_ray(num_cpus=2)
    finally:
        # As a plain int: CPython 3.11 would store the enum SIG_IGN as a Python handler and
        # call it on the next SIGINT ("'Handlers' object is not callable").
        signal.signal(signal.SIGINT, int(previous) if isinstance(previous, int) else previous)
    yield ray
    if started:
        ray.shutdown()


def _listening_addresses() -> set[str]:
    import psutil  # shipped with ray

    addresses = set()
    for process in psutil.Process().children(recursive=True):
        try:
            for conn in process.net_connections(kind="inet"):
                if conn.status == psutil.CONN_LISTEN:
                    addresses.add(conn.laddr.ip)
        except psutil.Error:
            continue
    return addresses


def test_ray_workers_take_sigint_back_before_their_first_task(local_ray):
    """The workers of a Ray started with SIGINT ignored (local_ray) run munet's setup hook: a
    callable SIGINT handler before any task code, so a cancel that lands while Ray sets up a
    task raises KeyboardInterrupt instead of failing it ("'Handlers' object is not callable")."""

    @local_ray.remote
    def sigint_handler_is_callable() -> bool:
        import signal

        return callable(signal.getsignal(signal.SIGINT))

    assert local_ray.get(sigint_handler_is_callable.remote(), timeout=120)


def test_launch_on_s3_survives_a_killed_worker(local_ray, s3_url, tiny_config, tiny_overrides):
    from munet.agents.root import create_root_model
    from munet.cluster import AgentSpec, launch

    create_root_model(tiny_config, s3_url, "random_init")
    # The victim runs more generations, so the driver sees it mid-cycle in time to kill it.
    specs = [AgentSpec("VitCpu", TASKS[0], overrides=("num_samples_per_cycle=4",))]
    specs += [AgentSpec("VitCpu", task) for task in TASKS[1:]]
    victim = specs[0].agent_id
    killed: list[int] = []
    addresses: set[str] = set()

    def runs_victim(pid: int) -> bool:
        """Whether that worker still runs the victim's task (Ray reuses workers for other
        tasks, and names a busy worker's process after its task)."""
        import psutil

        try:
            return psutil.Process(pid).name() == f"ray::munet:{victim}"
        except psutil.Error:
            return False

    def on_event(event):
        if event["agent_id"] != victim or event["kind"] != "generation" or killed:
            return
        if runs_victim(event["pid"]):
            addresses.update(_listening_addresses())
            os.kill(event["pid"], signal.SIGKILL)
            killed.append(event["pid"])

    lines: list[str] = []
    result = launch(specs, s3_url, 2, overrides=tiny_overrides, lease_ttl=3, max_retries=2,
                    env_names=["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"],
                    echo=lines.append, on_event=on_event)
    assert not result.failures, (result.failures, lines)
    assert killed
    assert addresses and all(a in ("127.0.0.1", "::ffff:127.0.0.1", "::1") for a in addresses)
    starts = [e for e in result.events if e["agent_id"] == victim and e["kind"] == "start"]
    assert len(starts) == 2 and starts[0]["state"] is None
    assert starts[1]["state"] is not None and starts[1]["pid"] != killed[0]  # resumed
    assert set(result.summaries) == {s.agent_id for s in specs}
    assert all(s["cycle"] == 2 for s in result.summaries.values())
    _verify(s3_url, [s.agent_id for s in specs], 2)
    assert {row["agent_id"] for row in result.rows} >= {s.agent_id for s in specs}

    # Ctrl-C (in the driver) while the agents run cycle 3: they stop, keep their commits and
    # free their leases at once (no waiting for an expiry).
    def interrupt(event):
        if event["kind"] == "generation" and not interrupted:
            interrupted.append(event)
            raise KeyboardInterrupt  # once: a second Ctrl-C would mean "stop waiting"

    interrupted: list[dict] = []

    lines.clear()
    result = launch(specs, s3_url, 3, overrides=tiny_overrides, lease_ttl=60,
                    env_names=["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"],
                    echo=lines.append, on_event=interrupt, stop_timeout=120)
    assert result.interrupted
    assert "interrupted: stopping the agents (their committed states are kept) ..." in lines
    assert any("avg score" in line for line in lines)  # the leaderboard still comes
    # Stopped by the cancel's interrupt or, at their next commit, by the launch's stop flag;
    # never force-killed (stop_timeout).
    assert set(result.failures.values()) <= {"stopped (interrupted)"}, result.failures
    store = SystemStore(s3_url, lease_ttl=60)
    for spec in specs:
        with store.lock(spec.agent_id):  # free now, although the lease ttl is 60 s
            pass
        # Committed work intact: cycle 2's end, and whatever of cycle 3 was committed.
        assert store.latest_state(spec.agent_id, end_of_cycle=True).cycle >= 2
        for state in store.list_states(spec.agent_id):
            store.verify_state(state)


def test_a_launch_of_an_agent_another_process_runs_is_refused_naming_the_holder(
    local_ray, s3_url, tiny_config, tiny_overrides
):
    from munet.agents.root import create_root_model
    from munet.cluster import AgentSpec, launch

    create_root_model(tiny_config, s3_url, "random_init")
    spec = AgentSpec("VitCpu", "digits")
    store = SystemStore(s3_url, lease_ttl=30)
    env_names = ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"]
    lines: list[str] = []
    # This process runs the agent (it holds its lease, renewed by a heartbeat): a launch of the
    # same agent is refused at once, naming the holder, and writes nothing.
    with store.lock(spec.agent_id):
        result = launch([spec], s3_url, 1, overrides=tiny_overrides, lease_ttl=30,
                        max_retries=0, env_names=env_names, echo=lines.append)
    error = result.failures[spec.agent_id]
    assert error.startswith("AgentLockedError: ") and "is already running" in error, error
    assert f"pid {os.getpid()} on host" in error
    from munet.cli.launch import launch_exit_code
    from munet.system import AgentLockedError

    assert isinstance(result.failure_errors[spec.agent_id], AgentLockedError)
    assert launch_exit_code(result) == 3  # `munet launch` exits 3, as `munet run`
    assert any(line.startswith(f"[{spec.agent_id}] FAILED: AgentLockedError") for line in lines)
    assert not store.list_states(spec.agent_id)
    # Once the holder is gone, the same launch runs.
    result = launch([spec], s3_url, 1, overrides=tiny_overrides, lease_ttl=30,
                    env_names=env_names, echo=lines.append)
    assert not result.failures, (result.failures, lines)
    _verify(s3_url, [spec.agent_id], 1)


def test_each_agent_task_runs_in_a_fresh_worker_process(local_ray, tmp_path, tiny_config,
                                                         tiny_overrides):
    # A stop interrupts a task wherever it is, an import included; a reused worker kept
    # the half-imported modules and the next agent on it failed (aiohttp.http_exceptions).
    from munet.agents.root import create_root_model
    from munet.cluster import AgentSpec, launch

    state_dir = str(tmp_path / "state")
    create_root_model(tiny_config, state_dir, "random_init")
    spec = AgentSpec("VitCpu", "synth/shape")
    pids: list[int] = []

    def record(event):
        if event["kind"] == "start":
            pids.append(event["pid"])

    for cycles in (1, 2):  # the second launch resumes the first's state
        result = launch([spec], state_dir, cycles, overrides=tiny_overrides,
                        echo=lambda line: None, on_event=record)
        assert not result.failures, result.failures
    assert len(pids) == 2 and pids[0] != pids[1], pids
    _verify(state_dir, [spec.agent_id], 2)


def test_the_stop_flag_interrupts_an_agent_between_its_commits(local_ray, monkeypatch):
    """Ctrl-C's flag reaches an agent that is training, not only one at a commit: the task
    interrupts it as Ctrl-C would (no ray.cancel), and reports it stopped."""
    import threading
    import time

    from munet.cluster import agent_task
    from munet.cluster.worker import AgentStopped

    started = threading.Event()

    def training_without_commits(*args):
        started.set()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # Python steps, as training runs them
            time.sleep(0.01)
        return {"not": "interrupted"}

    monkeypatch.setattr(agent_task, "run_agent", training_without_commits)
    flag = local_ray.remote(num_cpus=0)(agent_task.StopFlag).remote()

    def press_ctrl_c():
        started.wait(30)
        local_ray.get(flag.set.remote())

    presser = threading.Thread(target=press_ctrl_c, daemon=True)
    presser.start()
    with pytest.raises(AgentStopped, match="VitCpu on digits: cancelled while running"):
        agent_task.task_body("VitCpu", "digits", "unused", 1, [], None, "tag", None, flag)
    presser.join(30)
    # A flag already up when the task starts: the agent never starts.
    started.clear()
    with pytest.raises(AgentStopped, match="cancelled before it started"):
        agent_task.task_body("VitCpu", "digits", "unused", 1, [], None, "tag", None, flag)
    assert not started.is_set()
