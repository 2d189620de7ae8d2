"""A stop (SIGTERM, Ctrl-C) at any moment of an agent's saves leaves nothing behind (issue 52
item 3): no `.tmp-` folder, no intermediate state an end-of-cycle commit retired, every
committed state whole, and the agent resumes.

The signal is raised in this process (`signal.raise_signal`, whose handler runs before it
returns) right after each filesystem step of a cycle's saves in turn, with the `munet`
command's own SIGTERM handling (`sigterm_as_interrupt`) installed: every window between two
steps is hit once, deterministically.
"""

from __future__ import annotations

import os
import shutil
import signal

import pytest

from munet.interrupts import Terminated, sigterm_as_interrupt, stop_signals_deferred
from munet.system import SystemStore
from munet.system.fs import LocalFS
from munet.system.integrity import find_damaged

from .store_helpers import A, make_root, run_cycle

QUALITIES = (0.5, 0.6, 0.7)  # three generations: two intermediate states, then end of cycle


@pytest.fixture(autouse=True)
def interactive_signals():
    """SIGINT and SIGTERM as a `munet` started from a terminal has them: a suite started in
    the background (`cmd &`, some CI runners) inherits SIGINT ignored, and Python then installs
    no KeyboardInterrupt handler."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    previous_term = signal.signal(signal.SIGTERM, signal.SIG_DFL)
    yield
    signal.signal(signal.SIGINT, previous)
    signal.signal(signal.SIGTERM, previous_term)


class SignallingFS(LocalFS):
    """Local disk that raises a signal in this process right after its `at`-th step."""

    def __init__(self, root, at: int | None, signum: int) -> None:
        super().__init__(str(root))
        self.at = at
        self.signum = signum
        self.steps = 0

    def _step(self) -> None:
        self.steps += 1
        if self.steps == self.at:
            signal.raise_signal(self.signum)

    def makedirs(self, path):
        super().makedirs(path)
        self._step()

    def write_bytes(self, path, data):
        super().write_bytes(path, data)
        self._step()

    def write_with(self, path, write, data):
        super().write_with(path, write, data)
        self._step()

    def sync_dir(self, path):
        super().sync_dir(path)
        self._step()

    def rename(self, src, dst):
        super().rename(src, dst)
        self._step()

    def remove_tree(self, path):
        super().remove_tree(path)
        self._step()

    def remove_file(self, path):
        super().remove_file(path)
        self._step()


def _one_cycle(store: SystemStore) -> None:
    # Two intermediate states, then the end-of-cycle state, whose commit retires them.
    with store.lock(A):
        run_cycle(store, A, 0, QUALITIES, seed=10)


def _check_nothing_left(root: str) -> None:
    store = SystemStore(root)
    names = os.listdir(os.path.join(root, A))
    assert not [n for n in names if n.startswith(".tmp-")], names
    assert find_damaged(store) == []
    states = store.list_states(A)
    latest_end = max((s.cycle for s in states if s.end_of_cycle), default=0)
    # Intermediate states the latest end-of-cycle commit retired are gone with it.
    assert all(s.end_of_cycle or s.cycle >= latest_end for s in states), states
    for state in states:
        store.verify_state(state)


@pytest.fixture(scope="module")
def rooted(tmp_path_factory):
    root = tmp_path_factory.mktemp("stop") / "state"
    make_root(SystemStore(root))
    return root


def _steps_of_one_cycle(rooted, tmp_path) -> int:
    root = tmp_path / "count"
    shutil.copytree(rooted, root)
    fs = SignallingFS(root, None, signal.SIGTERM)
    _one_cycle(SystemStore(root, fs=fs))
    return fs.steps


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stop_after_any_step_of_the_saves_leaves_nothing_behind(rooted, tmp_path, signum):
    steps = _steps_of_one_cycle(rooted, tmp_path)
    assert steps > 10  # the saves' steps are counted: the loop below covers them all
    stopped = 0
    for at in range(1, steps + 1):
        root = tmp_path / f"stop-{at}"
        shutil.copytree(rooted, root)
        store = SystemStore(root, fs=SignallingFS(root, at, signum))
        expected = Terminated if signum == signal.SIGTERM else KeyboardInterrupt
        try:
            with sigterm_as_interrupt():
                _one_cycle(store)
        except expected:
            stopped += 1
        _check_nothing_left(str(root))
        # The agent resumes (its lock was released) and ends its cycle.
        resumed = SystemStore(root)
        with resumed.lock(A):
            if resumed.load(A).cycle == 0:
                run_cycle(resumed, A, 0, QUALITIES, seed=90)
        assert max(s.cycle for s in resumed.list_states(A)) == 1
        _check_nothing_left(str(root))
        shutil.rmtree(root)
    assert stopped == steps  # every step's signal was taken (none lost, none swallowed)


def test_stop_signals_deferred_delivers_each_signal_at_the_end_of_the_block():
    events = []
    with pytest.raises(Terminated):
        with sigterm_as_interrupt():
            with stop_signals_deferred():
                signal.raise_signal(signal.SIGTERM)
                events.append("after the signal")
                with stop_signals_deferred():  # nested: the outer block decides
                    events.append("nested")
                events.append("block end")
    assert events == ["after the signal", "nested", "block end"]
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL  # every handler restored
    with pytest.raises(KeyboardInterrupt):
        with stop_signals_deferred():
            signal.raise_signal(signal.SIGINT)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_stop_signals_deferred_leaves_an_ignored_signal_ignored():
    previous = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        with stop_signals_deferred():
            signal.raise_signal(signal.SIGTERM)  # ignored: nothing recorded, nothing raised
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGTERM, previous)
