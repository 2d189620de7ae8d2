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
