"""Progress in a log: the time left of staged work (munet.staged_pace.StagedPace), the heartbeat's
status lines, and a long command's first line before its work (munet.cli.status_lines)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from munet.progress import (
    Heartbeat,
    Pace,
    current_status,
    heartbeat_seconds,
    status_source,
)
from munet.staged_pace import Stage, StagedPace

REPO = Path(__file__).resolve().parents[2]


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _demo_like(clock: FakeClock, multipath: bool = True) -> StagedPace:
    """The demo's shape: 4 singlepath agents x 2 cycles, then 2 multipath agents x 1 cycle,
    on 2 workers."""
    stages = [Stage("singlepath", 2, 4, 2)]
    if multipath:
        stages.append(Stage("multipath", 1, 2, 2))
    return StagedPace(stages, unit="agent cycles", clock=clock)


def _replay(
    pace: StagedPace,
    clock: FakeClock,
    schedule: list[tuple[str, list[float]]],
    startup: dict[str, float] | None = None,
):
    """Plays rounds of jobs (their own lengths, queued in order) on the pace's lanes: each
    finished job starts the next queued one on its lane, as a process pool does; a stage's
    first job on each lane also takes ``startup[stage]`` (its worker starting). Returns the
    estimate made when the first job ended, its time, and when the last job ended."""
    first: tuple[float, float] | None = None
    begun: set[str] = set()
    for stage, lengths in schedule:
        lanes = pace.stage(stage).lanes
        pace.start_round(stage)
        extra = (startup or {}).get(stage, 0.0) if stage not in begun else 0.0
        begun.add(stage)
        free = [clock.now + extra] * lanes
        ends = []
        for length in lengths:
            lane = free.index(min(free))
            free[lane] += length
            ends.append((free[lane], length))
        for end, length in sorted(ends):
            clock.now = end
            pace.finish_job(stage, seconds=length)
            if first is None:
                first = (pace.seconds_left(), clock.now)
    assert first is not None
    return first[0], first[1], clock.now


def test_like_jobs_on_two_workers_are_estimated_exactly_and_every_stage_counts():
    clock = FakeClock()
    pace = _demo_like(clock)
    assert pace.seconds_left() is None and "left" not in pace.eta_text()  # nothing measured
    estimate, at, end = _replay(
        pace, clock, [("singlepath", [10] * 4), ("singlepath", [10] * 4), ("multipath", [10] * 2)]
    )
    # At t=10 two jobs ended together (the first is counted): 1 wave more of round 1, 2 waves
    # of round 2, 1 wave of the multipath stage.
    assert (at, estimate, end - at) == (10, 40, 40)
    # The old estimate (elapsed / done * jobs left, singlepath only) said 10 / 1 * 7 = 70.
    clock.now = 10
    without_multipath = _demo_like(clock, multipath=False)
    clock.now = 0
    without_multipath.start = 0
    without_multipath.start_round("singlepath")
    clock.now = 10
    without_multipath.finish_job("singlepath")
    assert without_multipath.seconds_left() == 30  # the multipath stage is the other 10 s
    assert pace.describe().startswith("8/8 singlepath, 2/2 multipath agent cycles, elapsed")


# One run of the demo (4 tasks, 2 cycles, --workers 2, --set num_samples_per_cycle=2 --set
# num_train_examples_between_validations_max=256, on 2 loaded cores): each agent cycle's own
# seconds in the order the jobs were queued, and each stage's start-up (its first job as the
# demo saw it, less the job's own seconds: a worker process starting).
MEASURED = [
    ("singlepath", [22, 26, 10, 11]),
    ("singlepath", [5, 17, 14, 11]),
    ("multipath", [19, 20]),
]
MEASURED_STARTUP = {"singlepath": 11.3, "multipath": 7.6}


def test_the_first_estimate_of_measured_unequal_cycles_is_within_a_factor_of_1_5():
    clock = FakeClock()
    pace = _demo_like(clock)
    estimate, at, end = _replay(pace, clock, MEASURED, MEASURED_STARTUP)
    assert 1 / 1.5 <= estimate / (end - at) <= 1.5, (estimate, end - at)
    assert pace.startup_seconds == pytest.approx(MEASURED_STARTUP)
    # The old estimate (elapsed / done * singlepath jobs left) was off by more than 3x.
    assert at / 1 * 7 / (end - at) > 3


def test_a_stage_never_measured_is_costed_at_the_pace_of_the_last_one():
    clock = FakeClock()
    pace = _demo_like(clock)
    _replay(pace, clock, [("singlepath", [10] * 4), ("singlepath", [10] * 4)])
    assert pace.job_estimate("multipath") == 10 and pace.seconds_left() == 10
    pace.start_round("multipath")
    clock.now += 4
    pace.finish_job("multipath")
    assert pace.job_estimate("multipath") == 4  # its own, once measured
    with pytest.raises(ValueError, match="all started"):
        pace.start_round("multipath")


def test_a_job_with_nothing_to_do_is_not_a_measure():
    clock = FakeClock()
    pace = _demo_like(clock)
    pace.start_round("singlepath")
    pace.finish_job("singlepath", measured=False)  # a resumed agent's cycle already done
    assert pace.seconds_left() is None and pace.done["singlepath"] == 1


def test_the_heartbeat_writes_status_lines_until_closed():
    written: list[str] = []
    two = threading.Event()

    def write(line: str) -> None:
        written.append(line)
        if len(written) >= 2:
            two.set()

    pace = Pace(4, "cells")
    pace.advance()
    with status_source(lambda: "demo: 1/6 agent cycles"):
        assert current_status() == "demo: 1/6 agent cycles; 1/4 cells, " + pace.eta_text()
        with Heartbeat("munet demo", 0.01, write):
            assert two.wait(30)
        count = len(written)
    assert written[0].startswith("munet demo: running 0s; demo: 1/6 agent cycles; 1/4 cells")
    time.sleep(0.05)
    assert len(written) == count  # none after the context closed
    pace.advance(3)
    assert current_status() == ""  # the finished pace and the closed source say nothing


@pytest.mark.parametrize("raw", ["soon", "-1", "nan", "inf"])
def test_a_bad_heartbeat_period_is_refused_with_its_value(raw):
    with pytest.raises(ValueError, match=f"MUNET_PROGRESS_EVERY='{raw}': expected the seconds"):
        heartbeat_seconds({"MUNET_PROGRESS_EVERY": raw})
    assert heartbeat_seconds({}) == 30 and heartbeat_seconds({"MUNET_PROGRESS_EVERY": "0"}) == 0


def test_a_long_command_says_it_started_before_its_work_and_then_beats(monkeypatch, capsys):
    """In a log (pytest's capture is no terminal): `munet demo: started` is written before the
    handler runs, and status lines follow while it works."""
    import munet.cli.agents as agents_cli
    from munet.cli import main

    seen: dict[str, str] = {}

    def demo(args):
        seen["before"] = capsys.readouterr().err  # what a log holds when the work starts
        deadline = time.monotonic() + 60
        while "munet demo: running" not in seen.setdefault("after", ""):
            assert time.monotonic() < deadline, "no status line"
            time.sleep(0.01)
            seen["after"] += capsys.readouterr().err
        return 0

    monkeypatch.setattr(agents_cli, "_demo", demo)
    monkeypatch.setenv("MUNET_PROGRESS_EVERY", "0.05")
    assert main(["demo", "-d", "unused"]) == 0
    assert seen["before"] == "munet demo: started (a status line every 0.05s while it runs)\n"
    # -q and --no-progress: neither line.
    for flag in ("-q", "--no-progress"):
        seen.clear()
        seen["after"] = "munet demo: running"
        assert main(["demo", "-d", "unused", flag]) == 0
        assert seen["before"] == ""


def test_a_bad_heartbeat_period_is_an_argument_error(monkeypatch, capsys):
    from munet.cli import main

    monkeypatch.setenv("MUNET_PROGRESS_EVERY", "often")
    assert main(["demo", "-d", "unused"]) == 2
    assert "munet: error: MUNET_PROGRESS_EVERY='often'" in capsys.readouterr().err


# In one fresh process: each command and subcommand with an unknown option, then one with a
# bad value where it has a typed option; whether torch is imported after each.
WALK = r"""
import argparse, contextlib, io, json, sys
from munet.cli import build_parser, main

def commands(parser, prefix=()):
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield list(prefix), parser
    for action in subs:
        for name, sub in action.choices.items():
            yield from commands(sub, (*prefix, name))

def typed(parser):
    for action in parser._actions:
        if action.option_strings and action.type in (int, float) and action.nargs is None:
            return action.option_strings[-1]
    return None

report = []
for argv, parser in commands(build_parser()):
    tries = [[*argv, "--no-such-option"]]
    if typed(parser):
        tries.append([*argv, typed(parser), "not-a-number"])
    for args in tries:
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            try:
                code = main(args)
            except SystemExit as exit:
                code = exit.code
        report.append({"argv": args, "exit": code, "err": err.getvalue()[-300:],
                       "torch": "torch" in sys.modules})
print(json.dumps(report))
"""


def test_every_commands_argument_errors_exit_2_without_importing_torch(tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", WALK], capture_output=True, text=True, cwd=tmp_path, timeout=120,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    tried = {" ".join(entry["argv"][:-1]) for entry in report}
    assert {"demo", "run", "benchmark", "pretrain --steps", "es lr", "search"} <= tried | {
        " ".join(entry["argv"][:1]) for entry in report
    }
    assert len(report) > 30
    for entry in report:
        assert entry["exit"] == 2 and "munet: error: " in entry["err"], entry
    assert [entry["argv"] for entry in report if entry["torch"]] == []
