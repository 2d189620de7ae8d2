"""`munet launch` exits with the code `munet run` gives its failed agent's error (3 for an
agent another process runs), and 11 when an agent failed otherwise (a worker killed); the
launch itself is replaced by a stub."""

from __future__ import annotations

import pytest

import munet.cluster
from munet.cli import main
from munet.cli.launch import launch_exit_code
from munet.cluster import LaunchResult
from munet.system.errors import AgentLockedError, CorruptStateError


def _result(**errors: BaseException | None) -> LaunchResult:
    result = LaunchResult()
    for agent_id, error in errors.items():
        text = "killed" if error is None else f"{type(error).__name__}: {error}"
        result.failures[agent_id] = text
        if error is not None:
            result.failure_errors[agent_id] = error
    return result


@pytest.mark.parametrize(
    "errors, code",
    [
        ({"a": AgentLockedError("agent 'a' is already running")}, 3),
        ({"a": CorruptStateError("state a/state_1_0: bad"), "b": AgentLockedError("b")}, 5),
        ({"a": AgentLockedError("a"), "b": RuntimeError("boom")}, 11),
        ({"a": None}, 11),  # no exception (a worker killed): agents failed, not a known kind
        ({}, 0),
    ],
)
def test_launch_exit_code_is_the_kind_of_the_failure(errors, code):
    assert launch_exit_code(_result(**errors)) == code


def test_cli_launch_of_a_locked_agent_exits_3(tmp_path, monkeypatch, capsys):
    def locked_launch(specs, state_dir, cycles, **options):
        (spec,) = specs
        return _result(**{spec.agent_id: AgentLockedError(
            f"agent {spec.agent_id!r} is already running: its lock is held by pid 1")})

    monkeypatch.setattr(munet.cluster, "launch", locked_launch)
    code = main(["launch", "--agent", "VitCpu", "--tasks", "digits", "--cycles", "1",
                 "-d", str(tmp_path / "state"), "--root", "none"])
    assert code == 3
    assert "is already running" in capsys.readouterr().err
