"""Learning curves stored per path (metrics eval_steps / train_losses aligned with evals, in
the state and paths.csv) and written to TensorBoard and W&B (offline) by a tiny `munet run`."""

from __future__ import annotations

import csv
import glob
import io
import json
import math
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from munet.cli import main
from tests.agents.conftest import TINY_OVERRIDES

SETS = [arg for item in TINY_OVERRIDES for arg in ("--set", item)]
AGENT = "VitCpu~digits"
REPO = Path(__file__).resolve().parents[2]


def _paths_csv(state) -> list[dict[str, str]]:
    (path,) = glob.glob(os.path.join(state, AGENT, "state_1_0", "paths.csv"))
    with open(path) as handle:
        return list(csv.DictReader(io.StringIO(handle.read())))


def _scalars(run_dir: str) -> dict[str, list[tuple[int, float]]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(run_dir)
    events.Reload()
    return {
        tag: [(e.step, e.value) for e in events.Scalars(tag)]
        for tag in events.Tags()["scalars"]
    }


def _wandb_history(run_file: str) -> list[dict[str, object]]:
    """The history rows of an offline W&B run file (a LevelDB-style log of protobuf records:
    a 7-byte file header, 32 KiB blocks, 7-byte record headers: crc, length, type)."""
    from wandb.proto import wandb_internal_pb2

    data = open(run_file, "rb").read()
    assert data[:4] == b":W&B"
    rows, pos, pending, block = [], 7, b"", 32768
    while pos + 7 <= len(data):
        if block - pos % block < 7:
            pos += block - pos % block
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        if kind == 0 and length == 0:
            break
        pending += data[pos + 7 : pos + 7 + length]
        pos += 7 + length
        if kind in (1, 4):  # a full record, or the last piece of one
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            pending = b""
            if record.WhichOneof("record_type") == "history":
                rows.append(
                    {
                        i.key or "/".join(i.nested_key): json.loads(i.value_json)
                        for i in record.history.item
                    }
                )
    return rows


def test_a_tiny_run_stores_curves_and_writes_tensorboard_and_wandb(tmp_path, monkeypatch):
    pytest.importorskip("tensorboard")
    pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    state, logs = str(tmp_path / "state"), str(tmp_path / "logs")
    assert main(["root", "--agent", "VitCpu", "-d", state, *SETS, "-q"]) == 0
    assert main(["run", "--agent", "VitCpu", "--task", "digits", "--cycles", "1", "-d", state,
                 "--log-dir", logs, "--wandb", *SETS, "-q"]) == 0  # fmt: skip

    # paths.csv: the new columns, aligned one-to-one with evals, finite losses.
    rows = _paths_csv(state)
    assert len(rows) == 2  # num_samples_per_cycle=2
    curves = {}
    for row in rows:
        evals = json.loads(row["metrics.evals"])
        steps = json.loads(row["metrics.eval_steps"])
        losses = json.loads(row["metrics.train_losses"])
        assert len(evals) == len(steps) == len(losses) == 2  # 2 validations
        assert steps == [2, 4]  # 16 examples / batch 8 = 2 steps between validations
        assert all(math.isfinite(v) and v > 0 for v in losses)
        curves[int(row["id"])] = (steps, losses, evals)

    # TensorBoard: one run per agent, the curves of each path, generations, the cycle.
    run_dir = os.path.join(logs, AGENT)
    scalars = _scalars(run_dir)
    # Each path a sub-run with the same tags: TensorBoard draws one chart per metric.
    for path_id, (steps, losses, evals) in curves.items():
        path_scalars = _scalars(os.path.join(run_dir, "paths", "digits", f"path_{path_id}"))
        loss_points = path_scalars["digits/paths/train_loss"]
        assert [s for s, _ in loss_points] == steps
        assert [v for _, v in loss_points] == pytest.approx(losses, rel=1e-6)
        assert [v for _, v in path_scalars["digits/paths/val_quality"]] == pytest.approx(evals)
        assert path_scalars["hparam/quality"][0][1] == pytest.approx(max(evals))
    assert [s for s, _ in scalars["digits/generation/best_quality"]] == [0, 1]
    assert [s for s, _ in scalars["digits/cycle/test_quality"]] == [1]
    best_test = scalars["digits/cycle/test_quality"][0][1]
    assert 0.0 <= best_test <= 1.0
    # The cycle's best quality is the published path's (re-scored on the whole validation
    # split by VitCpu's rescore_finalists, so not necessarily the last generation's figure).
    from munet.system import SystemStore

    best = SystemStore(state).load("VitCpu~digits", ["VitCpu"]).population.get_best_path()
    assert scalars["digits/cycle/best_quality"][0][1] == pytest.approx(best.metrics["quality"])
    assert "capped_quality" in best.metrics

    # W&B, offline: the run directory under the agent's log dir, with the same values.
    (run_file,) = glob.glob(os.path.join(run_dir, "wandb", "offline-run-*", "run-*.wandb"))
    history = _wandb_history(run_file)
    for path_id, (steps, losses, _evals) in curves.items():
        logged = [r for r in history if f"digits/path_{path_id}/train_loss" in r]
        assert [r[f"digits/path_{path_id}/step"] for r in logged] == steps
        assert [r[f"digits/path_{path_id}/train_loss"] for r in logged] == pytest.approx(losses)
    cycle_rows = [r for r in history if "digits/cycle/test_quality" in r]
    assert [r["digits/cycle_index"] for r in cycle_rows] == [1]
    assert cycle_rows[0]["digits/cycle/test_quality"] == pytest.approx(best_test)
    assert any("digits/paths/_type" in r for r in history)  # the paths' hparams table


@pytest.mark.parametrize(
    ("flag", "module", "extra"),
    [
        ("--log-dir", "tensorboard", "munet-evolve[tensorboard]"),
        ("--wandb", "wandb", "munet-evolve[wandb]"),
    ],
)
def test_a_missing_backend_names_its_extra(tmp_path, monkeypatch, capsys, flag, module, extra):
    monkeypatch.setitem(sys.modules, module, None)  # import fails as if not installed
    args = [flag, str(tmp_path / "logs")] if flag == "--log-dir" else [flag]
    code = main(["run", "--agent", "VitCpu", "--task", "digits", "--cycles", "1",
                 "-d", str(tmp_path / "state"), *args, *SETS, "-q"])  # fmt: skip
    assert code == 2
    assert extra in capsys.readouterr().err
    assert not (tmp_path / "state").exists()  # refused before any work


@pytest.mark.slow  # two munet processes and a W&B run (about 35 s on a loaded 2-core box)
def test_wandb_with_q_prints_no_wandb_lines(tmp_path):
    pytest.importorskip("wandb")
    # A subprocess: W&B's console lines go to the process's own streams (and WANDB_SILENT,
    # which this test must not have, is read from the environment).
    state = str(tmp_path / "state")
    env = {k: v for k, v in os.environ.items() if not k.startswith("WANDB_")}
    env.update(WANDB_MODE="offline", PYTHONPATH=str(REPO), OMP_NUM_THREADS="1")
    munet = [sys.executable, "-m", "munet"]
    subprocess.run([*munet, "root", "--agent", "VitCpu", "-d", state, *SETS, "-q"],
                   env=env, check=True, capture_output=True)  # fmt: skip
    result = subprocess.run(
        [*munet, "run", "--agent", "VitCpu", "--task", "digits", "--cycles", "1", "-d", state,
         "--wandb", "--log-dir", str(tmp_path / "logs"), *SETS, "-q"],
        env=env, capture_output=True, text=True, cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "wandb" not in result.stdout + result.stderr
    assert len(result.stdout.splitlines()) == 2  # the cycle line and the result line
    assert glob.glob(str(tmp_path / "logs" / AGENT / "wandb" / "offline-run-*"))  # it logged
