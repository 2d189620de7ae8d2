"""The demo's first time-left estimate against the time its agent cycles then took, on a tiny
config: within a factor of 3 either way.

Why this holds on a loaded 2-core machine: the estimate and the time it predicts are measured
in the same process in the same few seconds, so a load that slows one slows the other; one-off
costs of a fresh process (imports, first allocations, the tasks' data) are paid by a warm-up
run first, so the first agent cycle is a cycle like the others. Only a load that changes
threefold within seconds of the run could break it. The arithmetic itself, every stage
included, is pinned without a clock in tests/cli/test_progress_lines.py.
"""

from __future__ import annotations

import pytest

import munet.agents.demo as demo
from munet.agents import run_demo

from .conftest import TINY_OVERRIDES

# Cycles long enough that a cycle's work outweighs its fixed costs (state commits, test eval).
OVERRIDES = [*TINY_OVERRIDES, "num_train_examples_between_validations_max=64"]


@pytest.mark.slow
def test_the_first_estimate_covers_both_stages_and_is_within_3x_of_the_time_taken(
    tmp_path, monkeypatch
):
    tasks = ["digits", "synth/color"]
    kwargs = {"tasks": tasks, "overrides": OVERRIDES, "workers": 1, "root_kind": "random_init"}
    run_demo(str(tmp_path / "warm"), cycles=1, echo=lambda _: None, **kwargs)  # warm-up
    seen: dict[str, float] = {}
    made = demo.demo_pace

    def observed(*args, **kwargs):
        pace = made(*args, **kwargs)
        finish = pace.finish_job

        def finish_job(stage, measured=True, seconds=None):
            finish(stage, measured, seconds)
            if "estimate" not in seen:
                seen["estimate"], seen["at"] = pace.seconds_left(), pace.clock()
            seen["end"] = pace.clock()

        pace.finish_job = finish_job
        seen["pace"] = pace
        return pace

    monkeypatch.setattr(demo, "demo_pace", observed)
    lines: list[str] = []
    run_demo(str(tmp_path / "demo"), cycles=2, echo=lines.append, **kwargs)
    pace = seen["pace"]
    assert [s.name for s in pace.stages] == ["singlepath", "multipath"]
    assert pace.done == {"singlepath": 4, "multipath": 2}
    taken = seen["end"] - seen["at"]
    assert 1 / 3 <= seen["estimate"] / taken <= 3, (seen["estimate"], taken)
    # Every agent cycle's line gives the time left of both stages.
    cycle_lines = [line for line in lines if "multipath agent cycles" in line]
    assert len(cycle_lines) == 6 and "about" in cycle_lines[0] and "left" in cycle_lines[0]
