"""The per-agent lock: one process per agent, stale locks of killed processes taken over."""

import json
import os
import pathlib
import signal
import subprocess
import sys

import pytest

from munet.system import AgentLockedError, SystemStore

A = "VitT3~cifar10"


def test_second_lock_in_the_same_process_is_refused(tmp_path):
    store = SystemStore(str(tmp_path))
    with store.lock(A) as lock:
        owner = json.loads(pathlib.Path(lock.path).read_text())
        assert owner["pid"] == os.getpid()
        with pytest.raises(
            AgentLockedError, match=rf"agent '{A}' is already running.*pid {os.getpid()}"
        ):
            with SystemStore(str(tmp_path)).lock(A):
                pass
        with SystemStore(str(tmp_path)).lock("VitT3~svhn"):  # other agents are free
            pass
    with store.lock(A) as again:  # released on exit
        assert again.took_over is None


def test_second_process_on_the_same_agent_is_refused(tmp_path, workers):
    store = SystemStore(str(tmp_path))
    with store.lock(A):
        process, status = workers.start("hold-lock", str(tmp_path), "--agent", A, "--seconds", "0")
        process.join(120)
        (line,) = workers.lines(status)
        assert line.startswith("error AgentLockedError")
        assert f"agent '{A}' is already running" in line and f"pid {os.getpid()}" in line
        assert process.exitcode != 0


def test_stale_lock_of_a_killed_process_is_taken_over(tmp_path, workers):
    process, status = workers.start("hold-lock", str(tmp_path), "--agent", A, "--seconds", "600")
    workers.wait_for(status, "locked")
    with pytest.raises(AgentLockedError, match=f"pid {process.pid}"):
        with SystemStore(str(tmp_path)).lock(A):
            pass
    os.kill(process.pid, signal.SIGKILL)
    process.join(30)
    with pytest.warns(UserWarning, match=f"stale lock left by pid {process.pid}"):
        with SystemStore(str(tmp_path)).lock(A) as lock:
            assert lock.took_over["pid"] == process.pid


@pytest.mark.slow
def test_refusal_message_from_a_fresh_interpreter(tmp_path):
    """The same refusal, from a separately started Python (no shared forkserver)."""
    store = SystemStore(str(tmp_path))
    script = os.path.join(os.path.dirname(__file__), "workers.py")
    with store.lock(A):
        result = subprocess.run(
            [sys.executable, script, "hold-lock", str(tmp_path), "--agent", A, "--seconds", "0"],
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert result.returncode != 0
    assert f"AgentLockedError: agent '{A}' is already running" in result.stderr


def test_fsspec_storage_uses_a_lease(tmp_path):
    """On fsspec storage the lock is a lease (its protocol is tested in test_lease.py)."""
    import fsspec

    fsspec.filesystem("memory").store.clear()
    store = SystemStore(f"memory://locks-{tmp_path.name}")
    with store.lock(A) as lock:
        assert lock.lease is not None and lock.held
        with pytest.raises(AgentLockedError, match=f"pid {os.getpid()}"):
            with store.lock(A):
                pass
    assert not lock.held


@pytest.mark.parametrize("cut_after", ["_acquire_flock", "acquire"])
def test_an_interrupt_just_after_the_flock_is_taken_leaves_it_free(
    tmp_path, monkeypatch, cut_after
):
    """On a local disk as on a lease (tests/system/test_lease.py): an interrupt right after
    the flock was taken releases it, so the next lock in this process is not refused."""
    from munet.system.lock import AgentLock

    original = getattr(AgentLock, cut_after)

    def then_interrupt(self, *args, **kwargs):
        original(self, *args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(AgentLock, cut_after, then_interrupt)
    store = SystemStore(str(tmp_path))
    with pytest.raises(KeyboardInterrupt):
        with store.lock("VitCpu~digits"):
            pytest.fail("the body must not run")
    monkeypatch.undo()
    with store.lock("VitCpu~digits"):
        pass
