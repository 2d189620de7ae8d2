"""The command line's usability fixes (issue 24): --version, config show, doctor's default
state dir, task typos, a run with nothing to do, tasks show's sizing, search --help."""

import argparse
import json
import re
from pathlib import Path

import pytest

import munet
from munet.cli import build_parser, main

REPO = Path(__file__).resolve().parents[2]
TINY = [
    "batch_size=8",
    "num_train_examples_between_validations_max=16",
    "num_validations_per_path_training=2",
    "num_validation_examples_max=16",
    "num_samples_per_cycle=2",
    "max_task_population_size=2",
    "hparams_mutation_ranges.num_layers=[0, 1, 2]",
    "num_layers=1",
    "hparams_mutation_ranges.ds_image_size=[8, 16]",
    "ds_image_size=8",
]
SETS = [arg for item in TINY for arg in ("--set", item)]


@pytest.fixture(scope="module")
def grown(tmp_path_factory):
    """./state holding VitCpu~digits after one tiny cycle (shared: a few seconds)."""
    root = tmp_path_factory.mktemp("ux")
    state = str(root / "state")
    assert main(["root", "--agent", "VitCpu", "-d", state, *SETS, "-q"]) == 0
    argv = ["run", "--agent", "VitCpu", "--task", "digits", "--cycles", "1", "-d", state]
    assert main([*argv, *SETS, "-q"]) == 0
    return root


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"munet {munet.__version__}"
    pyproject = (REPO / "pyproject.toml").read_text()  # (no tomllib before Python 3.11)
    # One version: the package metadata reads munet.__version__ (tests/packaging checks the
    # built wheel's).
    assert '\nversion = {attr = "munet.__version__"}\n' in pyproject
    # The SPDX form: setuptools warns about the TOML-table form at every install.
    assert re.search(r'\nlicense = "Apache-2.0"', pyproject)


def test_doctor_defaults_to_the_state_dir_of_munet_run(grown, monkeypatch, capsys):
    monkeypatch.chdir(grown)
    assert main(["doctor"]) == 0
    assert "state: every committed state is whole" in capsys.readouterr().out
    monkeypatch.chdir(grown / "state")  # no ./state here
    assert main(["doctor"]) == 2
    assert "no state dir at 'state'" in capsys.readouterr().err


def test_config_show_prints_the_preset_with_overrides(capsys, tmp_path):
    missing = tmp_path / "none"
    argv = ["config", "show", "--agent", "VitCpu", "--set", "batch_size=16", "-d", str(missing)]
    assert main([*argv, "--task", "digits"]) == 0
    captured = capsys.readouterr()
    config = json.loads(captured.out)
    assert config["batch_size"] == 16 and config["name"] == "VitCpu"
    assert "preset VitCpu, then 1 override(s): batch_size=16" in captured.err
    assert not missing.exists()  # showing a config creates no state dir


def test_config_show_keys_prints_only_those(capsys):
    argv = ["config", "show", "--agent", "VitCpu", "--set", "opt_lr=0.05"]
    assert main([*argv, "opt_lr", "num_layers", "scorer.scale_factor"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown == {"opt_lr": 0.05, "num_layers": 4, "scorer.scale_factor": 0.99}
    assert main([*argv, "opt_rl"]) == 2
    assert "unknown config key 'opt_rl' (did you mean 'opt_lr'?)" in capsys.readouterr().err


def test_seed_is_a_flag_of_every_agent_command(capsys):
    assert main(["config", "show", "--agent", "VitCpu", "--seed", "7", "seed"]) == 0
    assert json.loads(capsys.readouterr().out) == {"seed": 7}
    # In its place among the --set overrides: the last one wins.
    argv = ["config", "show", "--agent", "VitCpu", "--seed", "7", "--set", "seed=3", "seed"]
    assert main(argv) == 0 and json.loads(capsys.readouterr().out) == {"seed": 3}
    from munet.cli import build_parser

    subcommands = build_parser()._subparsers._group_actions[0].choices
    argvs = {
        "root": ["--agent", "VitCpu"],
        "run": ["--agent", "VitCpu", "--task", "t", "--cycles", "1"],
        "demo": [],
        "launch": ["--agent", "VitCpu", "--tasks", "t", "--cycles", "1"],
    }
    for command, argv in argvs.items():
        args = subcommands[command].parse_args([*argv, "--seed", "5"])
        assert args.overrides == ["seed=5"], command


def test_config_show_reads_the_config_stored_with_the_agent(grown, capsys):
    state = str(grown / "state")
    argv = ["config", "show", "--agent", "VitCpu", "--task", "digits", "-d", state]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["batch_size"] == 8  # the tiny run's, not the preset's 32
    assert "stored with VitCpu~digits/state_1_0" in captured.err
    assert main([*argv, "--set", "batch_sze=3"]) == 2
    assert "did you mean 'batch_size'" in capsys.readouterr().err


def test_a_run_with_nothing_to_do_says_so(grown, capsys):
    argv = ["run", "--agent", "VitCpu", "--task", "digits", "--cycles", "1"]
    assert main([*argv, "-d", str(grown / "state"), "-q"]) == 0
    out = capsys.readouterr().out
    assert "VitCpu~digits: already 1 cycle(s) done (asked for 1); nothing to run" in out
    assert "ask for more than 1 cycles to continue" in out


def test_tasks_show_sizes_the_task_as_its_agent_does(grown, capsys):
    assert main(["tasks", "show", "digits", "-d", str(grown / "state")]) == 0
    out = capsys.readouterr().out
    assert "sized by: agent VitCpu (config of VitCpu~digits/state_1_0)" in out
    assert "train batch size: 8" in out
    assert main(["tasks", "show", "digits", "--agent", "VitCpu", "-d", str(grown / "none")]) == 0
    out = capsys.readouterr().out
    assert "sized by: agent VitCpu (preset)" in out and "train batch size: 32" in out


def test_misspelt_tasks_get_a_did_you_mean(grown, capsys, tmp_path):
    state = str(grown / "state")
    assert main(["export", "-d", state, "--task", "digts", "--out", str(tmp_path / "m")]) == 2
    assert "(did you mean 'digits'?)" in capsys.readouterr().err
    assert main(["test", "-d", state, "--task", "digts"]) == 2
    assert "(did you mean 'digits'?)" in capsys.readouterr().err
    # Launch checks its tasks before Ray starts (a Ray start would take seconds, then fail).
    argv = ["launch", "--agent", "VitCpu", "--tasks", "digits,digts", "--cycles", "1"]
    assert main([*argv, "-d", state]) == 2
    assert "unknown task 'digts' (did you mean 'digits'" in capsys.readouterr().err
    out = tmp_path / "search"
    argv = ["search", "--strategy", "random", "--objective", "vit:digts", "--out", str(out)]
    assert main(argv) == 2
    assert "(did you mean 'digits'" in capsys.readouterr().err
    assert not out.exists()  # no trial ran


def _subparser(name: str) -> argparse.ArgumentParser:
    subparsers = next(
        a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)
    )
    return subparsers.choices[name]


def test_search_help_keeps_its_example_and_explains_every_option():
    parser = _subparser("search")
    text = parser.format_help()
    assert re.search(r"nasbench:table\.tfrecord \\\n\s+--budget 200000", text)
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        assert action.help, f"{action.option_strings} has no help"
        if isinstance(action.default, int | float | str) and not isinstance(action.default, bool):
            assert "default" in action.help, f"{action.option_strings} hides its default"


def test_search_lists_the_registered_strategies():
    from munet.cli.search import STRATEGIES
    from munet.search.registry import strategy_names

    assert sorted(STRATEGIES) == sorted(strategy_names())
