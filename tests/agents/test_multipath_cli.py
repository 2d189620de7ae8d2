"""`munet run --agent MultiVitCpu` end to end: real processes, a kill mid-cycle, a resume, and
the published paths rebuilt in a fresh process with the same logits."""

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
import torch
from safetensors.torch import load_file

from munet.agents.demo import multipath_overrides
from munet.cli import main
from munet.system import SystemStore

from .conftest import TINY_OVERRIDES

REPO = Path(__file__).resolve().parents[2]
SP_SETS = [arg for item in TINY_OVERRIDES for arg in ("--set", item)]
MP_SETS = [arg for item in multipath_overrides(TINY_OVERRIDES) for arg in ("--set", item)]
MULTI = "MultiVitCpu~digits"

# Rebuilds the best path of an agent from the state dir alone and writes its logits on fixed
# inputs (one batch per image size the model reads).
LOGITS_SCRIPT = """
import sys, torch
from safetensors.torch import save_file
from munet.agents.runner import make_agent, resolve_config
from munet.system import SystemStore
state, agent_class, task, out = sys.argv[1:5]
store = SystemStore(state)
config = resolve_config(agent_class, (), store, task)
agent = make_agent(config, task, store, progress=False, echo=lambda _: None)
population, *_ = agent.load_population(announce=False)
best = population.get_best_path()
sizes = best.hparams["ds_image_size"]
generator = torch.Generator().manual_seed(0)
images = {int(s): torch.rand(5, 3, int(s), int(s), generator=generator) for s in sizes}
with torch.no_grad():
    logits = agent.build_model(best, torch.device("cpu"), train=False).model(images)
save_file({"logits": logits.contiguous()}, out)
print(best.full_id)
"""


def _cli(*argv):
    return main([*argv, "-q"])


def test_multipath_run_errors_and_leaderboard(tmp_path, capsys):
    state = str(tmp_path / "state")
    assert _cli("root", "--agent", "VitCpu", "-d", state, *SP_SETS) == 0
    # No state of the task's singlepath agent yet: a clear error naming what to run.
    code = _cli("run", "--agent", "MultiVitCpu", "--task", "digits", "--cycles", "1", "-d",
                state, *MP_SETS)  # fmt: skip
    assert code != 0
    assert "munet run --agent VitCpu --task digits" in capsys.readouterr().err
    assert _cli("root", "--agent", "MultiVitCpu", "-d", state) != 0
    assert "munet root --agent VitCpu" in capsys.readouterr().err
    for task in ("digits", "synth/color"):
        assert _cli("run", "--agent", "VitCpu", "--task", task, "--cycles", "1", "-d", state,
                    *SP_SETS) == 0  # fmt: skip
    assert _cli("run", "--agent", "MultiVitCpu", "--task", "digits", "--cycles", "1", "-d",
                state, *MP_SETS) == 0  # fmt: skip
    capsys.readouterr()
    assert main(["leaderboard", "-d", state, "--format", "json"]) == 0
    rows = {row["agent_id"]: row for row in json.loads(capsys.readouterr().out)}
    paths = rows[MULTI]["paths"].split()
    assert paths[0].startswith("VitCpu~digits:") and len(paths) >= 2
    assert rows["VitCpu~digits"]["paths"] == ""
    assert main(["leaderboard", "-d", state]) == 0
    assert rows[MULTI]["paths"] in capsys.readouterr().out
    assert main(["leaderboard", "-d", state, "--format", "csv"]) == 0
    csv_rows = {r["agent_id"]: r for r in csv.DictReader(io.StringIO(capsys.readouterr().out))}
    assert csv_rows[MULTI]["paths"] == rows[MULTI]["paths"]


@pytest.mark.slow
def test_killed_multipath_run_resumes_and_loads_in_a_fresh_process(tmp_path):
    state = tmp_path / "state"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    base = [sys.executable, "-m", "munet"]

    def run(*argv, **kwargs):
        return subprocess.run([*base, *argv, "-q"], env=env, check=True, **kwargs)

    run("root", "--agent", "VitCpu", "-d", str(state), *SP_SETS)
    for task in ("digits", "synth/color", "synth/count"):
        run("run", "--agent", "VitCpu", "--task", task, "--cycles", "1", "-d", str(state),
            *SP_SETS, stdout=subprocess.DEVNULL)  # fmt: skip
    # Longer cycles than the other tests, so the kill lands mid-cycle.
    sets = MP_SETS + ["--set", "num_samples_per_cycle=6", "--set",
                      "num_train_examples_between_validations_max=128"]  # fmt: skip
    multi = [*base, "run", "--agent", "MultiVitCpu", "--task", "digits", "--cycles", "2",
             "-d", str(state), *sets, "-q"]  # fmt: skip
    process = subprocess.Popen(multi, env=env, stdout=subprocess.DEVNULL)
    agent_dir = state / MULTI
    deadline = time.time() + 120
    while time.time() < deadline and process.poll() is None:
        if (agent_dir / "state_1_2").exists():
            break
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    assert process.wait() == -signal.SIGKILL, "the run ended before it could be killed"
    assert sorted(p.name for p in agent_dir.glob("state_*")), "killed before any commit"
    subprocess.run(multi, env=env, check=True, stdout=subprocess.DEVNULL)

    store = SystemStore(str(state))
    assert [s.name for s in store.list_states(MULTI)] == ["state_1_0", "state_2_0"]
    assert store.verify_state(store.latest_state(MULTI)) > 0
    # Two fresh processes rebuild the best path from the state dir: same logits.
    outputs = []
    for index in range(2):
        out = tmp_path / f"logits{index}.safetensors"
        done = subprocess.run(
            [sys.executable, "-c", LOGITS_SCRIPT, str(state), "MultiVitCpu", "digits", str(out)],
            env=env, check=True, capture_output=True, text=True,
        )  # fmt: skip
        assert done.stdout.startswith(f"{MULTI}:")
        outputs.append(load_file(str(out))["logits"])
    assert outputs[0].shape == (5, 10)
    assert torch.equal(outputs[0], outputs[1])
    # And in this process, from the same store: the same logits again.
    from munet.agents.runner import make_agent, resolve_config

    config = resolve_config("MultiVitCpu", (), store, "digits")
    agent = make_agent(config, "digits", store, progress=False, echo=lambda _: None)
    best = agent.load_population(announce=False)[0].get_best_path()
    generator = torch.Generator().manual_seed(0)
    images = {
        int(s): torch.rand(5, 3, int(s), int(s), generator=generator)
        for s in best.hparams["ds_image_size"]
    }
    with torch.no_grad():
        here = agent.build_model(best, torch.device("cpu"), train=False).model(images)
    assert torch.equal(here, outputs[0])
    # The multipath model is not its path_0 alone: the router mixes in the other paths.
    assert len(best.hparams["paths"]) >= 2
