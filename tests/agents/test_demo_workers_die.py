"""The demo's worker processes die with the demo at any instant, start-up included (issue 25):
a SIGKILLed demo leaves no worker training, committing states or holding an agent's lock."""

import contextlib
import os
import re
import select
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from munet.system import SystemStore

from .conftest import TINY_OVERRIDES

REPO = Path(__file__).resolve().parents[2]
SETS = [arg for item in TINY_OVERRIDES for arg in ("--set", item)]
AGENTS = ("VitCpu~digits", "VitCpu~synth~color")


def _tagged_processes(tag: str) -> list[int]:
    """Live processes whose environment holds `tag` (the demo and its workers)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            status = (entry / "status").read_text()
        except OSError:
            continue  # Gone, or not ours.
        if tag.encode() in environ and "State:\tZ" not in status:
            found.append(int(entry.name))
    return found


def _exiting(pid: int) -> bool:
    """Whether `pid` is a killed process still on its way out: its first thread has exited
    (it shows as a zombie, its environment unreadable) but another thread has not, and holds
    the process's descriptors (its pipes, its agent's lock) until it does."""
    return any(state not in "Z?" for state in _thread_states(pid))


def _demo_processes(tag: str, seen: set[int]) -> list[int]:
    """The demo's processes not yet gone: those with `tag`, and those seen with it before
    (added to `seen`) that are still exiting."""
    tagged = _tagged_processes(tag)
    seen.update(tagged)
    return sorted(set(tagged) | {pid for pid in seen if _exiting(pid)})


def _describe(pid: int) -> str:
    """A survivor as a failure should name it: command line, state and parent."""
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        status = dict(
            line.split(":\t", 1)
            for line in Path(f"/proc/{pid}/status").read_text().splitlines()
            if ":\t" in line
        )
        stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        uptime = float(Path("/proc/uptime").read_text().split()[0])
    except OSError:
        return f"{pid} (gone)"
    tick = os.sysconf("SC_CLK_TCK")
    # Fields 14, 15 and 22 of stat (utime, stime, start time), counted after the command name.
    cpu, age = (int(stat[11]) + int(stat[12])) / tick, uptime - int(stat[19]) / tick
    described = (
        f"{pid} [{status.get('State', '?')}, parent {status.get('PPid', '?')}, threads "
        f"{_thread_states(pid)}, {age:.1f} s old, {cpu:.2f} s of CPU]: {command[:200]}"
    )
    tracker_fd = re.search(r"resource_tracker import main;main\((\d+)\)", command)
    if tracker_fd:  # It waits for the end of its pipe: name who still holds the other end.
        described += f"; its pipe is held by {_pipe_holders(pid, int(tracker_fd.group(1)))}"
    return described


def _thread_states(pid: int) -> str:
    """The one-letter state of each thread of `pid` (D: waiting on the disk, uninterruptibly)."""
    states = []
    for thread in sorted(Path(f"/proc/{pid}/task").glob("*")):
        try:
            states.append(re.search(r"State:\t(\S)", (thread / "status").read_text()).group(1))
        except (OSError, AttributeError):
            states.append("?")
    return "".join(states) or "?"


def _descriptors(process: Path) -> set[str]:
    """What the open descriptors of `process` point at (those that close while read are
    skipped: the listing's own, among others)."""
    found = set()
    try:
        links = list((process / "fd").iterdir())
    except OSError:
        return found
    for link in links:
        try:
            found.add(os.readlink(link))
        except OSError:
            continue
    return found


def _pipe_holders(pid: int, fd: int) -> list[str]:
    """Every other process with an open descriptor on the pipe `pid` reads at `fd`, with its
    state and thread count. Each thread's descriptors are read: those of a process whose first
    thread has exited show under its other threads only."""
    try:
        pipe = os.readlink(f"/proc/{pid}/fd/{fd}")
    except OSError:
        return ["(unreadable)"]
    holders = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == pid:
            continue
        try:
            threads = list((entry / "task").iterdir())
        except OSError:
            continue
        if not any(pipe in _descriptors(thread) for thread in threads):
            continue
        try:
            status = (entry / "status").read_text()
            state = re.search(r"State:\t(.*)", status).group(1)
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()[:120]
        except OSError:
            continue
        holders.append(f"{entry.name} [{state}, {len(threads)} threads]: {command}")
    return holders


def _committed(state: Path) -> list[str]:
    return sorted(str(p.relative_to(state)) for p in state.glob("*/state_*"))


def _read_until(process: subprocess.Popen, marker: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    seen = ""
    while time.monotonic() < deadline and process.poll() is None:
        ready, _, _ = select.select([process.stdout], [], [], 0.1)
        if ready:
            seen += os.read(process.stdout.fileno(), 65536).decode(errors="replace")
            if marker in seen:
                return
    pytest.fail(f"the demo never printed {marker!r}; it printed: {seen[-2000:]}")


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("delay", [0.0, 0.4, 1.2, 2.5])
def test_killed_demo_leaves_no_worker_behind(tmp_path, delay):
    """Kill the demo `delay` seconds after its pool starts: while workers spawn, import torch,
    or run their first agent. Within a few seconds no worker is left, no state appears after
    the kill, and every agent's lock is free."""
    tag = f"MUNET_LIFELINE_TEST={uuid.uuid4().hex}"
    env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1")
    env[tag.split("=")[0]] = tag.split("=")[1]
    state = tmp_path / "demo"
    demo = [sys.executable, "-m", "munet", "demo", "-d", str(state), "--cycles", "2"]
    demo += ["--task", "digits", "--task", "synth/color", "--workers", "2"]
    demo += ["--multipath-tasks", "0", *SETS]
    process = subprocess.Popen(demo, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        _read_until(process, "running 2 agents", timeout=120)
        time.sleep(delay)
        seen = set(_tagged_processes(tag))  # Each is read again after the kill, dying or not.
        process.send_signal(signal.SIGKILL)
        assert process.wait() == -signal.SIGKILL
        at_kill = _committed(state)
        # A killed worker is gone once its last thread has exited, which a thread waiting on
        # the disk (a state being written) can delay; multiprocessing's resource tracker
        # leaves once every holder of its pipe has. So the wait is for all of them, and long
        # enough for a loaded machine's disk: it ends as soon as none is left.
        deadline = time.monotonic() + 30
        while _demo_processes(tag, seen) and time.monotonic() < deadline:
            time.sleep(0.05)
        survivors = _demo_processes(tag, seen)
        described = [_describe(pid) for pid in survivors]
    finally:
        process.kill()
        process.stdout.close()
    for pid in survivors:  # Clean up before failing: these are this test's processes.
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    assert not survivors, f"processes outlived the killed demo: {described}"
    assert _committed(state) == at_kill, "a state was committed after the demo was killed"
    store = SystemStore(str(state))
    for agent_id in AGENTS:
        with store.lock(agent_id):  # Raises AgentLockedError while a worker holds it.
            pass
