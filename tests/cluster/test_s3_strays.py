"""Files no committed state uses on S3 (moto on 127.0.0.1): an end-of-cycle commit removes the
intermediate states it uncommits; late requests of an old writer (a manifest of a state the
commit pointer does not name, a shard beside a committed state) are listed by `munet doctor`
as strays instead of being called whole, and removed by `--clean` or the agent's next holder."""

from __future__ import annotations

import warnings

import pytest
import torch

from munet.cli import main
from munet.system import Population, SystemStore
from munet.system.integrity import find_damaged
from munet.system.strays import find_strays

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

AGENT = "Vit~strays"


def _population() -> Population:
    population = Population(AGENT)
    component = population.new_component("encoderblock_0", {"w": torch.ones(3, 3)})
    path = population.new_path({"n": 1}, [component], None)
    path.metrics["quality"] = 0.5
    population.add_path(path)
    return population


def test_strays_are_reported_then_removed(s3_url, capsys):
    store = SystemStore(s3_url)
    population = _population()
    with store.lock(AGENT):
        store.save_state(population, 0, 0)
        store.save_state(population, 0, 1)
        store.save_state(population, 1, 0)  # uncommits state_0_1 and removes its files
    agent_dir = store.agent_dir(AGENT)
    assert not store.fs.exists(f"{agent_dir}/state_0_1")
    assert find_strays(store, AGENT) == []
    # Requests of a writer that lost its lease, landing late: a whole state's manifest and a
    # shard beside a committed state.
    committed = store.read_manifest(store.latest_state(AGENT))
    store.fs.write_bytes(f"{agent_dir}/state_1_1/manifest.json",
                         store.fs.read_bytes(f"{agent_dir}/state_1_0/manifest.json"))
    store.fs.write_bytes(f"{agent_dir}/state_1_0/components-00000.0badcafe.safetensors", b"x")

    assert [s.name for s in store.list_states(AGENT)] == ["state_0_0", "state_1_0"]
    found = {(s.folder, s.files) for s in find_strays(store, AGENT)}
    assert found == {
        ("state_1_0", ("state_1_0/components-00000.0badcafe.safetensors",)),
        ("state_1_1", ("state_1_1/manifest.json",)),
    }
    assert main(["doctor", "-d", s3_url]) == 0
    out = capsys.readouterr().out
    assert f"stray {AGENT}/state_1_1: the folder, a state its commit pointer does not name" in out
    assert f"stray {AGENT}/state_1_0: 1 file(s)" in out
    assert "every committed state is whole; 2 folder(s) hold stray files" in out

    assert main(["doctor", "-d", s3_url, "--clean"]) == 0
    assert f"removed the stray files of {AGENT}" in capsys.readouterr().out
    assert find_strays(store, AGENT) == []
    assert not store.fs.exists(f"{agent_dir}/state_1_1")
    assert store.read_manifest(store.latest_state(AGENT)) == committed  # untouched
    assert find_damaged(store) == []  # every committed state keeps every file it uses
    for state in store.list_states(AGENT):
        assert store.verify_state(state) == 1
    assert main(["doctor", "-d", s3_url]) == 0
    assert capsys.readouterr().out.strip().endswith("every committed state is whole")


def test_a_store_written_before_commit_pointers_loads_and_gets_one(s3_url):
    """Stores written before pointers existed have none: readers list the folders holding a
    manifest (the older rule); the first holder of the lock writes the pointer naming them."""
    store = SystemStore(s3_url)
    with store.lock(AGENT):
        store.save_state(_population(), 0, 0, {"k": 1})
        store.save_state(_population(), 0, 1, {"k": 2})
    agent_dir = store.agent_dir(AGENT)
    store.fs.remove_file(f"{agent_dir}/current.json")  # as an older munet left it
    store.fs.makedirs(f"{agent_dir}/state_0_2")
    store.fs.write_bytes(f"{agent_dir}/state_0_2/paths.csv", b"")  # a killed save, no manifest

    reader = SystemStore(s3_url)
    assert [s.name for s in reader.list_states(AGENT)] == ["state_0_0", "state_0_1"]
    assert reader.load(AGENT).config == {"k": 2}
    assert [s.folder for s in find_strays(reader, AGENT)] == ["state_0_2"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with reader.lock(AGENT):
            pass
    head, _ = reader.read_head(AGENT)
    assert [s.name for s in head.states] == ["state_0_0", "state_0_1"] and head.epoch == 1
    assert not reader.fs.exists(f"{agent_dir}/state_0_2")
    assert reader.load(AGENT).config == {"k": 2}
