"""`munet launch --log-dir`: each Ray worker writes its agent's TensorBoard events under the
log dir, one subdir per agent (local Ray, 2 CPUs, 127.0.0.1 only)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("ray")
pytest.importorskip("tensorboard")

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::DeprecationWarning")]


def test_launch_workers_write_one_event_dir_per_agent(tmp_path, tiny_overrides):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    state_dir, logs = str(tmp_path / "state"), str(tmp_path / "logs")
    sets = [arg for o in tiny_overrides for arg in ("--set", o)]
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    done = subprocess.run(
        [sys.executable, "-m", "munet", "launch", "--agent", "VitCpu", "--tasks",
         "digits,synth/shape", "--cycles", "1", "-d", state_dir, "--num-cpus", "2",
         "--root", "random_init", "--log-dir", logs, *sets],
        env=env, capture_output=True, text=True, timeout=540,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    for agent_id, task in (("VitCpu~digits", "digits"), ("VitCpu~synth~shape", "synth/shape")):
        events = EventAccumulator(os.path.join(logs, agent_id))
        events.Reload()
        tags = set(events.Tags()["scalars"])
        assert f"{task}/cycle/test_quality" in tags, (agent_id, sorted(tags))
        # Each path's curves: a sub-run under <agent>/paths/, one tag per metric.
        path_tags = set()
        for folder, _, files in os.walk(os.path.join(logs, agent_id, "paths")):
            if any(name.startswith("events.out.tfevents") for name in files):
                path_events = EventAccumulator(folder)
                path_events.Reload()
                path_tags.update(path_events.Tags()["scalars"])
        assert f"{task}/paths/train_loss" in path_tags, (agent_id, sorted(path_tags))
        assert [e.step for e in events.Scalars(f"{task}/cycle/best_quality")] == [1]
