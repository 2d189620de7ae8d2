"""The report in headless Chromium: renders without console errors, fetches nothing, sorts.

Writes screenshots for review to $MUNET_TEST_ARTIFACTS (default: the test's tmp dir) and
prints where. Chromium is installed by `make test` with the slow tests (`make browser`); the
test skips, saying so, only when no Chromium can be found.
"""

import os

import pytest

from munet.report.browser import find_chromium, open_page
from munet.report.html import write_report

pytestmark = pytest.mark.slow


@pytest.fixture
def artifacts(tmp_path):
    folder = os.environ.get("MUNET_TEST_ARTIFACTS") or str(tmp_path)
    os.makedirs(folder, exist_ok=True)
    return folder


@pytest.fixture(scope="module")
def chromium():
    found = find_chromium()
    if found is None:
        pytest.skip(
            "no Chromium on this machine (tried $MUNET_CHROMIUM, chromium, chromium-browser, "
            "google-chrome); `make browser` installs it where apt-get runs as root"
        )
    return found


@pytest.mark.parametrize("system", ["grown_state", "synthetic_state"])
def test_report_renders_without_errors(system, request, chromium, artifacts, tmp_path):
    state = request.getfixturevalue(system)
    out = tmp_path / "report.html"
    write_report(str(state), str(out), refresh_seconds=600)
    shot = os.path.join(artifacts, f"report-{system}.png")
    # Sort the leaderboard by score (twice: descending) and read the first row's agent.
    sort_and_read = (
        "(function(){var th=[...document.querySelectorAll('#leaderboard-table th')]"
        ".find(h=>h.textContent==='score');th.click();th.click();"
        "var rows=document.querySelectorAll('#leaderboard-table tbody tr');"
        "return {first: rows[0].cells[0].dataset.v, scores: [...rows].map(r=>r.cells[3]"
        ".dataset.v), svgs: document.querySelectorAll('svg').length,"
        " width: document.documentElement.scrollWidth};})()"
    )
    result = open_page(out, screenshot=shot, evaluate=sort_and_read, chromium=chromium)
    print(f"screenshot: {shot} (load {result.load_ms:.0f} ms)")
    assert result.errors == []
    assert result.external_requests == []
    scores = [float(s) for s in result.value["scores"] if s != ""]
    assert scores == sorted(scores, reverse=True) and len(scores) >= 2
    assert result.value["svgs"] >= 4
    # Nothing wider than a laptop screen: tables scroll inside their sections.
    assert result.value["width"] <= 1440
    with open(shot, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_a_page_error_is_reported(chromium, tmp_path):
    """The check can fail: a page with a script error and a console error is caught."""
    page = tmp_path / "bad.html"
    page.write_text("<html><body><script>console.error('boom'); undefinedName();</script>")
    result = open_page(page, chromium=chromium)
    assert any("boom" in e for e in result.errors)
    assert any("undefinedName" in e for e in result.errors)
