"""Issue 24 item 6: extend a finished search, name what differs on resume, keep the layer grid,
warn about a budget below the population, export and predict a vit: search's model."""

import json

import pytest

from munet.cli import main
from munet.search.objectives.vit import VitObjective
from munet.search.run_state import differences

from .conftest import tiny_vit_settings


def _nasbench(table, out, *extra):
    return ["search", "--strategy", "regularized_evolution", "--objective", f"nasbench:{table}",
            "--out", str(out), "--option", "population_size=4", "--option", "sample_size=2",
            *extra]  # fmt: skip


def test_a_finished_search_resumed_with_more_trials_goes_on(nasbench_table, tmp_path, capsys):
    out = tmp_path / "re"
    assert main(_nasbench(nasbench_table, out, "--max-trials", "5")) == 0
    first = json.loads((out / "state.json").read_text())
    assert len(first["results"]) == 5
    capsys.readouterr()
    assert main(_nasbench(nasbench_table, out, "--max-trials", "9", "--resume")) == 0
    text = capsys.readouterr().out
    assert "extending a finished run (5 trials (max_trials 5))" in text
    state = json.loads((out / "state.json").read_text())
    assert len(state["results"]) == 9 and state["results"][:5] == first["results"]
    assert state["max_trials"] == 9 and "9 trials (max_trials 9)" in text
    # A larger time budget extends too (no budget before: unlimited trials are capped by 11).
    assert main(_nasbench(nasbench_table, out, "--max-trials", "11", "--budget", "1e9",
                          "--resume")) == 0  # fmt: skip
    assert len(json.loads((out / "state.json").read_text())["results"]) == 11


def test_resume_names_the_setting_that_differs(nasbench_table, tmp_path, capsys):
    out = tmp_path / "re"
    assert main(_nasbench(nasbench_table, out, "--max-trials", "4")) == 0
    capsys.readouterr()
    assert main(_nasbench(nasbench_table, out, "--max-trials", "4", "--seed", "3",
                          "--resume")) == 2  # fmt: skip
    err = capsys.readouterr().err
    # --seed seeds both the trials and the strategy.
    assert "2 setting(s) differ from the saved run: seed (saved 0, this run 3); " in err
    assert "strategy_seed (saved 0, this run 3)" in err
    assert "only max_trials, time_budget may change" in err
    assert len(err) < 400  # One line naming the setting, not two dumps of the whole run.
    argv = _nasbench(nasbench_table, out, "--resume")
    argv[argv.index("population_size=4")] = "population_size=5"
    assert main(argv) == 2
    assert "strategy_options.population_size (saved 4, this run 5)" in capsys.readouterr().err


def test_petridish_resumed_with_a_larger_pool_goes_on(nasbench_table, tmp_path, capsys):
    out = tmp_path / "pd"
    argv = ["search", "--strategy", "petridish", "--objective", f"nasbench:{nasbench_table}",
            "--out", str(out), "--seed", "2"]  # fmt: skip
    assert main([*argv, "--max-pool-size", "8"]) == 0
    assert len(json.loads((out / "pool.json").read_text())) == 9
    capsys.readouterr()
    assert main([*argv, "--max-pool-size", "12", "--resume"]) == 0
    assert "extending a finished run" in capsys.readouterr().out
    assert len(json.loads((out / "pool.json").read_text())) == 13
    assert main([*argv, "--max-pool-size", "12", "--eps", "0.5", "--resume"]) == 2
    assert "settings.eps (saved 0.025, this run 0.5)" in capsys.readouterr().err


def test_differences_are_dotted_leaves():
    saved = {"objective": {"kind": "vit", "widths": [8]}, "seed": 0}
    assert differences(saved, {"objective": {"kind": "vit", "widths": [16]}, "seed": 0}) == [
        ("objective.widths", [8], [16])
    ]


def test_vit_search_space_is_exactly_the_layer_grid():
    space = VitObjective("digits", **tiny_vit_settings(layers=(1, 3))).search_space()
    assert space.dimensions["num_layers"] == [1, 3]
    assert VitObjective("digits", layers=(2,)).search_space().dimensions["num_layers"] == [2]


def test_a_budget_below_the_population_is_named(nasbench_table, tmp_path, capsys):
    assert main(_nasbench(nasbench_table, tmp_path / "small", "--max-trials", "3")) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if "warning" in line]
    assert lines == [
        "warning: max_trials 3 is below regularized_evolution's population_size 4: its first 4 "
        "trials are random samples, so this run is a random search (raise --max-trials or "
        "lower --option population_size)"
    ]
    assert main(_nasbench(nasbench_table, tmp_path / "enough", "--max-trials", "4")) == 0
    assert "warning" not in capsys.readouterr().out


@pytest.fixture(scope="module")
def vit_search(tmp_path_factory):
    """A 2-trial random search of tiny ViTs on digits (the models are kept)."""
    out = tmp_path_factory.mktemp("vit-search") / "run"
    settings = tiny_vit_settings(layers=(1,), widths=(8, 16))  # 2 candidates
    argv = ["search", "--strategy", "random", "--objective", "vit:digits", "--out", str(out),
            "--max-trials", "2"]  # fmt: skip
    for key, value in settings.items():
        argv += ["--set", f"{key}={json.dumps(list(value) if isinstance(value, tuple) else value)}"]
    assert main(argv) == 0
    return out


def test_export_and_predict_a_vit_search_model(vit_search, tmp_path, capsys):
    from PIL import Image

    from munet.models.export import load_exported

    state = json.loads((vit_search / "state.json").read_text())
    assert [r["weights"] for r in state["results"]] == [
        "models/trial-00000.safetensors", "models/trial-00001.safetensors"
    ]  # fmt: skip
    best = max(state["results"], key=lambda r: r["objective"])
    out = tmp_path / "exported"
    assert main(["export", "--search", str(vit_search), "--out", str(out)]) == 0
    assert f"exported trial {best['trial']} of" in capsys.readouterr().out
    model, preprocess = load_exported(out)
    assert model.class_names == tuple(str(i) for i in range(10))
    assert model.munet_config["provenance"]["trial"] == best["trial"]
    assert model.munet_config["metrics"]["quality"] == pytest.approx(best["objective"])
    images = tmp_path / "images"
    images.mkdir()
    for i in range(2):
        Image.new("L", (8, 8), color=40 * i).save(images / f"{i}.png")
    assert main(["predict", str(vit_search), str(images), "--trial", "1", "--format", "json"]) == 0
    predictions = json.loads(capsys.readouterr().out)
    assert len(predictions) == 2 and predictions[0]["predictions"][0]["class"] in model.class_names
    # Errors name what is wrong.
    assert main(["export", "--search", str(vit_search), "--trial", "9", "--out",
                 str(tmp_path / "x")]) == 2  # fmt: skip
    assert "no trained model of trial 9; trials with a model: 0, 1" in capsys.readouterr().err
    assert main(["export", "--out", str(tmp_path / "y")]) == 2
    assert "expected --task TASK" in capsys.readouterr().err


def test_search_lines_say_cost_units_and_an_exhausted_space(nasbench_table, tmp_path, capsys):
    out = tmp_path / "rand"
    argv = ["search", "--strategy", "random", "--objective", f"nasbench:{nasbench_table}",
            "--out", str(out), "--option", "dedup_retries=40"]  # fmt: skip
    assert main([*argv, "--max-trials", "200"]) == 0
    text = capsys.readouterr().out
    trials = [line for line in text.splitlines() if line.startswith("trial ")]
    assert trials and all(" params  best " in line for line in trials)
    # Per-trial training time and the run's total, one decimal each (not 6 significant digits).
    assert all(" train " in line and "s (all trials " in line for line in trials)
    assert "cost (params)" in text  # the summary table's column
    stopped = next(line for line in text.splitlines() if line.startswith("stopped: "))
    assert stopped.startswith("stopped: search space exhausted: 40 proposals in a row")
    done = len(json.loads((out / "state.json").read_text())["results"])
    assert done < 200
    # Extending it says why nothing runs, and runs nothing.
    assert main([*argv, "--max-trials", "300", "--resume"]) == 0
    text = capsys.readouterr().out
    assert "nothing to extend: search space exhausted" in text
    assert len(json.loads((out / "state.json").read_text())["results"]) == done


def test_frontier_plot_labels_the_cost_unit(tmp_path, monkeypatch):
    from munet.search import frontier
    from munet.search.objectives.base import cost_text

    labels = []
    import matplotlib.axes

    monkeypatch.setattr(
        matplotlib.axes.Axes, "set_xlabel", lambda self, text, *a, **k: labels.append(text)
    )
    frontier.plot_frontier(str(tmp_path / "f.png"), [], [], [], 0.1, cost_unit="FLOPs")
    assert labels == ["cost (FLOPs)"]
    assert cost_text(1.234e6, "FLOPs") == "1.23M FLOPs" and cost_text(350, "params") == "350 params"
