"""Nothing in the state dir is followed through a symbolic link (issue 17, item 3)."""

import os
import pathlib

import pytest
import torch

from munet.system import Population, SystemStore, UnsafePathError

A = "Crash~a"
B = "Crash~b"


def commit_one_state(root: pathlib.Path, agent: str) -> None:
    store = SystemStore(root)
    with store.lock(agent):
        pop = Population(agent)
        pop.add_path(pop.new_path({}, [pop.new_component("head", {"w": torch.ones(3)})], None))
        store.save_state(pop, 1, 0)


def test_a_lock_file_that_is_a_link_is_refused_and_its_target_untouched(tmp_path, workers):
    root = tmp_path / "state"
    victim = tmp_path / "precious.txt"
    victim.write_text("do not truncate me\n")
    (root / A).mkdir(parents=True)
    os.symlink(victim, root / A / ".lock")
    # A real process tries to take the agent's lock.
    process, status = workers.start("hold-lock", str(root), "--agent", A, "--seconds", "0")
    process.join(60)
    lines = workers.lines(status)
    assert len(lines) == 1 and lines[0].startswith("error UnsafePathError"), lines
    assert f"{root / A / '.lock'} is a symbolic link (to {victim}, outside the state dir)" in (
        lines[0]
    )
    assert victim.read_text() == "do not truncate me\n"
    # The lock's own open never follows a link either (O_NOFOLLOW), whoever calls it.
    from munet.system import AgentLock, LocalFS

    with pytest.raises(OSError):
        AgentLock(LocalFS(), str(root / A), A).acquire()
    assert victim.read_text() == "do not truncate me\n"


def test_an_agent_folder_linking_outside_is_skipped_by_readers_and_refused_to_its_owner(
    tmp_path,
):
    root = tmp_path / "state"
    outside = tmp_path / "elsewhere"
    commit_one_state(outside, A)
    commit_one_state(root, B)
    os.symlink(outside / A, root / A)
    store = SystemStore(root)
    with pytest.warns(UserWarning, match=f"skipping agent {A}: .* is a symbolic link"):
        pop = store.load(B).population
    assert not pop.paths[A] and len(pop.paths[B]) == 1
    with pytest.raises(UnsafePathError, match="outside the state dir"):
        store.load(A)
    with pytest.raises(UnsafePathError, match="symbolic link"):
        with store.lock(A):
            pass
    assert sorted(os.listdir(outside / A)) == [".lock", "state_1_0"]


@pytest.mark.parametrize("entry", ["state_1_0", "state_1_0/manifest.json", "shard"])
def test_links_inside_a_state_are_never_read(tmp_path, entry):
    root = tmp_path / "state"
    commit_one_state(root, A)
    commit_one_state(root, B)
    state_dir = root / A / "state_1_0"
    if entry == "shard":
        target = state_dir / "components-00000.safetensors"
    else:
        target = root / A / entry
    copy = tmp_path / "copy"
    os.rename(target, copy)
    os.symlink(copy, target)  # Same bytes, but through a link.
    store = SystemStore(root)
    with pytest.warns(UserWarning, match=f"skipping .*{A}.* is a symbolic link"):
        assert not store.load(B).population.paths[A]
    with pytest.raises(UnsafePathError):
        store.load(A)


def test_a_state_dir_root_that_is_a_link_is_fine(tmp_path):
    real = tmp_path / "real"
    commit_one_state(real, A)
    os.symlink(real, tmp_path / "alias")
    store = SystemStore(tmp_path / "alias")
    assert store.load(A).state.name == "state_1_0"
