"""The tracking backends on hand-made events (no agent run): what a failed path and a
multipath path's hparams become, and the settings' names and directories."""

from __future__ import annotations

import math
import os

import pytest

from munet.tracking import (
    CyclePoint,
    GenerationPoint,
    MultiTracker,
    NullTracker,
    PathCurve,
    Tracker,
    TrackingSettings,
)

FAILED = PathCurve(
    agent_id="MultiVitCpu~digits",
    task="digits",
    path_id=7,
    cycle=1,
    generation=2,
    eval_steps=[4, 8],
    train_losses=[1.5, float("nan")],
    evals=[0.5, float("nan")],
    quality=0.5,
    score=0.45,
    improved=True,
    hparams={"ds_image_size": [8, 16], "paths": {"path_0": {"id": 3}}, "opt_lr": 0.1,
             "_mu_|hp:opt_lr": 0.2},
)  # fmt: skip


class Recorder:
    def __init__(self) -> None:
        self.events: list[object] = []

    def path_trained(self, curve):
        self.events.append(curve)

    def generation_done(self, point):
        self.events.append(point)

    def cycle_done(self, point):
        self.events.append(point)

    def close(self):
        self.events.append("closed")


def test_multi_tracker_forwards_every_event_in_order():
    a, b = Recorder(), Recorder()
    tracker = MultiTracker([a, b])
    assert isinstance(tracker, Tracker) and isinstance(NullTracker(), Tracker)
    point = GenerationPoint("A~t", "t", 0, 1, 1, 0.5, 0.4, 1)
    tracker.path_trained(FAILED)
    tracker.generation_done(point)
    tracker.close()
    assert a.events == b.events == [FAILED, point, "closed"]


def test_tensorboard_leaves_non_finite_values_out_and_writes_list_hparams(tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    settings = TrackingSettings(log_dir=str(tmp_path / "logs"), state_dir=str(tmp_path / "s"))
    tracker = settings.open("MultiVitCpu~digits")
    tracker.path_trained(FAILED)
    tracker.cycle_done(CyclePoint("MultiVitCpu~digits", "digits", 2, 7, 0.5, 0.45, float("nan")))
    tracker.close()
    run_dir = os.path.join(tmp_path, "logs", "MultiVitCpu~digits")
    events = EventAccumulator(run_dir)
    events.Reload()
    assert "digits/cycle/test_quality" not in events.Tags()["scalars"]  # NaN: left out
    assert events.Scalars("digits/cycle/best_quality")[0].step == 2
    # The path's curves: its own sub-run, under one tag per metric (one chart, every path).
    assert not [tag for tag in events.Tags()["scalars"] if "path_" in tag]
    hparams = EventAccumulator(os.path.join(run_dir, "paths", "digits", "path_7"))
    hparams.Reload()
    assert [(e.step, e.value) for e in hparams.Scalars("digits/paths/train_loss")] == [(4, 1.5)]
    assert [e.step for e in hparams.Scalars("digits/paths/val_quality")] == [4]
    assert math.isclose(hparams.Scalars("hparam/score")[0].value, 0.45, rel_tol=1e-6)
    content = hparams.PluginTagToContent("hparams")["_hparams_/session_start_info"]
    assert b'"path_0"' in content and b"ds_image_size" in content and b"_mu_" not in content


def test_settings_name_runs_after_the_state_dir_and_agent(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    settings = TrackingSettings(log_dir="runs", wandb=True, state_dir="state/my system")
    assert settings.log_dir == str(tmp_path / "runs")  # absolute, for Ray workers
    assert settings.agent_log_dir("VitCpu~synth~shape") == str(tmp_path / "runs/VitCpu~synth~shape")
    assert settings.project() == "munet-my-system"
    assert TrackingSettings(wandb=True, wandb_project="mine").project() == "mine"
    run_id = settings.run_id("VitCpu~synth~shape")
    assert run_id.startswith("VitCpu-synth-shape-") and run_id == settings.run_id(
        "VitCpu~synth~shape"
    )
    assert run_id != TrackingSettings(wandb=True, state_dir="other").run_id("VitCpu~synth~shape")
    assert not TrackingSettings(state_dir="s").enabled
    assert isinstance(TrackingSettings(state_dir="s").open("A~t"), NullTracker)
