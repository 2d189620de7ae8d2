"""`munet --help`, every command's `--help` and argument errors answer without importing torch
(munet.cli: heavy imports happen inside the handlers): each is checked in a fresh process."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(REPO))


def _imported(importtime_stderr: str) -> set[str]:
    """The modules a `python -X importtime` run imported (its stderr's `import time:` lines)."""
    return {
        line.rsplit("|", 1)[1].strip()
        for line in importtime_stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }


def _munet(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "munet", *args],
        capture_output=True, text=True, env=_env(), cwd=cwd, timeout=120,
    )  # fmt: skip


def _torch_modules(done: subprocess.CompletedProcess) -> list[str]:
    return sorted(m for m in _imported(done.stderr) if m == "torch" or m.startswith("torch."))


def test_munet_help_does_not_import_torch(tmp_path):
    done = _munet(["--help"], tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("usage: munet")
    assert "munet" in _imported(done.stderr)  # the probe sees imports at all
    assert _torch_modules(done) == []


# In one fresh process, `--help` of every command and subcommand in turn, through munet.cli.main
# (as `python -m munet CMD --help` runs it); after each, whether torch is imported by now.
WALK = r"""
import argparse, contextlib, io, json, sys
from munet.cli import build_parser, main

def commands(parser, prefix=()):
    yield list(prefix)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from commands(sub, (*prefix, name))

report = []
for argv in commands(build_parser()):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            main([*argv, "--help"])
            code = None
        except SystemExit as exit:
            code = exit.code
    report.append({"argv": argv, "exit": code, "help": out.getvalue(),
                   "torch": "torch" in sys.modules})
print(json.dumps(report))
"""


def test_every_commands_help_does_not_import_torch(tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", WALK], capture_output=True, text=True, env=_env(), cwd=tmp_path,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    commands = {" ".join(entry["argv"]) for entry in report}
    assert {"run", "pretrain", "benchmark", "checkpoint fetch", "tasks list"} <= commands
    for entry in report:
        command = " ".join(["munet", *entry["argv"]])
        assert entry["exit"] == 0 and entry["help"].startswith(f"usage: {command}"), entry
    # Each call builds every command's parser, then formats one command's help: torch
    # imported by a parser shows from the first entry on, by one help from its own on.
    assert [" ".join(e["argv"]) for e in report if e["torch"]] == []


@pytest.mark.parametrize(
    "args, error",
    [
        (["nope"], "argument COMMAND: invalid choice: 'nope'"),
        (["run"], "the following arguments are required"),
        (["pretrain", "--agent", "VitCpu", "--steps", "1", "--out", "o", "--classes", "many"],
         "argument --classes: invalid int value: 'many'"),
        (["pretrain", "--agent", "VitCpu", "--steps", "1", "--out", "o", "--lr", "fast"],
         "argument --lr: invalid float value: 'fast'"),
        (["benchmark", "--agent"], "argument --agent: expected one argument"),
    ],
    ids=["unknown-command", "missing-argument", "bad-int", "bad-float", "missing-value"],
)  # fmt: skip
def test_an_argument_error_exits_2_without_importing_torch(tmp_path, args, error):
    done = _munet(args, tmp_path)
    message = [line for line in done.stderr.splitlines() if not line.startswith("import time:")]
    assert done.returncode == 2, done.stderr[-2000:]
    assert f"munet: error: {error}" in "\n".join(message)
    assert _torch_modules(done) == []
    assert not (tmp_path / "o").exists()


def test_each_pretrain_spec_option_has_its_fields_type_and_default():
    # The types are declared in the command's module (the spec's module imports torch); the
    # defaults are the spec's, filled in when the command runs.
    from munet.cli import build_parser
    from munet.cli.pretrain import SPEC_OPTIONS, SPEC_TYPES, _fill_spec_defaults
    from munet.pretrain.spec import PretrainSpec

    defaults = {f.name: f.default for f in dataclasses.fields(PretrainSpec)}
    assert list(SPEC_TYPES) == [field for _, field, _ in SPEC_OPTIONS]
    assert {field: type(defaults[field]) for field in SPEC_TYPES} == SPEC_TYPES
    args = build_parser().parse_args(
        ["pretrain", "--agent", "VitCpu", "--steps", "1", "--out", "o", "--lr", "0.5"]
    )
    _fill_spec_defaults(args)
    assert {field: getattr(args, field) for field in SPEC_TYPES} == {
        **{field: defaults[field] for field in SPEC_TYPES},
        "lr": 0.5,
    }
