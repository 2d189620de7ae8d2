"""Jobs stopped by a flag they watch (what RayExecutor.cancel_all uses instead of ray.cancel)."""

import threading
import time

import pytest

from munet.job_cancel import JobCancelled, run_watched


def test_a_job_whose_flag_is_up_before_it_starts_does_not_run():
    ran = []
    with pytest.raises(JobCancelled, match="before it started"):
        run_watched(ran.append, 1, lambda: True)
    assert ran == []


def _steps(log):
    """A job made of short steps, like training, for 60 s; `log` records its steps and end."""
    end = time.monotonic() + 60
    while time.monotonic() < end:
        time.sleep(0.01)
        log.append("step")
    log.append("ended")


def test_a_running_job_stops_soon_after_the_flag_rises():
    raised = threading.Event()
    threading.Timer(0.3, raised.set).start()
    log = []
    with pytest.raises(JobCancelled, match="while running"):
        run_watched(_steps, log, raised.is_set, poll_s=0.05)
    # Stopped between two of its steps, after the flag rose: it did not run to its end.
    assert raised.is_set() and "step" in log and "ended" not in log


def test_a_job_that_ends_first_returns_and_leaves_no_interrupt_behind():
    raised = threading.Event()
    assert run_watched(lambda x: x * 2, 21, raised.is_set, poll_s=0.01) == 42
    raised.set()  # the flag rising after the job ended reaches nothing
    time.sleep(0.1)


def test_a_ctrl_c_of_the_job_itself_stays_a_keyboard_interrupt():
    def interrupted(_):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_watched(interrupted, None, lambda: False, poll_s=0.01)
