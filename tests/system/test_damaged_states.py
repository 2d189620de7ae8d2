"""One agent's damaged state never stops the others (issue 17, item 1), with real processes.

Agent A commits two cycles; its latest state is then damaged in one of five ways. Agent B (a
real writer process sharing A's components), a reader process that checks every tensor, and
`munet leaderboard` all go on, each skipping A's damaged state with one warning and using A's
previous state; A itself refuses to run on it, `munet doctor` lists it and `--quarantine`
moves it aside (nothing deleted), after which A resumes from its previous state.
"""

import json
import os
import pathlib
import subprocess
import sys
import warnings

import pytest

from munet.system import SystemStore

A = "Crash~a"
B = "Crash~b"
SIZE = 64
REPO = pathlib.Path(__file__).resolve().parents[2]


def _manifest(root: pathlib.Path, state: str = "state_2_0") -> pathlib.Path:
    return root / A / state / "manifest.json"


def _shard(root: pathlib.Path) -> pathlib.Path:
    return root / A / "state_2_0" / "components-00000.safetensors"


def garbage_manifest(root):
    _manifest(root).write_bytes(b"\x00garbage{")


def hand_edited_manifest(root):
    # A plausible edit: someone removed a component from the index by hand.
    manifest = json.loads(_manifest(root).read_text())
    key = next(k for k in manifest["components"] if k.startswith("head:"))
    del manifest["components"][key]
    _manifest(root).write_text(json.dumps(manifest))


def truncated_shard(root):
    data = _shard(root).read_bytes()
    _shard(root).write_bytes(data[: len(data) * 2 // 3])


def bit_flipped_shard(root):
    data = bytearray(_shard(root).read_bytes())
    data[-5] ^= 0x01  # Inside the last tensor's data: only the checksum can tell.
    _shard(root).write_bytes(bytes(data))


def deleted_shard(root):
    _shard(root).unlink()


DAMAGES = {
    "garbage manifest": (garbage_manifest, "manifest.json"),
    "hand-edited manifest": (hand_edited_manifest, "missing from the component index"),
    "truncated shard": (truncated_shard, "components-00000.safetensors"),
    "bit-flipped shard": (bit_flipped_shard, "failed its checksum"),
    "deleted shard": (deleted_shard, "components-00000.safetensors is missing"),
}


def doctor(capsys, *args: str) -> tuple[int, str]:
    """`munet doctor ARGS` in this process (a real CLI run, without a Python start-up)."""
    from munet.cli import main

    capsys.readouterr()
    code = main(["doctor", *args])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def munet(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "munet", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )


def run_worker(workers, *argv: str) -> list[str]:
    process, status = workers.start(*argv)
    process.join(120)
    return workers.lines(status)


# The subtlest kind in the fast suite (only a checksum finds it); the other four are slow.
FAST_DAMAGES = ("bit-flipped shard",)


@pytest.mark.parametrize(
    "damage",
    [d if d in FAST_DAMAGES else pytest.param(d, marks=pytest.mark.slow) for d in DAMAGES],
)
def test_a_damaged_state_of_another_agent_is_skipped_by_every_reader(
    tmp_path, workers, damage, capsys
):
    damage_fn, problem = DAMAGES[damage]
    root = tmp_path / "state"
    common = ("--size", str(SIZE), "--gens", "2")
    lines = run_worker(workers, "writer", str(root), "--agent", A, "--cycles", "2", *common)
    assert lines[-1] == "done 2 0", lines
    good_state_1 = json.loads(_manifest(root, "state_1_0").read_text())
    damage_fn(root)

    # B, a real process, runs one cycle sharing A's published components.
    lines = run_worker(
        workers, "writer", str(root), "--agent", B, "--cycles", "1", "--share", *common
    )
    assert lines[-1] == "done 1 0", lines
    # B's published paths use A's components from A's previous state, not the damaged one.
    b_manifest = json.loads((root / B / "state_1_0" / "manifest.json").read_text())
    a_files = {e["file"] for k, e in b_manifest["components"].items() if f":{A}:" in k}
    assert a_files == {f"{A}/state_1_0/components-00000.safetensors"}

    # A reader process checks every tensor of the whole system.
    lines = run_worker(workers, "reader", str(root), "--seconds", "0.5", "--size", str(SIZE))
    assert lines[-1].startswith("done loads=") and "components=0" not in lines[-1], lines

    # In process: one warning naming the file and the problem, on repeated loads too.
    store = SystemStore(root)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            pop = store.load(B).population
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1, messages
    assert f"skipping damaged state {A}/state_2_0" in messages[0]
    assert problem in messages[0]
    published = [int(full_id.split(":")[1]) for full_id in good_state_1["published"]]
    assert [p.id for p in pop.paths[A]] == published

    # The leaderboard: exit 0, one warning line, A's rows from its previous state.
    board = munet("leaderboard", "-d", str(root), "--format", "json")
    assert board.returncode == 0, board.stderr
    warning_lines = board.stderr.strip().splitlines()
    if damage != "bit-flipped shard":  # The leaderboard reads no tensor data.
        assert len(warning_lines) == 1, board.stderr
        expected = f"munet: warning: skipping damaged state {A}/state_2_0"
        assert warning_lines[0].startswith(expected)
    rows = json.loads(board.stdout)
    assert {r["agent_id"] for r in rows} == {A, B}

    # A's own damaged state stops A with the same message.
    lines = run_worker(workers, "writer", str(root), "--agent", A, "--cycles", "3", *common)
    assert (
        lines
        and lines[-1].startswith("error ")
        and "CorruptError" in lines[-1].replace("CorruptStateError", "CorruptError")
    ), lines
    assert problem in lines[-1]

    # `munet doctor` lists it (exit 5) and quarantines it; nothing is deleted.
    code, out = doctor(capsys, "-d", str(root))
    assert code == 5, out
    assert f"damaged {A}/state_2_0: " in out
    assert problem in out
    files_before = sorted(p.name for p in (root / A / "state_2_0").iterdir())
    code, out = doctor(capsys, "-d", str(root), "--quarantine")
    assert code == 0, out
    moved = list((root / ".quarantine" / A).iterdir())
    assert len(moved) == 1 and moved[0].name.startswith("state_2_0-")
    assert sorted(p.name for p in moved[0].iterdir()) == files_before
    assert doctor(capsys, "-d", str(root))[0] == 0

    # A resumes from its previous good state.
    lines = run_worker(workers, "writer", str(root), "--agent", A, "--cycles", "3", *common)
    assert lines[0] == "ready 1 0" and lines[-1] == "done 3 0", lines


def test_doctor_keeps_a_damaged_state_whose_shards_a_whole_state_uses(tmp_path, workers, capsys):
    root = tmp_path / "state"
    common = ("--size", str(SIZE), "--gens", "2")
    assert (
        run_worker(workers, "writer", str(root), "--agent", A, "--cycles", "2", *common)[-1]
        == "done 2 0"
    )
    assert (
        run_worker(workers, "writer", str(root), "--agent", B, "--cycles", "1", "--share", *common)[
            -1
        ]
        == "done 1 0"
    )
    # A's state_2_0 shards are used by B's state; breaking only A's manifest...
    garbage_manifest(root)
    code, out = doctor(capsys, "-d", str(root), "--quarantine")
    # ... keeps the state in place (moving it would break B) and says why.
    assert code == 5
    assert f"kept {A}/state_2_0: {B}/state_1_0 uses its shards" in out
    assert (root / A / "state_2_0").is_dir()
    assert not (root / ".quarantine").exists()
    # B still loads whole (A's damaged state skipped, with its warning).
    with pytest.warns(UserWarning, match=f"skipping damaged state {A}/state_2_0"):
        assert SystemStore(root).load(B).state.name == "state_1_0"


def test_a_whole_state_dir_is_reported_whole(tmp_path, workers, capsys):
    root = tmp_path / "state"
    lines = run_worker(workers, "writer", str(root), "--agent", A, "--cycles", "1", "--gens", "2")
    assert lines[-1] == "done 1 0"
    code, out = doctor(capsys, "-d", str(root))
    assert code == 0
    assert "every committed state is whole" in out
    code, out = doctor(capsys, "-d", str(tmp_path / "nope"))
    assert code == 2 and out.count("\n") == 1 and "no state dir" in out, out
    assert os.path.exists(root / A / "state_1_0")
