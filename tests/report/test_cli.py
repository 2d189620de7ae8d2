import pytest

from munet.cli import main
from munet.cli.report import register  # noqa: F401  (the module is importable on its own)


def test_report_command_writes_the_page(synthetic_state, tmp_path, capsys):
    out = tmp_path / "r.html"
    assert main(["report", "-d", str(synthetic_state), "--out", str(out)]) == 0
    printed = capsys.readouterr()
    # The counts are the page header's: 2 tasks, one of them grown by 2 agents.
    assert f"report of 2 tasks (3 task agents), 3 published paths: {out}" in printed.out
    page = out.read_text()
    assert "<b>2</b>tasks</span><span><b>3</b>task agents" in page
    assert "<b>3</b>published paths" in page
    # The synthetic agents store no model config: no per-class section, a warning per path.
    assert printed.err.count("per-class test accuracy not evaluated: its agent's stored") == 3
    assert 'id="classes"' not in page
    assert list(tmp_path.glob("*.png")) == []
    assert (
        main(["report", "-d", str(synthetic_state), "--out", str(out), "--no-class-metrics"]) == 0
    )
    assert capsys.readouterr().err == ""
    assert out.read_text().count("<section") == 8


def test_report_command_png(synthetic_state, tmp_path, capsys):
    out = tmp_path / "r.html"
    assert main(["report", "-d", str(synthetic_state), "--out", str(out), "--png"]) == 0
    assert "(+ " in capsys.readouterr().out
    assert len(list(tmp_path.glob("r-*.png"))) == 5


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-d", "{tmp}/nowhere"], "no state dir at '{tmp}/nowhere'"),
        (["-d", "{state}", "--watch", "0"], "--watch 0: expected seconds > 0"),
        (["-d", "{state}", "--baseline", "{tmp}/none.json"], "'{tmp}/none.json' does not exist"),
    ],
)
def test_report_command_errors(synthetic_state, tmp_path, capsys, args, message):
    args = [a.format(tmp=tmp_path, state=synthetic_state) for a in args]
    assert main(["report", *args, "--out", str(tmp_path / "r.html")]) == 2
    assert message.format(tmp=tmp_path) in capsys.readouterr().err
    assert not (tmp_path / "r.html").exists()


def test_report_command_baseline(synthetic_state, tmp_path, capsys):
    """--baseline files (one per seed) are averaged per task and shown beside each agent."""
    import json

    files = []
    for seed, quality in enumerate((0.4, 0.5)):
        result = {"seed": seed, "methods": {
            "system": {"tasks": {"digits": {"test_quality": 0.99}}},
            "independent": {"tasks": {"digits": {"test_quality": quality}}},
        }}  # fmt: skip
        files.append(tmp_path / f"seed_{seed}.json")
        files[-1].write_text(json.dumps(result))
    out = tmp_path / "r.html"
    args = ["report", "-d", str(synthetic_state), "--out", str(out)]
    assert main([*args, "--baseline", str(files[0]), "--baseline", str(files[1])]) == 0
    page = out.read_text()
    tasks = page[page.index('<section id="tasks">') : page.index('<section id="leaderboard">')]
    assert ">independent</th>" in tasks
    assert 'class="num" title="mean of 2 file(s), std 0.0500" data-v="0.45">0.4500<br>' in tasks
    assert "system" not in tasks.split("<tbody>")[0]  # The benchmark's own system is no baseline.
    assert (
        page.count('class="baseline-line baseline-0"') >= 2
    )  # History and learning curve of digits.
