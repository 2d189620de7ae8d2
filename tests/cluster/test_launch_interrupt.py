"""Ctrl-C at any moment of `munet launch`'s start-up (torch and Ray loading, ray.init, the
agents starting) exits 130 and keeps every committed state: a SIGINT to the launch's process
group, as a terminal sends it, at several instants."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("ray")

from munet.system import SystemStore  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

REPO = Path(__file__).resolve().parents[2]
# Seconds after the start: while torch loads, while Ray loads and starts, as the agents start.
INSTANTS = [2.0, 4.0, 7.0, 11.0, 16.0]


def _sigint_default() -> None:
    # Started from a CI job or `nohup`, the test may run with SIGINT ignored; a terminal's
    # launch has it at its default.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_at_any_moment_of_start_up_exits_130_and_keeps_committed_states(
    tmp_path, tiny_config, tiny_overrides
):
    from munet.agents.root import create_root_model

    state_dir = tmp_path / "state"
    root = create_root_model(tiny_config, state_dir, "random_init")
    sets = [arg for o in tiny_overrides for arg in ("--set", o)]
    # Enough cycles that no launch ends by itself before its Ctrl-C (a tiny cycle takes well
    # under a second on a quiet machine: 50 of them could end before the 16 s instant).
    command = [sys.executable, "-m", "munet", "launch", "--agent", "VitCpu", "--tasks",
               "digits", "--cycles", "100000", "-d", str(state_dir), "--num-cpus", "1", *sets]
    env = {**os.environ, "PYTHONPATH": str(REPO), "RAY_USAGE_STATS_ENABLED": "0"}
    outcomes = []
    for instant in INSTANTS:
        launch = subprocess.Popen(command, env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, start_new_session=True,
                                  preexec_fn=_sigint_default)
        try:
            time.sleep(instant)
            if launch.poll() is None:
                os.killpg(launch.pid, signal.SIGINT)  # Ctrl-C: the whole process group
            _, stderr = launch.communicate(timeout=180)
        finally:
            if launch.poll() is None:
                os.killpg(launch.pid, signal.SIGKILL)
                launch.wait(30)
        outcomes.append((instant, launch.returncode, stderr.strip().splitlines()[-3:]))
        store = SystemStore(state_dir)
        for agent_id in store.agent_ids():
            for state in store.list_states(agent_id):
                store.verify_state(state)  # whole and checksummed
        assert store.latest_state(root.agent_id) is not None
    assert all(code == 130 for _, code, _ in outcomes), outcomes


def test_sigterm_to_a_running_launch_stops_its_agents_and_exits_143(
    tmp_path, tiny_config, tiny_overrides
):
    """A scheduler's stop (SIGTERM to the driver) is taken as Ctrl-C once Ray has started too:
    ray.init's own SIGTERM handler (an immediate sys.exit) must not replace munet's."""
    from munet.agents.root import create_root_model

    state_dir = tmp_path / "state"
    create_root_model(tiny_config, state_dir, "random_init")
    sets = [arg for o in tiny_overrides for arg in ("--set", o)]
    command = [sys.executable, "-m", "munet", "launch", "--agent", "VitCpu", "--tasks",
               "digits", "--cycles", "100000", "-d", str(state_dir), "--num-cpus", "1", *sets]
    env = {**os.environ, "PYTHONPATH": str(REPO), "RAY_USAGE_STATS_ENABLED": "0"}
    launch = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, start_new_session=True)
    try:
        lines = []
        deadline = time.monotonic() + 180
        for line in launch.stdout:  # until the agent has committed a generation or a cycle
            lines.append(line)
            if line.startswith("[VitCpu~digits] cycle") or time.monotonic() > deadline:
                break
        assert launch.poll() is None, lines
        launch.send_signal(signal.SIGTERM)  # the driver only, as a scheduler's stop
        stdout, stderr = launch.communicate(timeout=180)
    finally:
        if launch.poll() is None:
            os.killpg(launch.pid, signal.SIGKILL)
            launch.wait(30)
    assert launch.returncode == 143, (stdout[-2000:], stderr[-2000:])
    assert "interrupted: stopping the agents" in stdout + stderr
    store = SystemStore(state_dir)
    for agent_id in store.agent_ids():
        for state in store.list_states(agent_id):
            store.verify_state(state)
