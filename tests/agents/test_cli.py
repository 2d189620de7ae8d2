import csv
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from munet.cli import main
from munet.system import SystemStore

from .conftest import TINY_OVERRIDES

SETS = [arg for item in TINY_OVERRIDES for arg in ("--set", item)]
REPO = Path(__file__).resolve().parents[2]


def test_root_run_leaderboard(tmp_path, capsys):
    state = str(tmp_path / "state")
    assert main(["root", "--agent", "VitCpu", "-d", state, *SETS, "-q"]) == 0
    assert "VitCpu~root_model~pretrained:0" in capsys.readouterr().out
    assert (
        main(
            [
                "run",
                "--agent",
                "VitCpu",
                "--task",
                "digits",
                "--cycles",
                "1",
                "-d",
                state,
                *SETS,
                "-q",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "VitCpu~digits: 1 cycles; best path VitCpu~digits:" in out
    # Quiet (issue 17, item 9; issue 24): one line per cycle with the time taken, then the
    # result line; no per-generation summary.
    assert out.count("\n") == 2 and "generation [" not in out
    assert "VitCpu~digits: cycle 1/1 done; best path VitCpu~digits:" in out
    assert "(elapsed " in out

    assert main(["leaderboard", "-d", state]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].startswith("agent_id")
    assert [line.split()[0] for line in table[1:3]] == [
        "VitCpu~digits",
        "VitCpu~root_model~pretrained",
    ]
    assert main(["leaderboard", "-d", state, "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert rows[0]["task_name"] == "digits" and 0 <= float(rows[0]["test_quality"]) <= 1
    assert main(["leaderboard", "-d", state, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data[0]["parent_agent_id"] == "VitCpu~root_model~pretrained"


def test_rerun_uses_the_stored_config(tmp_path, capsys):
    state = str(tmp_path / "state")
    main(["root", "--agent", "VitCpu", "-d", state, *SETS, "-q"])
    main(
        ["run", "--agent", "VitCpu", "--task", "digits", "--cycles", "1", "-d", state, *SETS, "-q"]
    )
    # No --set this time: the tiny config stored with the state is reused, not the preset.
    assert (
        main(["run", "--agent", "VitCpu", "--task", "digits", "--cycles", "2", "-d", state, "-q"])
        == 0
    )
    store = SystemStore(state)
    manifest = store.read_manifest(store.latest_state("VitCpu~digits"))
    assert manifest["cycle"] == 2 and manifest["config"]["batch_size"] == 8


@pytest.mark.parametrize(
    "argv, message",
    [
        (["run", "--agent", "VitT4", "--task", "digits", "--cycles", "1"], "unknown agent 'VitT4'"),
        (["run", "--agent", "VitCpu", "--task", "digts", "--cycles", "1"], "unknown task 'digts'"),
        (
            [
                "run",
                "--agent",
                "VitCpu",
                "--task",
                "digits",
                "--cycles",
                "1",
                "--set",
                "bach_size=2",
            ],
            "unknown config key 'bach_size' (did you mean 'batch_size'",
        ),
        (["run", "--agent", "VitCpu", "--task", "digits", "--cycles", "1"], "create a root model"),
        (["root", "--agent", "VitCpu", "--root", "checkpoint"], "needs a local checkpoint file"),
        (["leaderboard"], "no state dir at"),
    ],
)
def test_bad_input_is_a_clear_error_and_does_no_work(tmp_path, capsys, argv, message):
    state = tmp_path / "state"
    assert main([*argv, "-d", str(state)]) == 2
    assert message in capsys.readouterr().err
    assert not any(state.glob("*/state_*"))


@pytest.mark.parametrize("workers", ["1", pytest.param("2", marks=pytest.mark.slow)])
def test_demo_runs_and_resumes(tmp_path, capsys, workers):
    """The demo's default preset (VitCpuHybrid, tiny) and its multipath preset."""
    state = str(tmp_path / "demo")
    argv = ["demo", "-d", state, "--cycles", "1", "--task", "digits", "--task", "synth/color"]
    argv += ["--workers", workers, *SETS]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "VitCpuHybrid~synth~color" in out and "State: " in out
    assert "shares components of:" in out
    # The multipath stage on the weakest tasks, compared with singlepath.
    assert "multipath stage: MultiVitCpuHybrid on" in out
    assert out.count("beat singlepath") == 2 and "MultiVitCpuHybrid~digits" in out
    if workers == "1":
        # One line per generation, in this process (the per-path detail is -v's).
        assert "VitCpuHybrid~digits: cycle 1/1 gen 2/2:" in out and "generation [" not in out
    else:
        assert "running 2 agents, 2 at a time" in out
        assert "digits         cycle 1/1 done" in out
    # Rerun: nothing left to do, the same leaderboard.
    assert main(argv) == 0
    again = capsys.readouterr().out
    assert "gen 1/" not in again and "cycle 1/1 done" not in again
    assert (
        out.split("agent_id")[1].split("Demo time")[0]
        == again.split("agent_id")[1].split("Demo time")[0]
    )


@pytest.mark.slow
def test_killed_run_resumes_to_completion(tmp_path):
    state = tmp_path / "state"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    # Longer generations than the other tests, so the kill lands mid-run.
    sets = SETS + ["--set", "num_samples_per_cycle=6"]
    sets += ["--set", "num_train_examples_between_validations_max=128"]
    base = [sys.executable, "-m", "munet"]
    subprocess.run(
        [*base, "root", "--agent", "VitCpu", "-d", str(state), *sets, "-q"], env=env, check=True
    )
    run = [
        *base,
        "run",
        "--agent",
        "VitCpu",
        "--task",
        "digits",
        "--cycles",
        "2",
        "-d",
        str(state),
        *sets,
        "-q",
    ]
    process = subprocess.Popen(run, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    agent_dir = state / "VitCpu~digits"
    deadline = time.time() + 120
    # Kill it once it committed a mid-cycle state of its second cycle (or anything, late).
    while time.time() < deadline and process.poll() is None:
        if (agent_dir / "state_1_2").exists():
            break
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    assert process.wait() == -signal.SIGKILL, "the run ended before it could be killed"
    committed = sorted(p.name for p in agent_dir.glob("state_*"))
    assert committed, "the run was killed before committing anything"
    subprocess.run(run, env=env, check=True, stdout=subprocess.DEVNULL)
    store = SystemStore(str(state))
    assert [s.name for s in store.list_states("VitCpu~digits")] == ["state_1_0", "state_2_0"]
    (best,) = store.load("VitCpu~digits").population.own_paths
    assert best.metrics["test_quality"] >= 0 and best.metrics["num_cycles"] >= 1
    assert store.verify_state(store.latest_state("VitCpu~digits")) > 0


@pytest.mark.slow
def test_agents_of_two_tasks_run_concurrently_on_one_state_dir(tmp_path):
    state = tmp_path / "state"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    base = [sys.executable, "-m", "munet"]
    subprocess.run(
        [*base, "root", "--agent", "VitCpu", "-d", str(state), *SETS, "-q"], env=env, check=True
    )
    processes = [
        subprocess.Popen(
            [
                *base,
                "run",
                "--agent",
                "VitCpu",
                "--task",
                task,
                "--cycles",
                "2",
                "-d",
                str(state),
                "-q",
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for task in ("digits", "synth/color")
    ]
    for process in processes:
        _, err = process.communicate(timeout=600)
        assert process.returncode == 0, err
    store = SystemStore(str(state))
    for agent_id in ("VitCpu~digits", "VitCpu~synth~color"):
        assert store.latest_state(agent_id).name == "state_2_0"
    # A third agent sees both published paths.
    loaded = store.load("VitCpu~synth~count", ["VitCpu"])
    assert {"VitCpu~digits", "VitCpu~synth~color"} <= set(loaded.population.paths)
