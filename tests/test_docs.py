"""The docs a reader meets hold no machine paths, and their relative links resolve.

Machine paths (the absolute folders of the machines runs were made on) say nothing to a reader
and leak where they were made: README.md, every page under docs/ and experiments/ and the
shipped roots' cards use repo-relative paths or a neutral ``runs/...`` / ``OUT/...`` instead.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# /work/..., /tmp/..., /root/..., /home/<user>/..., /Users/<user>/... at the start of a path
# (not inside a URL such as https://example.org/work/ or a relative path like runs/tmp/).
MACHINE_PATH = re.compile(r"(?<![\w.:/-])/(?:work|tmp|root|home/[\w.-]+|Users/[\w.-]+)/")


def _pages() -> list[Path]:
    pages = [ROOT / "README.md"]
    pages += sorted((ROOT / "docs").rglob("*.md"))
    pages += sorted((ROOT / "experiments").rglob("*.md"))
    return [p for p in pages if p.is_file()]


def _cards() -> list[Path]:
    return sorted((ROOT / "munet" / "pretrain" / "roots").glob("*.json"))


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(key)
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def test_machine_path_pattern():
    for text in [
        "/work/artifacts/x",
        "see /tmp/rs_demo",
        "`/root/.cache/`",
        "/home/ann/x",
        "(/Users/bob/data)",
    ]:
        assert MACHINE_PATH.search(text), text
    for text in [
        "runs/pt/root.safetensors",
        "https://example.org/work/x",
        "OUT/tmp/x",
        "docs/work/x",
        "~/home/",
        "a /home/ b",
    ]:
        assert not MACHINE_PATH.search(text), text


def test_pages_and_cards_exist():
    names = {p.relative_to(ROOT).as_posix() for p in _pages()}
    assert "README.md" in names and "docs/results.md" in names
    assert _cards(), "no shipped root cards found"


@pytest.mark.parametrize("page", _pages(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_machine_paths_in_pages(page):
    hits = [
        f"{page.relative_to(ROOT)}:{n}: {line.strip()}"
        for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
        if MACHINE_PATH.search(line)
    ]
    assert not hits, "machine paths (use repo-relative, runs/... or OUT/...):\n" + "\n".join(hits)


@pytest.mark.parametrize("card", _cards(), ids=lambda p: p.name)
def test_no_machine_paths_in_cards(card):
    data = json.loads(card.read_text(encoding="utf-8"))
    hits = [s for s in _strings(data) if MACHINE_PATH.search(s)]
    assert not hits, f"{card.name} holds machine paths: {hits}"


LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)|!\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)
CODE_SPAN = re.compile(r"`[^`\n]*`")


def _relative_links(page: Path) -> list[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    text = CODE_SPAN.sub("", text)
    links = []
    for match in LINK.finditer(text):
        target = match.group(1) or match.group(2)
        if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith("#"):
            continue  # a URL (http:, mailto:, ...) or an anchor on the same page
        links.append(target)
    return links


def test_link_pattern():
    page = ROOT / "README.md"
    assert _relative_links(page), "README.md has no relative links: the pattern is broken"


@pytest.mark.parametrize(
    "page",
    [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))],
    ids=lambda p: p.relative_to(ROOT).as_posix(),
)
def test_relative_links_resolve(page):
    broken = []
    for target in _relative_links(page):
        path = target.split("#", 1)[0].split("?", 1)[0]
        if not path:
            continue
        if not (page.parent / path).exists():
            broken.append(target)
    assert not broken, f"{page.relative_to(ROOT)}: links to missing files: {broken}"
