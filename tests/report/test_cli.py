import pytest

from munet.cli import main
from munet.cli.report import register  # noqa: F401  (the module is importable on its own)


def test_report_command_writes_the_page(synthetic_state, tmp_path, capsys):
    out = tmp_path / "r.html"
    assert main(["report", "-d", str(synthetic_state), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"report of 3 tasks, 4 published paths: {out}" in printed
    assert out.read_text().count("<section") == 6
    assert list(tmp_path.glob("*.png")) == []


def test_report_command_png(synthetic_state, tmp_path, capsys):
    out = tmp_path / "r.html"
    assert main(["report", "-d", str(synthetic_state), "--out", str(out), "--png"]) == 0
    assert "(+ " in capsys.readouterr().out
    assert len(list(tmp_path.glob("r-*.png"))) == 4


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-d", "{tmp}/nowhere"], "no state dir at '{tmp}/nowhere'"),
        (["-d", "{state}", "--watch", "0"], "--watch 0: expected seconds > 0"),
    ],
)
def test_report_command_errors(synthetic_state, tmp_path, capsys, args, message):
    args = [a.format(tmp=tmp_path, state=synthetic_state) for a in args]
    assert main(["report", *args, "--out", str(tmp_path / "r.html")]) == 2
    assert message.format(tmp=tmp_path) in capsys.readouterr().err
    assert not (tmp_path / "r.html").exists()
