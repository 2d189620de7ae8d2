"""A reader and its agent's end-of-cycle commit, each paused at every step of the other: the
reader must see a committed state (its history included), and a tensor it reads lazily from a
state removed since must raise `StateRemovedError`, never a raw FileNotFoundError nor a
`CorruptStateError` (shared by the local-disk, memory and S3 tests)."""

from __future__ import annotations

import warnings
from collections.abc import Callable

from munet.system import StateRemovedError, SystemStore
from munet.system.fs import StateFS
from munet.system.fsspec_fs import open_state_fs
from munet.system.instrumented_fs import InstrumentedFS
from tests.system.store_helpers import A, make_root, run_cycle

QUALITIES = [0.5, 0.7, 0.6]
BEFORE, AFTER = "state_0_2", "state_1_0"  # the reader's state before and after the commit


class PausingFS(InstrumentedFS):
    """Runs `hook` once, just before its request number `at` (0-based) goes to the store:
    the process using it paused there while another does `hook`'s work."""

    def __init__(self, inner: StateFS, at: int = -1, hook: Callable[[], None] | None = None):
        super().__init__(inner)
        self.at, self.hook, self.count = at, hook, 0

    def _request(self, name: str) -> None:
        step, self.count = self.count, self.count + 1
        if step == self.at and self.hook is not None:
            self.hook()
        super()._request(name)

    def map_range(self, path, start, end):  # local disk: memory-mapped reads, paused too
        self._request("map_range")
        return self.inner.map_range(path, start, end)


def prepare(url: str) -> None:
    """A root, and agent A mid-cycle (states 0_1, 0_2) with its end of cycle still to come."""
    writer = SystemStore(url)
    make_root(writer)
    with writer.lock(A):
        run_cycle(writer, A, 0, QUALITIES, seed=100, stop_after=2)
    assert [s.name for s in writer.list_states(A)] == ["state_0_1", BEFORE]


def commit_end_of_cycle(store: SystemStore) -> None:
    """The agent's owner resumes generation 2 and commits the end of the cycle (which removes
    the intermediate states)."""
    with store.lock(A):
        run_cycle(store, A, 0, QUALITIES, seed=100)


def store_on(url: str, fs_wrapper: Callable[[StateFS], StateFS]) -> SystemStore:
    fs, root = open_state_fs(url)
    return SystemStore(root, fs=fs_wrapper(fs))


def read_everything(reader: SystemStore) -> tuple[str, int, list[str]]:
    """Load A as a reader does and read every tensor lazily.

    Returns:
        The loaded state's name, its history's length and the states named by the
        `StateRemovedError`s of tensors that could no longer be read.
    """
    loaded = reader.load(A, ["VitT3"], max_task_population_size=2)
    removed = []
    for path in loaded.population.all_paths():
        for component in path.comps_only():
            try:
                component.tensors  # noqa: B018
            except StateRemovedError as e:
                assert "load again" in str(e), e
                assert e.state in str(e)
                removed.append(e.state)
    return loaded.state.name, len(loaded.population.history), removed


def check_reader_paused_at_each_step(url_for: Callable[[str], str]) -> int:
    """For each step of a reader's load and lazy reads, pause it there while the owner
    commits its end of cycle. Returns the number of steps tried."""
    prepare(url_for("count"))
    counter = store_on(url_for("count"), PausingFS)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no state may be called damaged
        assert read_everything(counter) == (BEFORE, 2, [])
    steps = counter.fs.count
    for step in range(steps):
        url = url_for(f"r{step}")
        prepare(url)
        writer = SystemStore(url)
        reader = store_on(url, lambda fs, url=url, writer=writer, step=step: PausingFS(
            fs, step, lambda: commit_end_of_cycle(writer)
        ))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            name, history, removed = read_everything(reader)
        where = f"reader paused at step {step} of {steps}"
        assert name in (BEFORE, AFTER), where
        # A mid-cycle state comes with its own history; an end-of-cycle one with none.
        assert history == (2 if name == BEFORE else 0), where
        # Only a state removed since the load may fail a lazy read, and it says so.
        assert set(removed) <= {f"{A}/{BEFORE}", f"{A}/state_0_1"}, (where, removed)
        if name == AFTER:
            assert not removed, where
        # Loading again reads the committed end of the cycle, every tensor of it.
        assert read_everything(SystemStore(url)) == (AFTER, 0, []), where
    return steps


def check_writer_paused_at_each_step(url_for: Callable[[str], str]) -> int:
    """For each step of the owner's end-of-cycle commit, pause it there while a reader loads
    and reads every tensor: the reader sees the state before or after, whole. Returns the
    number of steps tried."""
    prepare(url_for("count"))
    counter = store_on(url_for("count"), PausingFS)
    commit_end_of_cycle(counter)
    steps = counter.fs.count
    for step in range(steps):
        url = url_for(f"w{step}")
        prepare(url)
        seen: list[tuple[str, int, list[str]]] = []

        def read(url: str = url, seen: list = seen) -> None:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                seen.append(read_everything(SystemStore(url)))

        commit_end_of_cycle(store_on(url, lambda fs, read=read, step=step: PausingFS(
            fs, step, read
        )))
        where = f"writer paused at step {step} of {steps}"
        assert seen in ([(BEFORE, 2, [])], [(AFTER, 0, [])]), (where, seen)
        assert read_everything(SystemStore(url)) == (AFTER, 0, []), where
    return steps
