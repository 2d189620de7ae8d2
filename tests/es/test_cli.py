"""`munet es influence` and `munet es lr` through munet.cli.main, on tiny configurations."""

import pytest

from munet.cli import main


def test_influence_prints_each_estimator_and_the_optimum(tmp_path, capsys):
    plot = tmp_path / "influence.png"
    code = main(["es", "influence", "--steps", "30", "--particles", "50", "--plot", str(plot)])
    out = capsys.readouterr().out
    assert code == 0
    assert "true optimum: theta* = -0.166667" in out
    for label in ("tbptt (K=1)", "tes (K=1)", "pes (K=1)"):
        assert label in out
    assert plot.stat().st_size > 1000 and plot.read_bytes()[:4] == b"\x89PNG"


def test_lr_runs_every_estimator_saves_and_resumes(tmp_path, capsys):
    args = [
        "es", "lr", "--episode-length", "10", "--truncation-length", "5", "--particles", "2",
        "--grid=-1,0", "--eval-runs", "2", "--estimators", "pes,tes,tbptt,full_es",
        "--checkpoint", str(tmp_path / "runs"),
    ]  # fmt: skip
    assert main(args + ["--steps", "2", "--plot", str(tmp_path / "lr.png")]) == 0
    out = capsys.readouterr().out
    assert "best fixed rate: log10 lr" in out
    for label in ("pes (K=5)", "tes (K=5)", "tbptt (K=5)", "full_es"):
        assert label in out
    assert (tmp_path / "lr.png").exists()
    assert (tmp_path / "runs" / "pes" / "estimator.safetensors").exists()
    assert main(args + ["--steps", "4", "--estimators", "pes"]) == 0
    assert "[pes] resumed from" in capsys.readouterr().out


def test_unknown_estimator_is_named(capsys):
    with pytest.raises(SystemExit):
        main(["es", "lr", "--estimators", "pes,pse"])
    assert "unknown estimator 'pse'; known: full_es, tes, pes, tbptt" in capsys.readouterr().err


def test_bad_settings_are_reported_without_a_traceback(capsys):
    assert main(["es", "influence", "--particles", "0", "--steps", "1"]) == 2
    assert "num_particles must be a positive int, got 0" in capsys.readouterr().err


def test_es_without_a_problem_prints_help(capsys):
    assert main(["es"]) == 2
    assert "influence" in capsys.readouterr().out


def _result_lines(out):
    return [line for line in out.splitlines() if line.startswith(("pes", "tes", "true"))]


def test_influence_on_several_devices_prints_what_one_device_does(capsys, monkeypatch):
    monkeypatch.setattr("munet.es.devices._cuda_count", lambda: 0)  # --devices 2: CPU shards
    args = ["es", "influence", "--steps", "40", "--particles", "40", "--estimators", "pes,tes"]
    assert main(args) == 0
    single = capsys.readouterr().out
    assert main(args + ["--devices", "2"]) == 0
    multi = capsys.readouterr().out
    assert "pes/tes: 40 particles over 2 devices (cpu, cpu), separate data" in multi
    assert _result_lines(multi)[1:] == _result_lines(single) and len(_result_lines(single)) == 3


def test_lr_on_devices_saves_and_resumes_on_another_device_list(tmp_path, capsys):
    args = [
        "es", "lr", "--episode-length", "10", "--truncation-length", "5", "--particles", "6",
        "--grid=-1", "--eval-runs", "2", "--estimators", "pes,tes", "--replicate-data",
        "--checkpoint", str(tmp_path / "runs"),
    ]  # fmt: skip
    assert main(args + ["--steps", "2", "--devices", "cpu,cpu"]) == 0
    out = capsys.readouterr().out
    assert "6 particles over 2 devices (cpu, cpu), the same data on every device" in out
    assert "pes (K=5)" in out and "tes (K=5)" in out
    assert main(args + ["--steps", "3", "--devices", "cpu,cpu,cpu"]) == 0
    out = capsys.readouterr().out
    assert "[pes] resumed from" in out and "[tes] resumed from" in out


def test_bad_device_settings_are_reported_without_a_traceback(capsys, monkeypatch):
    monkeypatch.setattr("munet.es.devices._cuda_count", lambda: 0)
    base = ["es", "influence", "--steps", "1", "--particles", "10"]
    assert main(base + ["--devices", "cuda:0,cuda:0"]) == 2
    assert "device 'cuda:0' asked for, but this machine has no CUDA device" in (
        capsys.readouterr().err
    )
    assert main(base + ["--devices", "3"]) == 2
    assert "--particles 10 does not split evenly over 3 devices" in capsys.readouterr().err
    monkeypatch.setattr("munet.es.devices._cuda_count", lambda: 2)
    assert main(base + ["--devices", "4"]) == 2
    assert "4 devices asked for, this machine has 2 CUDA device(s)" in capsys.readouterr().err


def test_influence_reports_each_estimator_without_log_every(capsys):
    """Issue 24: no more silent minutes; one line per finished estimator."""
    assert main(["es", "influence", "--steps", "3", "--particles", "4"]) == 0
    out = capsys.readouterr().out
    for name in ("tbptt", "tes", "pes"):
        assert f"[{name}] 3 outer steps in " in out
