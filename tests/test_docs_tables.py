"""The docs' results tables are generated from the result files they quote
(tools/docs_tables.py), so a figure cannot drift from its file."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _docs_tables():
    spec = importlib.util.spec_from_file_location("docs_tables", ROOT / "tools" / "docs_tables.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_generated_table_matches_its_files():
    assert _docs_tables().stale_blocks() == []


def test_the_results_pages_hold_generated_tables():
    tables = _docs_tables()
    for page in ("README.md", "docs/results.md", "docs/pretrain.md"):
        assert tables.BLOCK.search((ROOT / page).read_text()), page


def test_an_edited_figure_is_put_back_from_its_file():
    tables = _docs_tables()
    text = (ROOT / "README.md").read_text()
    block = tables.BLOCK.search(text)
    edited = text.replace(block["body"], block["body"].replace("0.", "9.", 1))
    assert edited != text
    assert tables.render(edited, "README.md") == text


def test_a_block_of_an_unknown_kind_is_refused_by_name():
    text = '<!-- generated: {"kind": "histogram"} -->\n<!-- end generated -->'
    with pytest.raises(SystemExit, match="kind 'histogram'; expected one of"):
        _docs_tables().render(text, "page.md")


def test_a_block_naming_a_missing_file_is_refused_by_name():
    text = (
        '<!-- generated: {"kind": "own-data", "files": ["nowhere.json"]} -->\n'
        "<!-- end generated -->"
    )
    with pytest.raises(SystemExit, match="nowhere.json"):
        _docs_tables().render(text, "page.md")
