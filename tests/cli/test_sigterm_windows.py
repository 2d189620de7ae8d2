"""SIGTERM to a real `munet run` at several moments (issue 52 item 3): while a state is written
or retired (a `.tmp-` folder seen in the agent's folder) and while it trains (just after a
commit): exit 143 with its one line, no `.tmp-` folder left, and `munet doctor` finds every
state whole. The windows between single filesystem steps are covered one by one in
tests/system/test_stop_signals.py; this runs the command itself."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from munet.cli.errors import EXIT_TERMINATED

from ..agents.conftest import TINY_OVERRIDES

REPO = Path(__file__).resolve().parents[2]
SETS = [arg for item in TINY_OVERRIDES for arg in ("--set", item)]
MUNET = [sys.executable, "-m", "munet"]
AGENT = "VitCpu~digits"


def _env():
    return dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS="1")


def _entries(agent_dir: Path) -> set[str]:
    try:
        return {entry.name for entry in os.scandir(agent_dir)}
    except FileNotFoundError:
        return set()


def _wait_for(process, agent_dir: Path, moment: str) -> bool:
    """Poll the agent's folder until `moment` comes; whether it was seen before the end."""
    before = {n for n in _entries(agent_dir) if n.startswith("state_")}
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and process.poll() is None:
        names = _entries(agent_dir)
        if moment == "saving" and any(n.startswith(".tmp-") for n in names):
            return True
        if moment == "training" and {n for n in names if n.startswith("state_")} - before:
            time.sleep(0.3)  # into the next generation's training
            return True
        time.sleep(0.0005)
    return False


@pytest.mark.slow  # a root, three `munet run` and three `munet doctor` processes
def test_sigterm_at_any_moment_of_a_run_leaves_every_state_whole(tmp_path):
    state = tmp_path / "state"
    subprocess.run(
        [*MUNET, "root", "--agent", "VitCpu", "-d", str(state), *SETS, "--root", "random_init"],
        env=_env(), check=True, capture_output=True,
    )  # fmt: skip
    agent_dir = state / AGENT
    seen = []
    for moment in ("saving", "training", "saving"):
        process = subprocess.Popen(
            [*MUNET, "run", "--agent", "VitCpu", "--task", "digits", "--cycles", "50"]
            + ["-d", str(state), *SETS, "-q"],
            env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        seen.append(_wait_for(process, agent_dir, moment))
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=120)
        assert process.returncode == EXIT_TERMINATED, (moment, out, err)
        assert "munet: error: terminated (SIGTERM)" in err and "Traceback" not in err, err
        left = [n for n in _entries(agent_dir) if n.startswith(".tmp-")]
        assert not left, (moment, left)
        doctor = subprocess.run(
            [*MUNET, "doctor", "-d", str(state)], env=_env(), capture_output=True, text=True
        )
        assert doctor.returncode == 0, (moment, doctor.stdout, doctor.stderr)
        assert doctor.stdout.strip().endswith("every committed state is whole"), doctor.stdout
    assert seen[1]  # training is seen (a save, a few milliseconds, may be missed)
