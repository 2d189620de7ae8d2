"""Readers never see their agent's end-of-cycle commit as damage, on S3 (a moto server on
127.0.0.1): a reader paused at each step of its load and lazy reads while the owner commits,
the owner paused at each step of its commit while a reader reads, and a tensor of a state
removed since the load (tests/system/reader_races.py; local disk and memory there)."""

from __future__ import annotations

import pytest

from munet.system import StateRemovedError, SystemStore
from tests.system.reader_races import (
    BEFORE,
    check_reader_paused_at_each_step,
    check_writer_paused_at_each_step,
    commit_end_of_cycle,
    prepare,
)
from tests.system.store_helpers import A

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.mark.slow  # ~30 s: every step, each on a fresh store
def test_a_reader_paused_at_each_step_on_s3_sees_committed_states(s3_url):
    assert check_reader_paused_at_each_step(lambda name: f"{s3_url}/{name}") > 10


@pytest.mark.slow  # ~50 s
def test_a_commit_paused_at_each_step_on_s3_leaves_readers_a_whole_state(s3_url):
    assert check_writer_paused_at_each_step(lambda name: f"{s3_url}/{name}") > 10


def test_a_tensor_of_a_state_removed_since_on_s3_says_to_load_again(s3_url):
    url = f"{s3_url}/lazy"
    prepare(url)
    loaded = SystemStore(url).load(A, ["VitT3"], max_task_population_size=2)
    assert loaded.state.name == BEFORE
    commit_end_of_cycle(SystemStore(url))
    own = [c for p in loaded.population.own_paths for c in p.comps_only() if c.agent_id == A]
    with pytest.raises(StateRemovedError, match="removed after it was loaded.*load again"):
        for component in own:
            component.tensors  # noqa: B018
