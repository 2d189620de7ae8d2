"""munet.lifeline: a child that called die_with_parent ends when its parent dies (issue 25)."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
ENV = dict(os.environ, PYTHONPATH=str(REPO))

# The parent starts a child that arms the lifeline (with prctl, or the polling fallback),
# prints the child's pid, then sleeps until it is killed.
PARENT = """
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", '''
import os, sys, time
import munet.lifeline as lifeline
if sys.argv[1] == "watchdog":
    lifeline._PRCTL = None
lifeline.die_with_parent(int(sys.argv[2]))
print("armed", flush=True)
time.sleep(120)
''', sys.argv[1], str(os.getpid())], stdout=subprocess.PIPE, text=True)
assert child.stdout.readline().strip() == "armed"
print(child.pid, flush=True)
time.sleep(120)
"""


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "State:\tZ" not in status


def test_a_child_whose_parent_is_already_gone_exits_at_once():
    code = "import munet.lifeline as l; l.die_with_parent(os.getppid() + 1); print('ran')"
    proc = subprocess.run(
        [sys.executable, "-c", "import os; " + code], env=ENV, capture_output=True, text=True
    )
    assert proc.returncode == 1 and "ran" not in proc.stdout
    # The module a spawned worker imports first pulls in nothing heavy.
    light = subprocess.run(
        [sys.executable, "-c", "import sys, munet.lifeline; print('torch' in sys.modules)"],
        env=ENV,
        capture_output=True,
        text=True,
    )
    assert light.stdout.strip() == "False"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("mode", ["prctl", "watchdog"])
def test_a_child_dies_with_its_killed_parent(mode):
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, mode], env=ENV, stdout=subprocess.PIPE, text=True
    )
    try:
        child = int(parent.stdout.readline())
        assert _alive(child)
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        # It dies at once (prctl) or at the watchdog's next poll (0.2 s); the 60 s are only so
        # that a child that never dies fails the test instead of hanging it.
        deadline = time.monotonic() + 60
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.02)
        survived = _alive(child)
        if survived:
            os.kill(child, signal.SIGKILL)
        assert not survived, f"the child outlived its parent by 60 s ({mode})"
    finally:
        parent.kill()
        parent.stdout.close()
