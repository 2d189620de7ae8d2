"""Issue 31, the command line's edges: a closed stdout is a quiet exit 0; SIGTERM is taken like
Ctrl-C (cleanup, no `.tmp-state*` left) with its own exit code, 143; a `--out` that takes no
files is exit 7 naming `--out`. Real subprocesses: signals and pipes are the OS's."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from munet.cli import main
from munet.cli.errors import EXIT_NO_PERMISSION, EXIT_TERMINATED

from ..agents.conftest import TINY_OVERRIDES

REPO = Path(__file__).resolve().parents[2]
SETS = [arg for item in TINY_OVERRIDES for arg in ("--set", item)]
MUNET = [sys.executable, "-m", "munet"]


def _env():
    return dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS="1")


def test_a_closed_stdout_is_a_quiet_exit_0():
    # The reader is gone before munet writes (as `| head -2` once it has its lines).
    process = subprocess.Popen(
        [*MUNET, "config", "show", "--agent", "VitCpu"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(),
    )
    process.stdout.close()
    err = process.stderr.read().decode()
    assert process.wait() == 0, err
    assert "error" not in err and "Broken pipe" not in err


def test_a_closed_stdout_through_a_shell_pipe_to_head():
    result = subprocess.run(
        f"{sys.executable} -m munet config show --agent VitCpu | head -2",
        shell=True,
        capture_output=True,
        text=True,
        env=_env(),
    )
    assert len(result.stdout.splitlines()) == 2
    assert "error" not in result.stderr and "Broken pipe" not in result.stderr


@pytest.mark.slow  # four munet processes (about 15 s alone, 50 s on a loaded 2-core box)
def test_sigterm_stops_a_run_like_ctrl_c(tmp_path):
    state = tmp_path / "state"
    subprocess.run(
        [*MUNET, "root", "--agent", "VitCpu", "-d", str(state), *SETS, "--root", "random_init"],
        env=_env(),
        check=True,
        capture_output=True,
    )
    run = [*MUNET, "run", "--agent", "VitCpu", "--task", "digits", "--cycles", "50"]
    process = subprocess.Popen(
        [*run, "-d", str(state), *SETS, "-q"],
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    agent_dir = state / "VitCpu~digits"
    deadline = time.time() + 120
    # Stop it while a state is being written when that is seen (the cleanup's hard case),
    # else once a state is committed.
    while time.time() < deadline and process.poll() is None:
        if agent_dir.is_dir() and (
            any(p.name.startswith(".tmp-") for p in agent_dir.iterdir())
            or any(agent_dir.glob("state_*"))
        ):
            break
        time.sleep(0.001)
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=120)
    assert process.returncode == EXIT_TERMINATED == 143, (out, err)
    assert "munet: error: terminated (SIGTERM)" in err and "Traceback" not in err
    assert not [p.name for p in agent_dir.iterdir() if p.name.startswith(".tmp-")]
    # The lock is released: a rerun goes on from the committed state.
    rerun = subprocess.run(
        [*MUNET, "run", "--agent", "VitCpu", "--task", "digits", "--cycles", "1"]
        + ["-d", str(state), *SETS, "-q"],
        env=_env(),
        capture_output=True,
        text=True,
    )
    assert rerun.returncode == 0, rerun.stderr


def test_report_out_where_no_file_can_be_made_is_exit_7_naming_out(tmp_path, capsys):
    from munet.agents.root import create_root_model
    from munet.config import apply_overrides, get_preset

    config = apply_overrides(get_preset("VitCpu"), TINY_OVERRIDES)
    create_root_model(config, tmp_path / "state", "random_init")
    capsys.readouterr()  # the root's own log line (an earlier command may have set INFO)
    # /proc takes no new files (even for root): "No such file or directory" on the temp file.
    code = main(["report", "-d", str(tmp_path / "state"), "--out", "/proc/munet-report.html"])
    err = capsys.readouterr().err
    assert code == EXIT_NO_PERMISSION == 7
    assert err.startswith("munet: error: cannot write --out /proc/munet-report.html: ")


def test_ctrl_c_while_the_commands_load_is_exit_130_without_a_traceback(monkeypatch, capsys):
    # build_parser imports every command's module (torch among them, about 2 s): a Ctrl-C
    # there once escaped main as a traceback and a death by SIGINT (-2) instead of exit 130.
    import munet.cli

    def interrupted_while_loading():
        raise KeyboardInterrupt

    monkeypatch.setattr(munet.cli, "build_parser", interrupted_while_loading)
    assert main(["launch", "--help"]) == 130
    assert capsys.readouterr().err.strip() == "munet: error: interrupted"


def test_ctrl_c_inside_an_exec_while_the_commands_load_still_exits_130(tmp_path):
    # While torch imports, dataclasses build their methods with exec(); a KeyboardInterrupt
    # raised inside an exec makes CPython 3.11 end a `python -m` run by SIGINT at exit (-2),
    # even after munet caught it and chose 130. The Ctrl-C is now taken after the imports.
    (tmp_path / "ctrl_c_in_exec.py").write_text(
        "import sys\n"
        "import munet.cli\n"
        "build_parser = munet.cli.build_parser\n"
        "def loading():\n"
        "    exec('import os, signal, time\\n'\n"
        "         'os.kill(os.getpid(), signal.SIGINT)\\n'\n"
        "         'end = time.monotonic() + 1\\n'\n"
        "         'while time.monotonic() < end: pass\\n')\n"
        "    return build_parser()\n"
        "munet.cli.build_parser = loading\n"
        "sys.exit(munet.cli.main(['checkpoint', 'list']))\n"
    )
    env = dict(_env(), PYTHONPATH=f"{tmp_path}{os.pathsep}{REPO}")
    done = subprocess.run(
        [sys.executable, "-m", "ctrl_c_in_exec"], env=env, capture_output=True, text=True,
        timeout=120, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    assert (done.returncode, done.stderr.strip()) == (130, "munet: error: interrupted")
    assert done.stdout == ""  # the command never ran
