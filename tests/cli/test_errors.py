"""Expected failures of `munet` are one line with a distinct exit code (issue 17, item 5).

Real `munet` processes against real state dirs: a bad value, a locked agent, a read-only and a
full state dir (tmpfs in a private mount namespace, skipped with the reason where impossible),
`munet root` racing itself; tracebacks only with `--debug`.
"""

import pathlib
import re
import subprocess
import sys
import time

import pytest

from munet.cli import main
from munet.cli.errors import (
    EXIT_BAD_INPUT,
    EXIT_BUG,
    EXIT_CODES,
    EXIT_DAMAGED_STATE,
    EXIT_DISK_FULL,
    EXIT_LOCKED,
    EXIT_NO_PERMISSION,
    EXIT_STATE_EXISTS,
)
from tests.agents.conftest import TINY_OVERRIDES

REPO = pathlib.Path(__file__).resolve().parents[2]
MUNET = [sys.executable, "-m", "munet"]

def _without_start_line(err: str) -> str:
    """stderr less a long command's ``munet run: started ...`` line (munet.cli.status_lines),
    which comes first, before the command's own work: the error is then the one line left."""
    return re.sub(r"^munet [\w ]+: started[^\n]*\n", "", err)



def test_exit_codes_are_distinct():
    assert len(set(EXIT_CODES.values())) == len(EXIT_CODES)
    assert 0 not in EXIT_CODES.values()


def test_a_nonsense_value_is_one_line_and_the_traceback_needs_debug(tmp_path, capsys):
    args = ["run", "--agent", "VitCpu", "--task", "digits", "--cycles", "1"]
    args += ["-d", str(tmp_path / "s"), "--set", "eval_batch_size=-1"]
    assert main(args) == EXIT_BAD_INPUT
    err = _without_start_line(capsys.readouterr().err)
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("munet: error: eval_batch_size=-1: expected an int >= 0")
    assert main([*args, "--debug"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "Traceback" in err and "ConfigError" in err


def test_a_locked_agent_is_one_line(tmp_path, capsys):
    state = tmp_path / "s"
    ready = tmp_path / "ready"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time, pathlib\n"
            "from munet.system import SystemStore\n"
            "with SystemStore(sys.argv[1]).lock('VitCpu~digits'):\n"
            "    pathlib.Path(sys.argv[2]).touch()\n"
            "    time.sleep(120)\n",
            str(state),
            str(ready),
        ],
        cwd=REPO,
    )
    try:
        deadline = time.monotonic() + 60
        while not ready.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ready.exists()
        args = ["run", "--agent", "VitCpu", "--task", "digits", "--cycles", "1"]
        assert main([*args, "-d", str(state)]) == EXIT_LOCKED
        err = _without_start_line(capsys.readouterr().err)
        assert err.count("\n") == 1 and err.startswith("munet: error: agent 'VitCpu~digits'")
        assert "is already running" in err
    finally:
        holder.kill()
        holder.wait(30)


def test_unexpected_errors_are_one_line_with_exit_code_1(capsys, monkeypatch):
    def bug(args):
        raise RuntimeError("a bug")

    monkeypatch.setattr("munet.cli.build_parser", _parser_with(bug))
    assert main(["x"]) == EXIT_BUG
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error: RuntimeError: a bug" in err
    assert "--debug" in err
    assert main(["x", "--debug"]) == EXIT_BUG
    assert "Traceback" in capsys.readouterr().err


def test_a_state_that_already_exists_has_its_own_code(capsys, monkeypatch):
    from munet.system import StateExistsError

    def exists(args):
        raise StateExistsError("state X~y/state_1_0 is already committed")

    monkeypatch.setattr("munet.cli.build_parser", _parser_with(exists))
    assert main(["x"]) == EXIT_STATE_EXISTS
    assert "already committed" in capsys.readouterr().err


def _parser_with(func):
    import argparse

    def build():
        parser = argparse.ArgumentParser(prog="munet")
        sub = parser.add_subparsers(dest="command")
        for name in ("x", "tasks"):
            command = sub.add_parser(name)
            command.add_argument("rest", nargs="*")
            command.set_defaults(func=func)
        return parser

    return build


@pytest.mark.slow
def test_racing_roots_never_print_a_traceback(tmp_path):
    for round_index in range(5):
        state = tmp_path / f"s{round_index}"
        procs = [
            subprocess.Popen(
                [*MUNET, "root", "--agent", "VitCpu", "-d", str(state)],
                cwd=REPO,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(3)
        ]
        results = [(p.wait(300), *p.communicate()) for p in procs]
        # The losers wait for the winner's lock, then find the root made: "already exists",
        # exit 0, as a later `munet root` says (tests/cli/test_root_race.py for S3 too).
        for code, _out, err in results:
            assert "Traceback" not in err
            assert code == 0, err
        assert [p.name for p in (state / "VitCpu~root_model~pretrained").iterdir()] in (
            [".lock", "state_0_0"],
            ["state_0_0", ".lock"],
        )


NAMESPACE_SCRIPT = r"""
set -u
mnt="$1"; shift
mkdir -p "$mnt"
mount -t tmpfs -o size="$SIZE" tmpfs "$mnt" || exit 90
if [ "$MODE" = ro ]; then mount -o remount,ro "$mnt" || exit 90; fi
"$@"
code=$?
echo "LEFT:$(find "$mnt" -name '.tmp-*' | wc -l)" >&2
if [ "$MODE" = full ]; then
  mount -o remount,size=64m "$mnt" || exit 90
  "$@" > /dev/null 2>&1
  echo "RERUN:$?" >&2
fi
exit $code
"""


def _in_namespace(tmp_path, mode: str, size: str, *args: str) -> subprocess.CompletedProcess:
    probe = subprocess.run(["unshare", "-rm", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot make a mount namespace here (unshare -rm: {probe.stderr.strip()})")
    script = tmp_path / "ns.sh"
    script.write_text(NAMESPACE_SCRIPT)
    proc = subprocess.run(
        ["unshare", "-rm", "bash", str(script), str(tmp_path / "mnt"), *MUNET, *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
        env={**_env(), "MODE": mode, "SIZE": size},
    )
    if proc.returncode == 90:
        pytest.skip(f"cannot mount a tmpfs in a mount namespace here: {proc.stderr.strip()}")
    return proc


def _env():
    import os

    return dict(os.environ)


def _split(proc):
    lines = proc.stderr.strip().splitlines()
    info = {
        line.split(":")[0]: line.split(":")[1] for line in lines if line[:5] in ("LEFT:", "RERUN")
    }
    errors = [line for line in lines if not line.startswith(("LEFT:", "RERUN:"))]
    return info, errors


def test_a_read_only_state_dir_is_one_line(tmp_path):
    proc = _in_namespace(
        tmp_path, "ro", "4m", "root", "--agent", "VitCpu", "-d", str(tmp_path / "mnt")
    )
    info, errors = _split(proc)
    assert proc.returncode == EXIT_NO_PERMISSION, proc.stderr
    assert len(errors) == 1 and errors[0].startswith("munet: error: read-only file system")
    assert "Traceback" not in proc.stderr


@pytest.mark.slow
def test_a_full_disk_is_one_line_leaves_nothing_and_the_rerun_works(tmp_path):
    # 256 KiB: the VitCpu root model (about 800 KiB of tensors) cannot fit.
    state = str(tmp_path / "mnt")
    proc = _in_namespace(tmp_path, "full", "256k", "root", "--agent", "VitCpu", "-d", state)
    info, errors = _split(proc)
    assert proc.returncode == EXIT_DISK_FULL, proc.stderr
    assert len(errors) == 1 and errors[0].startswith("munet: error: no space left on the device")
    assert "rerun the same command" in errors[0]
    assert info["LEFT"] == "0"  # No temporary folder left behind.
    assert info["RERUN"] == "0"  # With space, the same command then succeeds.


BAD_COMMAND_LINES = [
    ["run", "--agent", "VitCpu", "--task", "digits", "--cycles", "-1"],
    ["run", "--agent", "VitCpu", "--task", "no-such-task", "--cycles", "1"],
    ["run", "--agent", "NoSuchAgent", "--task", "digits", "--cycles", "1"],
    ["run", "--agent", "VitCpu", "--task", "root_model/random_init", "--cycles", "1"],
    ["run", "--agent", "VitCpu", "--task", "digits", "--cycles", "1", "--set", "batch_size=x"],
    ["run", "--agent", "VitCpu", "--task", "digits", "--cycles", "1", "--set", "nope=1"],
    ["run", "--agent", "VitCpu", "--task", "digits", "--cycles", "1", "--set", "opt_lr"],
    ["run", "--agent", "VitCpu", "--task", "digits", "--cycles", "1", "--set", "_mu_=2"],
    ["run", "--agent", "VitCpu", "--task", "digits", "--cycles", "1", "--set", "seed=1.5"],
    ["run", "--agent", "VitCpu", "--task", "dig/../its", "--cycles", "1"],
    ["root", "--agent", "VitCpu", "--root", "checkpoint"],
    ["root", "--agent", "VitCpu", "--root", "checkpoint", "--set", "checkpoint_path=/nope.npz"],
    ["root", "--agent", "VitCpu", "--set", "ds_image_size=0"],
    ["leaderboard", "-d", "/no/such/state/dir"],
    ["doctor", "-d", "/no/such/state/dir"],
]


@pytest.mark.parametrize("argv", BAD_COMMAND_LINES, ids=lambda a: " ".join(a[:2] + a[-2:]))
def test_bad_command_lines_are_one_line_without_a_traceback(argv, tmp_path, capsys):
    if "-d" not in argv:
        argv = [*argv, "-d", str(tmp_path / "state")]
    code = main(argv)
    err = _without_start_line(capsys.readouterr().err)
    assert code == EXIT_BAD_INPUT, err
    assert err.count("\n") == 1 and err.startswith("munet: error: "), err


def test_a_state_dir_that_is_a_file_is_one_line(tmp_path, capsys):
    state = tmp_path / "file"
    state.write_text("not a folder")
    code = main(["root", "--agent", "VitCpu", "-d", str(state)])
    err = capsys.readouterr().err
    assert code == 9 and err.count("\n") == 1 and "Not a directory" in err, err


def test_an_agents_own_damaged_state_is_one_line_naming_doctor(tmp_path, capsys):
    state = tmp_path / "s"
    sets = [arg for o in TINY_OVERRIDES for arg in ("--set", o)]
    run = ["run", "--agent", "VitCpu", "--task", "digits", "-d", str(state), *sets]
    assert main(["root", "--agent", "VitCpu", "-d", str(state), *sets]) == 0
    assert main([*run, "--cycles", "1"]) == 0
    shard = next((state / "VitCpu~digits" / "state_1_0").glob("*.safetensors"))
    data = bytearray(shard.read_bytes())
    data[-3] ^= 0xFF  # One flipped bit pattern in the last tensor's bytes.
    shard.write_bytes(bytes(data))
    capsys.readouterr()
    assert main([*run, "--cycles", "2"]) == EXIT_DAMAGED_STATE
    err = capsys.readouterr().err
    *_, error = err.splitlines()  # After the agent's own log lines, one error line.
    assert error.startswith("munet: error: ") and "Traceback" not in err, err
    assert "state_1_0" in error and "checksum" in error and f"munet doctor -d {state}" in error
    # Nothing was written past the damaged state, and the file is left as it was.
    assert sorted(p.name for p in (state / "VitCpu~digits").glob("state_*")) == ["state_1_0"]
    assert shard.read_bytes() == bytes(data)
