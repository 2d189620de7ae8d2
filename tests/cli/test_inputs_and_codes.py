"""Issue 25: bad input is refused before anything is written, failed runs leave nothing behind,
exit codes say what happened, and `munet doctor` checks every file of a state."""

import shutil

import numpy as np
import pytest
from PIL import Image

from munet.cli import main
from munet.cli.errors import (
    EXIT_BAD_INPUT,
    EXIT_DAMAGED_STATE,
    EXIT_NO_PERMISSION,
    EXIT_OS_ERROR,
)
from munet.models import registry as checkpoints
from tests.agents.conftest import TINY_OVERRIDES
from tests.agents.test_own_data import write_flowers
from tests.cli.test_errors import _in_namespace, _split

SETS = [arg for item in TINY_OVERRIDES for arg in ("--set", item)]


def _files(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")) if folder.exists() else []


@pytest.fixture(scope="module")
def grown(tmp_path_factory):
    """A state dir with a root model and one cycle of a digits agent, and its export."""
    base = tmp_path_factory.mktemp("grown")
    state = base / "state"
    assert main(["root", "--agent", "VitCpu", "-d", str(state), *SETS, "-q"]) == 0
    run = ["run", "--agent", "VitCpu", "--task", "digits", "--cycles", "1"]
    assert main([*run, "-d", str(state), *SETS, "-q"]) == 0
    export = base / "export"
    assert main(["export", "-d", str(state), "--task", "digits", "--out", str(export)]) == 0
    return state, export


def test_demo_with_negative_cycles_exits_2_and_writes_nothing(tmp_path, capsys):
    state = tmp_path / "demo"
    assert main(["demo", "-d", str(state), "--cycles", "-1"]) == EXIT_BAD_INPUT
    assert "cycles=-1: expected a whole number >= 1" in capsys.readouterr().err
    assert main(["demo", "-d", str(state), "--workers", "0"]) == EXIT_BAD_INPUT
    assert "workers=0" in capsys.readouterr().err
    # A preset without a multipath preset over it cannot run the demo's second stage.
    assert main(["demo", "-d", str(state), "--agent", "MultiVitCpu"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "demo agent 'MultiVitCpu': expected a singlepath preset" in err and "VitCpu," in err
    assert not state.exists()


def test_a_refused_run_on_a_missing_state_dir_creates_nothing(tmp_path, capsys):
    state = tmp_path / "nothing-here"
    argv = ["run", "--agent", "VitCpu", "--task", "digits", "--cycles", "1", "-d", str(state)]
    assert main(argv) == EXIT_BAD_INPUT
    assert "create a root model first" in capsys.readouterr().err
    assert not state.exists()
    multi = ["run", "--agent", "MultiVitCpu", "--task", "digits", "--cycles", "1"]
    assert main([*multi, "-d", str(state)]) == EXIT_BAD_INPUT
    assert "munet run --agent VitCpu --task digits" in capsys.readouterr().err
    assert not state.exists()


@pytest.mark.parametrize(
    "arrays, said",
    [
        ({"x": np.full((40, 6, 6), np.nan, np.float32), "y": np.arange(40) % 3}, "NaN or infinite"),
        ({"x": np.zeros((40, 6, 6), np.uint8), "y": np.arange(40) * 2**35}, "label "),
        ({"x": np.zeros((40, 6, 6), np.uint8), "y": np.zeros(40, np.int64)}, "1 classes"),
    ],
)
def test_bad_data_leaves_no_agent_folder(grown, tmp_path, capsys, arrays, said):
    state, _ = grown
    before = _files(state)
    npz = tmp_path / "data.npz"
    np.savez(npz, **arrays)
    argv = ["run", "--agent", "VitCpu", "--task", "mine", "--data", f"npz:{npz}", "--cycles", "1"]
    assert main([*argv, "-d", str(state), "-q"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert said in err and err.count("\n") == 1, err
    assert _files(state) == before  # No agent folder, no lock.


def test_bad_image_files_are_named_before_work_and_can_be_skipped(grown, tmp_path, capsys):
    state, _ = grown
    data = write_flowers(tmp_path / "flowers", train_per_class=12, test_per_class=3)
    empty = data / "train" / "rose" / "001.jpg"
    empty.write_bytes(b"")
    broken = data / "test" / "daisy" / "002.png"
    broken.write_bytes(broken.read_bytes()[:30])
    before = _files(state)
    argv = ["run", "--agent", "VitCpu", "--task", "flowers", "--data", f"folder:{data}"]
    argv += ["--cycles", "1", "-d", str(state), *SETS, "-q"]
    assert main(argv) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "2 of 45 image files cannot be read" in err and "--skip-bad-files" in err
    assert f"{empty}: empty file (0 bytes)" in err and f"{broken}: " in err
    assert _files(state) == before
    assert main([*argv, "--skip-bad-files"]) == 0
    captured = capsys.readouterr()
    assert "leaving them out" in captured.err and str(empty) in captured.err
    assert "VitCpu~flowers: 1 cycles" in captured.out


def test_predict_with_unreadable_images_predicts_the_rest_and_exits_2(grown, tmp_path, capsys):
    _, export = grown
    images = tmp_path / "images"
    images.mkdir()
    for i in range(3):
        pixels = np.random.default_rng(i).integers(0, 255, (8, 8), dtype=np.uint8)
        Image.fromarray(pixels).save(images / f"ok{i}.png")
    (images / "bad.png").write_bytes(b"no image")
    assert main(["predict", str(export), str(images), "--format", "csv"]) == EXIT_BAD_INPUT
    captured = capsys.readouterr()
    assert f"skipping {images / 'bad.png'}" in captured.err
    assert "1 of 4 images could not be read" in captured.err
    assert len(captured.out.strip().splitlines()) == 1 + 3  # header + the readable ones


def test_checkpoint_fetch_offline_exits_9_naming_the_url(tmp_path, monkeypatch, capsys):
    # Port 9 on localhost refuses connections: offline, without touching the network.
    monkeypatch.setattr(checkpoints, "AUGREG_BASE_URL", "http://127.0.0.1:9/")
    url = checkpoints.checkpoint_spec("VitB").url
    code = main(["checkpoint", "fetch", "VitB", "--dest", str(tmp_path), "--timeout", "5"])
    assert code == EXIT_OS_ERROR
    errors = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert len(errors) == 1 and errors[0].startswith("munet: error: cannot download")
    assert url in errors[0] and "no network" in errors[0]


@pytest.mark.parametrize("command", ["report", pytest.param("export", marks=pytest.mark.slow)])
def test_a_read_only_out_exits_7_naming_the_out_path(grown, tmp_path, command):
    state, _ = grown
    out = tmp_path / "mnt" / ("r.html" if command == "report" else "model")
    argv = [command, "-d", str(state), "--out", str(out)]
    argv += ["--task", "digits"] if command == "export" else []
    proc = _in_namespace(tmp_path, "ro", "4m", *argv)
    _, errors = _split(proc)
    assert proc.returncode == EXIT_NO_PERMISSION, proc.stderr
    assert len(errors) == 1 and errors[0].startswith("munet: error: read-only file system")
    assert f"cannot write --out {out}" in errors[0]
    assert "state dir" not in errors[0]


@pytest.mark.parametrize(
    "damage, said",
    [
        (lambda text: text.replace("agent_id,", "agent,", 1), "header lacks the columns agent_id"),
        (lambda text: text + "VitCpu~digits,digits,0,-1\n", "fewer cells than the header"),
        (lambda text: text.replace("VitCpu~digits", "VitCpu~other"), "is a path of 'VitCpu~other'"),
        (lambda text: text.splitlines()[0] + "\n", "has 0 rows; the manifest records"),
        (lambda text: "\udcff", "paths.csv"),
    ],
)
def test_doctor_finds_a_damaged_paths_csv(grown, tmp_path, capsys, damage, said):
    state = tmp_path / "state"
    shutil.copytree(grown[0], state)
    history = state / "VitCpu~digits" / "state_1_0" / "paths.csv"
    text = history.read_text()
    assert main(["doctor", "-d", str(state)]) == 0
    damaged = damage(text)
    history.write_bytes(damaged.encode("utf-8", "surrogateescape"))
    capsys.readouterr()
    assert main(["doctor", "-d", str(state)]) == EXIT_DAMAGED_STATE
    out = capsys.readouterr().out
    assert "damaged VitCpu~digits/state_1_0: state VitCpu~digits/state_1_0: paths.csv" in out
    assert said in out
