"""The README's exit-code table is the one munet uses (munet.cli.errors): every code there is
documented, and nothing is documented that munet never returns."""

import re
from pathlib import Path

from munet.cli import errors

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_readme_table_lists_exactly_munets_exit_codes():
    text = README.read_text()
    table = text[text.index("| code | meaning | commands |") :].split("\n\n", 1)[0]
    documented = [int(m) for m in re.findall(r"^\| (\d+) \|", table, re.M)]
    assert documented == sorted(documented) and len(set(documented)) == len(documented)
    assert set(documented) == {0, *errors.EXIT_CODES.values()}
    # 1 is a bug only: the quality mismatch of `munet test` and failed launch agents have
    # their own codes.
    assert errors.EXIT_BUG == 1
    assert len({errors.EXIT_QUALITY_MISMATCH, errors.EXIT_AGENTS_FAILED, 1}) == 3
    assert errors.EXIT_TERMINATED == 143 and errors.EXIT_INTERRUPTED == 130


def test_every_error_has_one_prefix(capsys):
    import pytest

    from munet.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(["run", "--agent", "VitCpu"])  # a usage error, from argparse
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1].startswith("munet: error: ")
    assert main(["config", "show", "--agent", "VitT4"]) == 2  # a bad value, from munet
    assert capsys.readouterr().err.startswith("munet: error: ")
