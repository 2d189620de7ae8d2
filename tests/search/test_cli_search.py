import json

from munet.cli import main


def test_petridish_command_prints_progress_table_and_writes_outputs(nasbench_table, tmp_path,
                                                                    capsys):
    out = tmp_path / "pd"
    argv = ["search", "--strategy", "petridish", "--objective", f"nasbench:{nasbench_table}",
            "--out", str(out), "--max-pool-size", "8", "--seed", "2"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert text.count(" seed ") >= 6 and " search " in text and " train " in text
    assert "9 models (pool holds 9 models > max_pool_size 8)" in text
    assert "frontier (lower convex hull of error vs cost):" in text
    hull = json.loads((out / "frontier.json").read_text())["hull"]
    for point in hull:
        assert f"{point['description']:<24}" in text
    # resuming a finished run reprints the same summary and changes nothing
    state = (out / "state.json").read_text()
    assert main([*argv, "--resume"]) == 0
    assert (out / "state.json").read_text() == state
    assert main(argv) == 2
    assert "state.json exists" in capsys.readouterr().err


def test_ask_tell_command_with_budget_and_options(nasbench_table, tmp_path, capsys):
    out = tmp_path / "re"
    argv = ["search", "--strategy", "regularized_evolution", "--objective",
            f"nasbench:{nasbench_table}", "--out", str(out), "--budget", "20000",
            "--workers", "3", "--option", "population_size=6", "--option", "sample_size=2"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "trial    0" in text and "training seconds > budget 20000" in text
    state = json.loads((out / "state.json").read_text())
    assert state["strategy_options"]["population_size"] == 6
    assert state["simulated_seconds"] > 20000
    assert (out / "frontier.png").exists()


def test_bad_input_is_reported(nasbench_table, tmp_path, capsys):
    base = ["search", "--out", str(tmp_path / "x")]
    assert main([*base, "--strategy", "petridish", "--objective", "nasbench"]) == 2
    assert "not KIND:ARG" in capsys.readouterr().err
    assert main([*base, "--strategy", "petridish", "--objective", "vit:digits",
                 "--set", "widths=[10]", "--set", "num_heads=4"]) == 2
    assert "width 10 is not divisible" in capsys.readouterr().err
    assert main([*base, "--strategy", "random", "--objective", f"nasbench:{nasbench_table}",
                 "--option", "bogus=1"]) == 2
    assert "bogus" in capsys.readouterr().err
    assert main([*base, "--strategy", "petridish", "--objective", "vit:digits",
                 "--set", "bogus=1"]) == 2
    assert "bogus" in capsys.readouterr().err
