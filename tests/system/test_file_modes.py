"""Files of the state dir follow the process's umask, as any file a program creates: under
umask 002 a group that shares the state dir can read and write them (and take an agent's lock)."""

from __future__ import annotations

import os
import stat

import pytest
import torch

from munet.system import Population, SystemStore

AGENT = "Vit~modes"


def _population() -> Population:
    population = Population(AGENT)
    component = population.new_component("encoderblock_0", {"w": torch.ones(2, 2)})
    path = population.new_path({"n": 1}, [component], None)
    path.metrics["quality"] = 0.5
    population.add_path(path)
    return population


@pytest.fixture
def umask_002():
    previous = os.umask(0o002)
    try:
        yield
    finally:
        os.umask(previous)


def _mode(path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_state_files_and_the_lock_follow_the_umask(tmp_path, umask_002):
    store = SystemStore(tmp_path)
    with store.lock(AGENT):
        state = store.save_state(_population(), 0, 0)
    folder = tmp_path / AGENT / state.name
    written = sorted(p.name for p in folder.iterdir())
    assert {"manifest.json", "paths.csv", "population.json"} <= set(written)
    for name in written:  # the shards too
        assert _mode(folder / name) == 0o664, name
    assert _mode(tmp_path / AGENT / ".lock") == 0o664
    assert _mode(folder) == 0o775
