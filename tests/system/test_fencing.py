"""The fenced commit on an fsspec store (memory://): a manifest that landed during the save
(a late request of an earlier holder) is replaced by the lease holder; a create whose reply was
lost is recognised as committed; a writer that lost the lease replaces nothing."""

from __future__ import annotations

import json
import logging

import fsspec
import pytest
import torch

from munet.system import LeaseLostError, Population, SystemStore
from munet.system.fsspec_fs import FsspecFS
from munet.system.outage import RetryPolicy

A = "Vit~fence"


def _population() -> Population:
    population = Population(A)
    component = population.new_component("encoderblock_0", {"w": torch.ones(2, 2)})
    path = population.new_path({"n": 1}, [component], None)
    path.metrics["quality"] = 0.5
    population.add_path(path)
    return population


@pytest.fixture
def store(tmp_path):
    root = f"/fence-{tmp_path.name}"
    yield SystemStore(f"memory://{root}", lease_ttl=30)
    memory = fsspec.filesystem("memory")
    if memory.exists(root):
        memory.rm(root, recursive=True)


def _late_manifest_lands_first(store, monkeypatch, writer="an-earlier-holder"):
    """Make the next manifest create find another writer's manifest just landed."""
    real_create = store.fs.create_bytes
    late = json.dumps({"writer": writer, "late": True}).encode()
    landed = []

    def create(path, data):
        if path.endswith("manifest.json") and not landed:
            landed.append(path)
            store.fs.write_bytes(path, late)  # the delayed PUT lands right now (once)
        real_create(path, data)

    monkeypatch.setattr(store.fs, "create_bytes", create)


def test_a_manifest_landed_during_the_save_is_replaced_by_the_lease_holder(
    store, monkeypatch, caplog
):
    with store.lock(A) as lock:
        _late_manifest_lands_first(store, monkeypatch)
        with caplog.at_level(logging.WARNING, logger="munet.system"):
            state = store.save_state(_population(), 1, 0)
        manifest = store.read_manifest(state)
        assert manifest["writer"] == lock.lease.token and "late" not in manifest
    assert "lease an-earlier-holder" in caplog.text and "replacing it" in caplog.text
    assert store.verify_state(state) == 1


def test_a_writer_that_lost_its_lease_replaces_nothing(store, monkeypatch):
    with pytest.raises(LeaseLostError):
        with store.lock(A) as lock:
            store.save_state(_population(), 1, 0)
            _late_manifest_lands_first(store, monkeypatch, writer="the-new-holder")
            # Taken over between this writer's fence and its create.
            real_fence = lock.lease.fence
            calls = []

            def fence():
                calls.append(1)
                if len(calls) > 1:
                    lock.lease.lost = True
                return real_fence()

            monkeypatch.setattr(lock.lease, "fence", fence)
            store.save_state(_population(), 2, 0)
    manifest = json.loads(store.fs.read_bytes(
        store.fs.join(store.agent_dir(A), "state_2_0", "manifest.json")))
    assert manifest == {"writer": "the-new-holder", "late": True}  # left alone


def test_a_create_whose_reply_was_lost_is_committed(tmp_path):
    memory = fsspec.filesystem("memory")
    fs = FsspecFS(memory, RetryPolicy(attempts=3, total_seconds=5, first_delay=0.01))
    path = f"/lost-reply-{tmp_path.name}/manifest.json"
    real_pipe = memory.pipe_file
    tries = []

    def pipe_file(target, data, **kwargs):
        tries.append(kwargs.get("mode"))
        real_pipe(target, data, **kwargs)
        if len(tries) == 1:
            raise ConnectionResetError("reply lost")

    memory.pipe_file = pipe_file
    try:
        store = SystemStore(f"/lost-reply-{tmp_path.name}", fs=fs)
        from munet.system.fencing import commit_fenced
        from munet.system.manifest import StateRef

        class HeldLock:
            def fence(self):
                return 30.0

        commit_fenced(store.fs, HeldLock(), StateRef(A, 1, 0), path, b"ours")
        assert tries == ["create", "create"]  # retried; the store refused the second
        assert memory.cat_file(path) == b"ours"
    finally:
        del memory.pipe_file
        memory.rm(f"/lost-reply-{tmp_path.name}", recursive=True)
