"""Readers never see their agent's end-of-cycle commit as damage (issue 52 item 1): a reader
paused at each step of its load and lazy reads while the owner commits, and the owner paused
at each step of its commit while a reader reads, on local disk (atomic renames) and on an
in-memory object store (manifest-last, commit pointer; S3 itself: tests/cluster)."""

from __future__ import annotations

import secrets

import fsspec
import pytest

from munet.cli.errors import EXIT_OS_ERROR, classify
from munet.system import CorruptStateError, StateRemovedError, SystemStore
from tests.system.reader_races import (
    BEFORE,
    PausingFS,
    check_reader_paused_at_each_step,
    check_writer_paused_at_each_step,
    commit_end_of_cycle,
    prepare,
    store_on,
)
from tests.system.store_helpers import A


@pytest.fixture(params=["local", "memory"])
def url_for(request, tmp_path):
    if request.param == "local":
        yield lambda name: str(tmp_path / name)
        return
    folder = f"/races-{secrets.token_hex(4)}"
    yield lambda name: f"memory://{folder}/{name}"
    memory = fsspec.filesystem("memory")
    if memory.exists(folder):
        memory.rm(folder, recursive=True)


def test_a_reader_paused_at_each_step_sees_committed_states(url_for):
    assert check_reader_paused_at_each_step(url_for) > 10


def test_a_commit_paused_at_each_step_leaves_readers_a_whole_state(url_for):
    assert check_writer_paused_at_each_step(url_for) > 10


def test_the_path_history_read_during_a_commit_is_a_committed_one(url_for):
    prepare(url_for("count"))
    counter = store_on(url_for("count"), PausingFS)
    before = len(counter.read_path_history(A))
    steps = counter.fs.count
    for step in range(steps):
        url = url_for(f"h{step}")
        prepare(url)
        writer = SystemStore(url)
        reader = store_on(url, lambda fs, writer=writer, step=step: PausingFS(
            fs, step, lambda: commit_end_of_cycle(writer)
        ))
        after = len(reader.read_path_history(A))
        assert after in (before, len(SystemStore(url).read_path_history(A))), step
    assert steps >= 2


def test_a_tensor_of_a_state_removed_since_says_to_load_again(url_for):
    url = url_for("lazy")
    prepare(url)
    reader = SystemStore(url)
    loaded = reader.load(A, ["VitT3"], max_task_population_size=2)
    assert loaded.state.name == BEFORE
    commit_end_of_cycle(SystemStore(url))
    own = [c for p in loaded.population.own_paths for c in p.comps_only() if c.agent_id == A]
    assert own
    with pytest.raises(StateRemovedError) as err:
        for component in own:
            component.tensors  # noqa: B018
    message = str(err.value)
    assert err.value.state.startswith(f"{A}/state_0_") and err.value.state in message
    assert "was removed after it was loaded" in message and "load again" in message
    # A munet error, not damage; a FileNotFoundError still, for code that caught the raw one.
    assert not isinstance(err.value, CorruptStateError)
    assert isinstance(err.value, FileNotFoundError)
    code, text = classify(err.value)
    assert code == EXIT_OS_ERROR and "rerun" in text


def test_a_shard_missing_from_a_committed_state_is_still_damage(tmp_path):
    url = str(tmp_path / "damaged")
    prepare(url)
    reader = SystemStore(url)
    loaded = reader.load(A, ["VitT3"], max_task_population_size=2, verify="none")
    for shard in (tmp_path / "damaged" / A / BEFORE).glob("*.safetensors"):
        shard.unlink()
    own = [c for p in loaded.population.own_paths for c in p.comps_only() if c.agent_id == A]
    with pytest.raises(CorruptStateError, match="is missing") as err:
        for component in own:
            component.tensors  # noqa: B018
    assert not isinstance(err.value, StateRemovedError)
