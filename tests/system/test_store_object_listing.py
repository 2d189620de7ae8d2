"""SystemStore on an object store (fsspec's memory filesystem): a round trip, and states
that change between the listing and the read."""

import warnings

import pytest
import torch

from munet.system import SystemStore
from tests.system.store_helpers import A, B, make_root, run_cycle


def test_fsspec_memory_filesystem_round_trip():
    import fsspec

    fsspec.filesystem("memory").store.clear()
    store = SystemStore("memory://munet-test-state")
    assert not store.is_local()
    make_root(store)
    with store.lock(A):
        pop = run_cycle(store, A, 0, [0.5, 0.6], seed=1)
        with pytest.raises(Exception, match="already running"):
            with store.lock(A):
                pass
    got = store.load(B).population
    head = got.paths[A][0].component("head")
    assert torch.equal(head.tensors["kernel"], pop.own_paths[0].component("head").tensors["kernel"])
    assert [s.name for s in store.list_states(A)] == ["state_1_0"]


def test_a_state_uncommitted_between_listing_and_reading_is_skipped(monkeypatch):
    """Object stores: a removal first drops the state from the agent's commit pointer, then
    deletes its files, so a state listed a moment ago may have lost its manifest before it is
    read. That is a state being removed, not a damaged one: the loader lists again (as after a
    vanished folder) instead of failing."""
    import fsspec

    fsspec.filesystem("memory").store.clear()
    store = SystemStore("memory://munet-test-uncommitted")
    make_root(store)
    with store.lock(A):
        run_cycle(store, A, 0, [0.5], seed=1)
        run_cycle(store, A, 1, [0.6, 0.7], seed=3, stop_after=1)  # mid-cycle state_1_1
    assert [s.name for s in store.list_states(A)] == ["state_1_0", "state_1_1"]
    folder = f"{store.root}/{A}/state_1_1"
    read_manifest = SystemStore.read_manifest

    def removed_after_listing(self, state):
        if state.name == "state_1_1" and self.fs.exists(f"{folder}/manifest.json"):
            head, version = self.read_head(A)  # The removal's first step: uncommit, ...
            self.fs.replace_if(
                f"{store.root}/{A}/current.json", head.without({"state_1_1"}).to_bytes(), version
            )
            self.fs.remove_file(f"{folder}/manifest.json")  # ... then the files go.
        return read_manifest(self, state)

    monkeypatch.setattr(SystemStore, "read_manifest", removed_after_listing)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loaded = store.load(A)  # strict for its own state, yet not an error
    assert loaded.state.name == "state_1_0"
    assert store.fs.exists(folder)  # the rest of the folder is still there


def test_a_manifest_read_that_disagrees_with_the_listing_is_tried_again(monkeypatch):
    """An object store whose listing shows a manifest that one read misses (a transient
    inconsistency): the agent's own state is read again, not declared damaged."""
    import fsspec

    fsspec.filesystem("memory").store.clear()
    store = SystemStore("memory://munet-test-transient")
    make_root(store)
    with store.lock(A):
        run_cycle(store, A, 0, [0.5, 0.6], seed=1, stop_after=1)
    read_bytes = store.fs.read_bytes
    misses = []

    def miss_once(path):
        if path.endswith("state_0_1/manifest.json") and not misses:
            misses.append(path)
            raise FileNotFoundError(path)
        return read_bytes(path)

    monkeypatch.setattr(store.fs, "read_bytes", miss_once)
    assert store.load(A).state.name == "state_0_1"
    assert misses
