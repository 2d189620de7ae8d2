"""Ctrl-C during start-up (`munet launch`): deferred to a safe point, never raised inside an
import or `ray.init`.

Python raises KeyboardInterrupt wherever the main thread is when SIGINT arrives. During the
launch's start-up that is mostly inside imports of extension modules (torch, Ray) and inside
`ray.init`, which do not survive it: measured on a loaded 2-core machine, Ctrl-C 3-16 s into
`munet launch` ended in `SystemError: ... bad call flags`, `generic_type: cannot initialize
type "GradBucket"` (abort, exit -6), `partially initialized module 'torch'` (exit 1) or a
segfault (exit -11) instead of exit 130: the interrupted import left torch half-initialised,
and the error report imported it again. `defer_sigint` records the signal instead and raises
KeyboardInterrupt when the block ends, after the import or `ray.init` completed.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class _Deferral:
    """The active deferral: the handler it replaced and the signals it recorded."""

    def __init__(self, previous: object) -> None:
        self.previous = previous
        self.received: list[int] = []

    def record(self, signum: int, frame: object) -> None:
        self.received.append(signum)


_active: _Deferral | None = None


@contextmanager
def defer_sigint() -> Iterator[None]:
    """Within the block, SIGINT is recorded; at its end a recorded one raises KeyboardInterrupt.

    A no-op outside the main thread (only it receives signals), where SIGINT is ignored (a
    background job: it stays ignored) and inside another deferral (which goes on until its own
    block ends or `resume_sigint` ends it).
    """
    global _active
    if threading.current_thread() is not threading.main_thread() or _active is not None:
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    if isinstance(previous, signal.Handlers):
        # As a plain int: CPython 3.11 stores an enum handler as a Python callable.
        previous = int(previous)
    if previous == int(signal.SIG_IGN):
        yield
        return
    deferral = _Deferral(previous)
    _active = deferral
    signal.signal(signal.SIGINT, deferral.record)
    try:
        yield
    except BaseException:
        _end(deferral)
        raise
    if _end(deferral):
        raise KeyboardInterrupt


def interruption_point() -> None:
    """Raise KeyboardInterrupt here if a SIGINT was recorded by the active deferral (between
    two steps that must not be cut: do not start the next one); the deferral goes on until its
    block ends."""
    if _active is not None and _active.received:
        raise KeyboardInterrupt


def resume_sigint() -> None:
    """End the active deferral now: SIGINT raises KeyboardInterrupt again, and one received
    meanwhile is raised here. A no-op when nothing is deferred."""
    if _active is not None and _end(_active):
        raise KeyboardInterrupt


def _end(deferral: _Deferral) -> bool:
    """Restore the handler the deferral replaced (once); whether a SIGINT was recorded."""
    global _active
    if _active is not deferral:
        return False  # Ended already (resume_sigint).
    _active = None
    # None: a handler set outside Python; the default is what Python would do.
    previous = deferral.previous if deferral.previous is not None else signal.default_int_handler
    signal.signal(signal.SIGINT, previous)
    return bool(deferral.received)


def listen_to_cancel() -> None:
    """Give SIGINT Python's own handler (KeyboardInterrupt) in this process's main thread
    where it has none: it is ignored (started in the background by a non-interactive shell: a
    CI job, `nohup`) or left to the OS (SIG_DFL).

    Ray cancels a running task by simulating SIGINT in its worker, which does nothing where
    SIGINT is ignored; and Ray's own deferral of SIGINT around its task bookkeeping calls the
    handler it saved, which fails ("'Handlers' object is not callable") where that handler is
    SIG_IGN or SIG_DFL. munet's Ray workers run this at start-up (a Ray
    ``worker_process_setup_hook``, munet.cluster.ray_setup) and at the start of each agent's
    task.
    """
    if threading.current_thread() is not threading.main_thread():
        return
    if not callable(signal.getsignal(signal.SIGINT)):
        signal.signal(signal.SIGINT, signal.default_int_handler)


_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_stop_deferred = False


@contextmanager
def stop_signals_deferred() -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM wait: each one received is delivered again, to
    the handler it would have met, when the block ends (KeyboardInterrupt or `Terminated`
    is raised there; a default SIGTERM then kills the process).

    For a few local steps that must not be cut (a state renamed into place and the folders
    that commit retires; a failed save's folder removed): cut between them they would leave
    a `.tmp-state*` folder behind. Keep the block short: a stop waits for it.

    A no-op outside the main thread (only it receives signals) and inside another such
    block; an ignored signal stays ignored.
    """
    global _stop_deferred
    if threading.current_thread() is not threading.main_thread() or _stop_deferred:
        yield
        return
    received: list[int] = []
    previous: dict[int, object] = {}
    _stop_deferred = True
    try:
        # Inside the try: a signal landing between two replacements still restores the first.
        for signum in _STOP_SIGNALS:
            handler = signal.getsignal(signum)
            if handler == signal.SIG_IGN or handler is None:
                continue  # Ignored stays ignored; one set outside Python cannot be restored.
            previous[signum] = handler
            signal.signal(signum, lambda number, frame: received.append(number))
        yield
    finally:
        _stop_deferred = False
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        for signum in dict.fromkeys(received):
            # Delivered now, to the restored handler (raise_signal runs it before returning).
            signal.raise_signal(signum)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C's KeyboardInterrupt so every cleanup that Ctrl-C runs
    (a state being written removed, locks released, Ray tasks cancelled) runs for it too;
    the command exits 143 (128 + SIGTERM) instead of 130."""


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM in this process raises :class:`Terminated` in the main
    thread (instead of killing the process on the spot, leaving a ``.tmp-state*`` folder
    behind). A no-op outside the main thread and where SIGTERM already has a handler.

    A child process forked inside the block (a demo worker) keeps the default: the handler
    kills it as SIGTERM would, since its parent, not it, owns the cleanup.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGTERM)
    if previous not in (signal.SIG_DFL, None):
        yield
        return
    owner = os.getpid()

    def terminate(signum: int, frame: object) -> None:
        if os.getpid() != owner:  # a forked child: die as SIGTERM would
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
            return
        raise Terminated

    signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
