"""What a run shows through the Python API (issue 24): one line per generation and per cycle
by default, an overall bar when asked, silence with quiet=True; a short RunReport."""

import pytest

import munet
from munet.agents import SinglepathAgent


def test_a_run_reports_each_generation_and_cycle_by_default(tiny_config, state_dir, capsys):
    report = SinglepathAgent(tiny_config, "digits", state_dir, progress=False).run(1)
    out = capsys.readouterr().out.splitlines()
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
    assert (agent.detail, agent.progress, agent.quiet) == ("cycle", False, False)
    # Keywords apply over the object; the object itself is not changed (frozen).
    agent = munet.make_agent(tiny_config, "digits", state_dir, options=options, quiet=True)
    assert agent.quiet and agent.detail == "cycle" and not options.quiet
    assert agent.options == RunOptions(progress=False, detail="cycle", quiet=True)
    with pytest.raises(TypeError, match="unknown agent option.*verbose.*known: detail"):
        SinglepathAgent(tiny_config, "digits", state_dir, verbose=True)
    with pytest.raises(TypeError, match="options must be a RunOptions, got dict"):
        SinglepathAgent(tiny_config, "digits", state_dir, options={"quiet": True})
