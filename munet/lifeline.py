"""Child processes that never outlive the munet process that started them.

A worker left running after its parent was killed keeps training, commits states and holds an
agent's lock, so a rerun finds the agent "already running". Every process munet starts (the
demo's agent pool, the report's headless browser) therefore calls `die_with_parent` first:

- On Linux it asks the kernel for SIGKILL when the parent dies (``PR_SET_PDEATHSIG``).
- The request only covers a parent that dies *after* it, so it then checks the parent is still
  the one that started the worker (``getppid()``); if not, the worker exits at once.
- Elsewhere a daemon thread polls ``getppid()`` and ends the process when the parent is gone.

This module imports nothing heavy (no torch, no munet subpackage): a spawned worker imports it
and runs `die_with_parent` before it imports anything else, so a parent killed while its
workers start up takes them with it too.
"""

from __future__ import annotations

import os
import signal
import sys
import threading

PR_SET_PDEATHSIG = 1
# How often the fallback watchdog (no prctl) checks for the parent.
WATCHDOG_INTERVAL_S = 0.2


def _linux_prctl():
    """libc's prctl, or None off Linux (resolved in the parent too, so a fork-then-exec child
    calls an already-loaded function instead of loading a library between fork and exec)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _linux_prctl()


def die_with_parent(parent_pid: int, watchdog: bool = True) -> None:
    """End this process when `parent_pid`, the process that started it, dies.

    Call it first thing in the child. Exits at once (status 1, nothing written) when the parent
    is already gone.

    Args:
        parent_pid: the pid of the process that started this one.
        watchdog: without prctl, start the polling thread (False between fork and exec, where
            a thread would not survive the exec).
    """
    armed = _PRCTL is not None and _PRCTL(PR_SET_PDEATHSIG, int(signal.SIGKILL)) == 0
    # The parent may have died before the request: the worker was then re-parented.
    if os.getppid() != parent_pid:
        os._exit(1)
    if not armed and watchdog:
        threading.Thread(
            target=_watch_parent, args=(parent_pid,), name="munet-lifeline", daemon=True
        ).start()


def _watch_parent(parent_pid: int) -> None:
    import time

    while os.getppid() == parent_pid:
        time.sleep(WATCHDOG_INTERVAL_S)
    os._exit(1)
