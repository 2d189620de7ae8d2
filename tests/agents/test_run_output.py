"""What a run shows through the Python API (issue 24) and the command line (issue 31): a
start-of-run block, then one line per generation and per cycle by default, the per-path detail
with -v / detail="full", one line per cycle with -q; an overall bar when asked, silence with
quiet=True; a short RunReport."""

import pytest

import munet
from munet.agents import SinglepathAgent


def test_a_run_reports_each_generation_and_cycle_by_default(tiny_config, state_dir, capsys):
    report = SinglepathAgent(tiny_config, "digits", state_dir, progress=False).run(1)
    out = capsys.readouterr().out.splitlines()
    # The start-of-run block: task, classes, split sizes, root, preset.
    block, out = out[:3], out[3:]
    assert block[0] == (
        "VitCpu~digits: task digits (embedded), 10 classes: 0, 1, 2, 3, 4, 5, ..., 9"
    )
    assert block[1].startswith("  splits: train 1,257, validation 180 (16 used per validation)")
    assert block[1].endswith("test 360")
    assert block[2].startswith(
        "  root: VitCpu~root_model~random_init; preset VitCpu (model mu/4), 2 generation(s)"
    )
    assert [line.split(":")[1].strip() for line in out] == [
        "cycle 1/1 gen 1/2",
        "cycle 1/1 gen 2/2",
        "cycle 1/1 done; best path VitCpu~digits",
    ]
    assert all(line.startswith("VitCpu~digits: ") for line in out)
    assert "admitted, best quality" in out[0] and "elapsed" in out[0]
    # The report: a repr of one line, and a summary of a few.
    text = repr(report)
    assert len(text) < 200 and text.startswith("RunReport(agent_id='VitCpu~digits', cycle=1")
    summary = report.summary().splitlines()
    assert summary[0] == "VitCpu~digits: 1 cycle(s) done"
    assert summary[1].startswith("this run: 2 generation(s), ")
    assert summary[2].startswith(f"best path: {report.best.full_id} quality ")


def test_quiet_silences_a_run_and_progress_draws_the_overall_bar(
    tiny_config, state_dir, capsys
):
    SinglepathAgent(tiny_config, "digits", state_dir, quiet=True).run(1)
    assert capsys.readouterr() == ("", "")
    munet.make_agent(tiny_config, "digits", state_dir, progress=True, detail="cycle").run(2)
    captured = capsys.readouterr()
    assert captured.out.count("\n") == 1 and "cycle 2/2 done" in captured.out
    assert "VitCpu~digits" in captured.err and "2/4" in captured.err  # 2 of 4 generations
    assert "cycle 2/2" in captured.err  # the bar's postfix


def test_an_unknown_detail_is_a_clear_error(tiny_config, state_dir):
    with pytest.raises(ValueError, match="detail 'all': expected one of generation, full"):
        SinglepathAgent(tiny_config, "digits", state_dir, detail="all")


def test_run_options_are_one_object_or_the_same_keywords(tiny_config, state_dir, capsys):
    from munet.agents.options import RunOptions

    options = RunOptions(progress=False, detail="cycle")
    agent = SinglepathAgent(tiny_config, "digits", state_dir, options=options)
    assert (agent.lines.detail, agent.progress, agent.lines.quiet) == ("cycle", False, False)
    # Keywords apply over the object; the object itself is not changed (frozen).
    agent = munet.make_agent(tiny_config, "digits", state_dir, options=options, quiet=True)
    assert agent.lines.quiet and agent.lines.detail == "cycle" and not options.quiet
    assert agent.options == RunOptions(progress=False, detail="cycle", quiet=True)
    with pytest.raises(TypeError, match="unknown agent option.*verbose.*known: detail"):
        SinglepathAgent(tiny_config, "digits", state_dir, verbose=True)
    with pytest.raises(TypeError, match="options must be a RunOptions, got dict"):
        SinglepathAgent(tiny_config, "digits", state_dir, options={"quiet": True})


def _run_cli(state_dir, *flags):
    from munet.cli import main

    from .conftest import TINY_OVERRIDES

    sets = [arg for item in TINY_OVERRIDES for arg in ("--set", item)]
    argv = ["run", "--agent", "VitCpu", "--task", "digits", "-d", str(state_dir), *sets]
    return main([*argv, "--no-progress", *flags])


def test_munet_run_output_levels(state_dir, capsys):
    # Default: the block, one line per generation, the cycle line, the result; no decisions.
    assert _run_cli(state_dir, "--cycles", "1") == 0
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert len(lines) == 3 + 2 + 1 + 1, lines
    assert lines[0].startswith("VitCpu~digits: task digits (embedded), 10 classes")
    generations = [line.split(": ")[1] for line in lines[3:5]]
    assert generations == ["cycle 1/1 gen 1/2", "cycle 1/1 gen 2/2"]
    assert "path VitCpu~digits" not in captured.err  # mutation decisions are -v's
    # -v: the per-path detail and every decision (on stderr, the log).
    assert _run_cli(state_dir, "--cycles", "2", "-v") == 0
    captured = capsys.readouterr()
    assert "==== VitCpu~digits: cycle [2/2]" in captured.out
    assert "---- generation [1/2]" in captured.out
    assert "continuing from state" in captured.out
    assert "path VitCpu~digits:" in captured.err and "num_layers" in captured.err
    # -q: one line per cycle, then the result line.
    assert _run_cli(state_dir, "--cycles", "3", "-q") == 0
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert len(lines) == 2 and "cycle 3/3 done" in lines[0], lines
    assert lines[1].startswith("VitCpu~digits: 3 cycles; best path")
    assert captured.err == ""


def test_an_agent_has_a_readable_repr(tiny_config, state_dir):
    agent = SinglepathAgent(tiny_config, "digits", state_dir, progress=False)
    assert repr(agent) == (
        f"SinglepathAgent(agent_id='VitCpu~digits', task='digits', preset='VitCpu', "
        f"state_dir={str(agent.store.root)!r}, devices=[cpu], generations_per_cycle=2)"
    )


def test_a_multipath_agent_has_a_readable_repr(mp_config, state):
    from tests.agents.multipath_helpers import agent_for

    text = repr(agent_for(mp_config, state))
    assert text.startswith("MultipathAgent(agent_id='MultiVitCpu~digits', task='digits', ")
    assert "preset='MultiVitCpu'" in text and "devices=[cpu]" in text


def test_every_detail_level_says_which_lines_it_shows():
    from munet.agents.options import DETAIL_LEVELS
    from munet.agents.run_loop import LINES_SHOWN

    assert set(LINES_SHOWN) == set(DETAIL_LEVELS)
    assert LINES_SHOWN["generation"] >= {"start", "generation", "cycle"}
    assert LINES_SHOWN["cycle"] == {"cycle"}
