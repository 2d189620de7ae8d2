from munet.progress import Pace, bars_enabled, format_duration


def test_format_duration():
    assert [format_duration(s) for s in (0, 42.4, 185, 7620)] == ["0s", "42s", "3m05s", "2h07m"]


def test_pace_says_the_time_left_once_a_unit_is_done():
    pace = Pace(4)
    assert "left" not in pace.eta_text()
    pace.start -= 10  # as if 10 s had passed
    pace.advance()
    assert pace.eta_text() == "elapsed 10s, about 30s left"
    pace.advance(3)
    assert pace.eta_text() == "elapsed 10s"


def test_bars_follow_the_flag_and_else_the_terminal():
    assert bars_enabled(True) and not bars_enabled(False)
    assert bars_enabled(None) is False  # pytest's captured stderr is no terminal


def test_bar_safe_handler_writes_to_the_current_stderr_not_a_closed_old_one(monkeypatch):
    import io
    import logging
    import sys

    from munet.progress import BarSafeHandler

    old = io.StringIO()
    monkeypatch.setattr(sys, "stderr", old)
    handler = BarSafeHandler()
    logger = logging.getLogger("munet.test_bar_safe_handler")
    logger.handlers[:] = [handler]
    logger.propagate = False
    old.close()  # e.g. the capture of an earlier test, gone
    new = io.StringIO()
    monkeypatch.setattr(sys, "stderr", new)
    logger.warning("to the stream of now")
    assert new.getvalue() == "to the stream of now\n"
