"""Stopping running Ray jobs without `ray.cancel`: a flag the jobs watch.

`ray.cancel` on a task whose reply is reaching the driver at that moment aborts the driver
inside Ray's core ("Check failed: it != submissible_tasks_.end() Tried to complete task that
was not pending"; seen in munet's CI with Ray 2.60, one of a family of cancel races in Ray's
task manager). A search cancels exactly when jobs are finishing (its stop rule fires on a
result), and a launch's agents may be finishing as Ctrl-C comes, so neither calls it
(`munet.search.executors.RayExecutor`, `munet.cluster.agent_task`). Instead each job runs under
`run_watched`:

- a flag (for a search, a key in Ray's key-value store, one per executor and cancel; for a
  launch, its stop-flag actor) is read before the job starts: a job still queued when the
  driver cancelled returns at once without running;
- while the job runs, a watcher thread reads the flag every `poll_s` seconds and, once it is
  raised, interrupts the worker's main thread as Ctrl-C would (`_thread.interrupt_main`; Ray
  blocks the real SIGINT in its workers): the job stops at its next Python instruction (a
  training step is short; a single blocking C call is waited out), munet's SIGINT deferrals
  around file writes hold, and the task ends through Ray's normal reply.

The module needs no Ray: the flag is any `() -> bool`, so tests drive it in process.
"""

from __future__ import annotations

import _thread
import threading
from collections.abc import Callable
from typing import Any

from munet.interrupts import listen_to_cancel

POLL_SECONDS = 0.2


class JobCancelled(Exception):
    """The driver cancelled the job (it will not read the result)."""


class _Watcher:
    """Interrupts the main thread once `is_raised()` is true, only while the job runs."""

    def __init__(self, is_raised: Callable[[], bool], poll_s: float) -> None:
        self.fired = False
        self._is_raised = is_raised
        self._poll_s = poll_s
        self._lock = threading.Lock()
        self._running = True
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="munet-job-cancel", daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._done.wait(self._poll_s):
            if self._is_raised():
                # Under the lock: `stop` cannot end the job between this check and the
                # interrupt, so it lands in `run_watched`, never in the worker's next task.
                with self._lock:
                    if self._running:
                        self.fired = True
                        _thread.interrupt_main()
                return

    def stop(self) -> None:
        with self._lock:
            self._running = False
        self._done.set()


def run_watched(
    fn: Callable[[Any], Any],
    payload: Any,
    is_raised: Callable[[], bool],
    poll_s: float = POLL_SECONDS,
) -> Any:
    """`fn(payload)`, stopped with :class:`JobCancelled` once `is_raised()` turns true.

    Outside the main thread (where no signal can reach the job) it only checks the flag
    before starting.
    """
    if is_raised():
        raise JobCancelled("cancelled before it started")
    if threading.current_thread() is not threading.main_thread():
        return fn(payload)
    listen_to_cancel()  # SIGINT must raise KeyboardInterrupt here, even where it was ignored
    watcher = _Watcher(is_raised, poll_s)
    try:
        return fn(payload)
    except KeyboardInterrupt:
        if watcher.fired:
            raise JobCancelled("cancelled while running") from None
        raise
    finally:
        watcher.stop()
