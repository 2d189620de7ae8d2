"""SystemStore: layout, incremental shards, reload fidelity, laziness, checksums, seams.

Listing races of object stores: tests/system/test_store_object_listing.py."""

import json
import logging
import os
import pathlib
import warnings

import pytest
import torch

from munet.system import (
    ComponentCorruptError,
    CorruptStateError,
    InvalidNameError,
    LockNotHeldError,
    PathComponent,
    Population,
    StateExistsError,
    SystemStore,
)
from tests.system.store_helpers import (
    NAMES,
    ROOT,
    A,
    B,
    child,
    make_root,
    payload,
    run_cycle,
    shard_keys,
)


@pytest.fixture
def store(tmp_path):
    s = SystemStore(str(tmp_path / "state"))
    make_root(s)
    return s


def test_layout_manifest_and_incremental_shards(store):
    with store.lock(A):
        run_cycle(store, A, 0, [0.5, 0.7, 0.6], seed=100)
        assert sorted(os.listdir(os.path.join(store.root, A))) == [".lock", "state_1_0"]
        first_keys = shard_keys(store, A, "state_1_0")
        run_cycle(store, A, 1, [0.8, 0.9], seed=200)
    states = [s.name for s in store.list_states(A)]
    assert states == ["state_1_0", "state_2_0"]  # intermediate states deleted
    second_keys = shard_keys(store, A, "state_2_0")
    assert first_keys and second_keys and not first_keys & second_keys
    assert all(k.split(":")[1] == A for k in first_keys | second_keys)
    manifest = store.read_manifest(store.latest_state(A))
    assert manifest["config"] == {"cycle": 1}
    assert (manifest["cycle"], manifest["generation"], manifest["end_of_cycle"]) == (2, 0, True)
    (best_id,) = manifest["published"]
    record = manifest["paths"][best_id]
    assert record["metrics"]["quality"] == 0.9 and record["metrics"]["num_cycles"] == 1
    assert record["parent"].startswith(A) or record["parent"].startswith(ROOT)
    for ref in record["components"]:
        entry = manifest["components"][ref["component"]]
        assert set(entry) >= {"name", "agent_id", "id", "tensors", "sha256", "file"}
        assert entry["tensors"]["kernel"] == {"shape": [4, 3], "dtype": "float32"}
        assert not entry["file"].startswith("/") and ".." not in entry["file"]
    # The root's components stay in the root's folder, referenced, not copied.
    emb = manifest["components"][f"embedding:{ROOT}:0"]
    assert emb["file"] == f"{ROOT}/state_0_0/components-00000.safetensors"
    history = store.read_path_history(A)
    assert [int(r["id"]) for r in history] == [0, 1, 2, 3, 4]
    assert [float(r["metrics.quality"]) for r in history] == [0.5, 0.7, 0.6, 0.8, 0.9]


def test_reload_reproduces_population_locks_and_tensors(store):
    with store.lock(A):
        pop = run_cycle(store, A, 0, [0.5, 0.7, 0.6], seed=100)
    loaded = store.load(A, ["VitT3"])
    assert (loaded.cycle, loaded.generation, loaded.config) == (1, 0, {"cycle": 0})
    got = loaded.population
    assert set(got.paths) == {ROOT, A}
    (best,) = pop.own_paths
    (again,) = got.own_paths
    assert again.full_id == best.full_id and again.hparams == best.hparams
    assert again.metrics == json.loads(json.dumps(best.metrics))
    assert again.parent.full_id == best.parent.full_id
    assert [c.key for c in again.components] == [c.key for c in best.components]
    assert [c.train_locks for c in again.components] == [c.train_locks for c in best.components]
    for c_new, c_old in zip(again.components, best.components, strict=True):
        assert not c_new.is_loaded  # lazy until used
        for name in c_old.tensors:
            assert torch.equal(c_new.tensors[name], c_old.tensors[name])
    assert (got.next_path_id, got.next_component_id) == (pop.next_path_id, pop.next_component_id)
    # A fresh agent sees A's published path and the root.
    fresh = store.load(B, ["VitT3"]).population
    assert set(fresh.paths) == {ROOT, A} and fresh.own_paths == []
    assert fresh.paths[A][0].components[-1].train_locks == {A}


def test_loading_is_lazy_per_component(store):
    with store.lock(A):
        run_cycle(store, A, 0, [0.5], seed=1)
    pop = store.load(B).population
    comps = {c.key: c for p in pop.all_paths() for c in p.comps_only()}
    assert not any(c.is_loaded for c in comps.values())
    head = pop.paths[A][0].component("head")
    assert head.num_params == 15 and not head.is_loaded  # shapes known without reading
    head.tensors["kernel"].mul_(0)  # private copy-on-write map: never touches the file
    assert sum(c.is_loaded for c in comps.values()) == 1
    reread = store.load(B).population.paths[A][0].component("head").tensors["kernel"]
    assert reread.abs().sum() > 0


def test_mid_cycle_resume_continues_ids_history_and_rewrites_new_components(store):
    with store.lock(A):
        run_cycle(store, A, 0, [0.5, 0.7, 0.6, 0.65], seed=100, stop_after=2)
    assert [s.name for s in store.list_states(A)] == ["state_0_1", "state_0_2"]
    loaded = store.load(A, ["VitT3"], max_task_population_size=2)
    assert (loaded.cycle, loaded.generation) == (0, 2)
    assert len(loaded.population.history) == 2
    assert loaded.population.next_path_id == 2
    with store.lock(A):
        pop = run_cycle(store, A, 0, [0.5, 0.7, 0.6, 0.65], seed=100)
    assert [s.name for s in store.list_states(A)] == ["state_1_0"]
    assert [int(r["id"]) for r in store.read_path_history(A)] == [0, 1, 2, 3]
    # Everything the end-of-cycle state needs is in it or in the root's state.
    for c in pop.own_paths[0].comps_only():
        if c.agent_id == A:
            assert c.key in shard_keys(store, A, "state_1_0")
    for state in store.list_states(A) + store.list_states(ROOT):
        assert store.verify_state(state) == 3 if state.agent_id == A else True


def test_save_requires_the_lock_and_refuses_existing_or_older_states(store):
    pop = store.load(A).population
    with pytest.raises(LockNotHeldError, match="store.lock"):
        store.save_state(pop, 0, 1)
    with store.lock(A):
        store.save_state(pop, 0, 2)
        with pytest.raises(StateExistsError, match="already committed"):
            store.save_state(pop, 0, 2)
        with pytest.raises(ValueError, match="older than"):
            store.save_state(pop, 0, 1)
        with pytest.raises(ValueError, match="generation"):
            store.save_state(pop, 0, -1)


def test_flipped_byte_in_a_shard_names_the_component(store):
    with store.lock(A):
        run_cycle(store, A, 0, [0.5], seed=1)
    manifest = store.read_manifest(store.latest_state(A))
    head_key = next(k for k in manifest["components"] if k.startswith("head:"))
    shard = os.path.join(store.root, manifest["components"][head_key]["file"])
    with open(shard, "rb") as f:
        data = bytearray(f.read())
    header_len = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + header_len])
    begin, _ = header[f"{head_key}/kernel"]["data_offsets"]
    data[8 + header_len + begin + 1] ^= 0x10
    with open(shard, "wb") as f:
        f.write(data)
    # A reader skips the damaged state (checked at load time) with one warning...
    with pytest.warns(UserWarning, match=f"skipping damaged state {A}/state_1_0: .*checksum"):
        assert not store.load(B).population.paths[A]
    # ... and without the load-time check the lazy read still refuses the tensors.
    pop = store.load(B, verify="none").population
    head = pop.paths[A][0].component("head")
    with pytest.raises(ComponentCorruptError, match=f"component {head_key}.*checksum"):
        _ = head.tensors
    with pytest.raises(ComponentCorruptError, match=head_key):
        store.verify_state(store.latest_state(A))
    # Other components of the same shard are still readable.
    assert pop.paths[ROOT][0].component("embedding").tensors["kernel"].shape == (4, 3)


def test_corrupt_header_or_truncated_shard_is_reported(store):
    shard = os.path.join(store.root, ROOT, "state_0_0", "components-00000.safetensors")
    data = pathlib.Path(shard).read_bytes()
    with open(shard, "wb") as f:
        f.write(data[: len(data) // 2])
    with pytest.warns(UserWarning, match="skipping damaged state .*components-00000"):
        assert not store.load(B, verify="structure").population.paths[ROOT]
    comp = store.load(B, verify="none").population.paths[ROOT][0].components[0]
    with pytest.raises(CorruptStateError, match="components-00000.safetensors"):
        _ = comp.tensors
    with open(shard, "wb") as f:
        f.write(data[:9] + b"#" + data[10:])  # breaks the JSON header
    with pytest.raises(CorruptStateError, match="corrupt"):
        _ = store.load(B, verify="none").population.paths[ROOT][0].components[0].tensors


def test_orphaned_parent_falls_back_to_the_root_model(store, caplog):
    with store.lock(A):
        run_cycle(store, A, 0, [0.5], seed=1)
    with store.lock(B):
        pop_b = store.load(B, ["VitT3"]).population
        pop_b.start_cycle()
        child(pop_b, pop_b.paths[A][0], 0.4, seed=2)  # B's path descends from A's...
        pop_b.end_cycle()
        store.save_state(pop_b, 1, 0)
    with store.lock(A):
        run_cycle(store, A, 1, [0.9], seed=3)  # ...which A then retires.
    with caplog.at_level(logging.INFO, logger="munet.system"):
        pop = store.load(B, ["VitT3"]).population
    assert f"parent {A}:0 not loaded; falling back to {ROOT}:0" in caplog.text
    (b_path,) = pop.own_paths
    assert b_path.parent is pop.paths[ROOT][0]
    assert b_path.orphaned_parent == f"{A}:0"
    # Without any root model the path simply has no parent.
    pop = store.load(B, ["NoSuchClass"]).population
    assert pop.own_paths[0].parent is None


def test_multipath_wrapped_paths_are_published_and_rebuilt(store):
    with store.lock(A):
        run_cycle(store, A, 0, [0.5], seed=1)
    multi = "MultiVitT3~cifar10"
    with store.lock(multi):
        loaded = store.load(multi, ["VitT3"])
        pop = loaded.population
        sub = pop.paths[A][0]
        router = pop.new_component("router", {"w": torch.ones(2)})
        path = pop.new_path({"num_paths": 1}, [PathComponent("path_0", sub), router], sub)
        path.metrics["quality"] = 0.3
        pop.add_path(path)
        store.save_state(pop, 0, 1)
    manifest = store.read_manifest(store.latest_state(multi))
    assert manifest["published"] == [f"{multi}:0", sub.full_id]
    got = store.load(multi, []).population  # the sub path comes with the multipath state
    (mpath,) = got.own_paths
    wrapped = mpath.component("path_0")
    assert isinstance(wrapped, PathComponent) and wrapped.path.full_id == sub.full_id
    assert wrapped.path is got.paths[A][0]
    assert torch.equal(mpath.params()["router"]["w"], torch.ones(2))
    assert set(mpath.params()["path_0"]) == {f"{n}/{t}" for n in NAMES for t in ("kernel", "bias")}


def test_agent_class_filter(store):
    with store.lock("Other~cifar10"):
        pop = Population("Other~cifar10")
        pop.add_path(pop.new_path({}, [pop.new_component("head", payload(0))], None))
        store.save_state(pop, 1, 0)
    assert sorted(store.load(A, ["VitT3"]).population.paths) == [ROOT]
    assert set(store.load(A).population.paths) == {"Other~cifar10", ROOT}
    assert store.agent_ids(["Other"]) == ["Other~cifar10"]


def test_unreadable_state_of_another_agent_falls_back_to_an_older_one(store):
    with store.lock(A):
        run_cycle(store, A, 0, [0.5], seed=1)
        run_cycle(store, A, 1, [0.6], seed=2)
    with open(os.path.join(store.root, A, "state_2_0", "manifest.json"), "w") as f:
        f.write("{not json")
    with pytest.warns(UserWarning, match=f"skipping damaged state {A}/state_2_0: corrupt"):
        pop = store.load(B).population
    assert pop.paths[A][0].metrics["quality"] == 0.5
    with pytest.raises(CorruptStateError, match="corrupt manifest.json"):
        store.load(A)  # an agent's own latest state must be readable


def test_names_and_file_references_cannot_escape(store, tmp_path):
    with pytest.raises(InvalidNameError):
        store.agent_dir("../outside~x")
    with pytest.raises(InvalidNameError):
        store.load("VitT3~..")
    os.makedirs(os.path.join(store.root, ".hidden"))
    os.makedirs(os.path.join(store.root, "not an agent"))
    assert store.agent_ids() == [ROOT]
    path = os.path.join(store.root, ROOT, "state_0_0", "manifest.json")
    manifest = json.loads(pathlib.Path(path).read_text())
    for entry in manifest["components"].values():
        entry["file"] = "../../etc/passwd"
    pathlib.Path(path).write_text(json.dumps(manifest))
    # Another agent's damaged state is skipped (with a warning); the owner's load fails.
    with pytest.warns(UserWarning, match="escapes the state dir"):
        assert not store.load(B).population.paths[ROOT]
    with pytest.raises(CorruptStateError, match="escapes the state dir"):
        store.load(ROOT)


def test_leftovers_of_killed_writers_are_cleaned_when_the_lock_is_taken(store):
    agent_dir = os.path.join(store.root, A)
    os.makedirs(os.path.join(agent_dir, ".tmp-state_0_1-deadbeef"))
    pathlib.Path(agent_dir, ".tmp-state_0_1-deadbeef", "manifest.json").write_text("{")
    assert store.list_states(A) == []
    with store.lock(A):
        assert not any(n.startswith(".tmp") for n in os.listdir(agent_dir))


def test_a_local_state_folder_without_its_manifest_is_damaged(store):
    with store.lock(A):
        run_cycle(store, A, 0, [0.5], seed=1)
    os.remove(os.path.join(store.root, A, "state_1_0", "manifest.json"))
    with pytest.raises(CorruptStateError, match="state_1_0 has no manifest.json"):
        store.load(A)  # atomic renames: a committed folder never lacks its manifest


def test_shards_split_by_size(tmp_path):
    store = SystemStore(str(tmp_path / "s"), max_shard_bytes=100)
    with store.lock(A):
        pop = Population(A)
        comps = [pop.new_component(f"c{i}", {"w": torch.full((16,), float(i))}) for i in range(3)]
        pop.add_path(pop.new_path({}, comps, None))
        store.save_state(pop, 1, 0)
    manifest = store.read_manifest(store.latest_state(A))
    assert sorted(manifest["shards"]) == [f"components-0000{i}.safetensors" for i in range(3)]
    pop = store.load(B).population
    assert [c.tensors["w"][0].item() for c in pop.paths[A][0].components] == [0.0, 1.0, 2.0]


def test_config_must_be_json_able(store):
    with store.lock(A):
        pop = store.load(A).population
        with pytest.raises(TypeError, match="not JSON-serializable"):
            store.save_state(pop, 0, 1, {"bad": object()})
        store.save_state(pop, 0, 1, {"n": torch.tensor(3), "t": (1, 2), "v": torch.ones(2)})
    assert store.load(A).config == {"n": 3, "t": [1, 2], "v": [1.0, 1.0]}


def test_warnings_free_normal_load(store):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        store.load(A)


def test_load_tensors_reads_lazy_components_in_threads(store):
    from munet.system import load_tensors

    with store.lock(A):
        run_cycle(store, A, 0, [0.5], seed=1)
    pop = store.load(B).population
    comps = [c for p in pop.all_paths() for c in p.comps_only()]
    assert load_tensors(comps, max_workers=3) == len({c.key for c in comps})
    assert all(c.is_loaded for c in comps)
    assert load_tensors(comps) == 0


def test_a_failed_save_leaves_nothing_behind(store):
    with store.lock(A):
        pop = store.load(A).population
        path = pop.new_path({"bad": object()}, [pop.new_component("head", payload(1))], None)
        pop.add_path(path)
        with pytest.raises(TypeError, match="not JSON-serializable"):
            store.save_state(pop, 0, 1)
        assert os.listdir(os.path.join(store.root, A)) == [".lock"]
        path.hparams["bad"] = "fine"
        store.save_state(pop, 0, 1)  # the same state can then be committed
    assert [s.name for s in store.list_states(A)] == ["state_0_1"]


def test_a_malformed_path_record_is_reported_with_its_state(store):
    path = os.path.join(store.root, ROOT, "state_0_0", "manifest.json")
    manifest = json.loads(pathlib.Path(path).read_text())
    del manifest["paths"][f"{ROOT}:0"]["task_name"]
    pathlib.Path(path).write_text(json.dumps(manifest))
    message = rf"{ROOT}/state_0_0: bad record of path {ROOT}:0"
    with pytest.warns(UserWarning, match=message):
        store.load(A)
    with pytest.raises(CorruptStateError, match=message):
        store.load(ROOT)
