from munet.agents import run_demo
from tests.agents.conftest import TINY_OVERRIDES


def test_demo_ends_with_the_report(tmp_path):
    lines = []
    state = tmp_path / "demo"
    run_demo(str(state), cycles=1, tasks=["digits"], overrides=TINY_OVERRIDES, echo=lines.append,
             workers=1)  # fmt: skip
    assert lines[-1] == (
        f"Report: {state / 'report.html'} (open it in a browser; "
        f"`munet report -d {state} --watch 30`)"
    )
    html = (state / "report.html").read_text()
    assert '<section id="leaderboard">' in html and "VitCpuHybrid~digits" in html
