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


def _steps(seconds):
    """A job made of short steps, like training."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        time.sleep(0.01)


def test_a_running_job_stops_soon_after_the_flag_rises():
    raised = threading.Event()
    threading.Timer(0.3, raised.set).start()
    start = time.monotonic()
    with pytest.raises(JobCancelled, match="while running"):
        run_watched(_steps, 60, raised.is_set, poll_s=0.05)
    assert time.monotonic() - start < 10  # not the job's 60 s


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
