import math

import pytest

from munet.benchmark.stats import Interval, paired_ratio, t_interval, t_quantile_975


@pytest.mark.parametrize(
    ("df", "expected"),
    [(1, 12.7062), (2, 4.3027), (4, 2.7764), (10, 2.2281), (30, 2.0423), (40, 2.0211),
     (60, 2.0003), (120, 1.9799), (1000, 1.9623)],
)  # fmt: skip
def test_t_quantile_matches_published_tables(df, expected):
    assert t_quantile_975(df) == pytest.approx(expected, abs=2e-4)


def test_t_quantile_agrees_with_scipy_where_installed():
    stats = pytest.importorskip("scipy.stats")
    for df in [1, 2, 3, 5, 8, 13, 29, 31, 45, 77, 200]:
        assert t_quantile_975(df) == pytest.approx(stats.t.ppf(0.975, df), abs=2e-4)


def test_t_quantile_refuses_no_degrees_of_freedom():
    with pytest.raises(ValueError, match="degrees of freedom 0"):
        t_quantile_975(0)


def test_interval_is_mean_and_t_times_standard_error():
    interval = t_interval([1.0, 2.0, 3.0])
    # sd 1, n 3: half-width t_{0.975, 2} / sqrt(3).
    assert interval.mean == pytest.approx(2.0)
    assert interval.half_width == pytest.approx(4.3027 / math.sqrt(3), abs=1e-4)
    assert interval.low < 2.0 < interval.high
    assert interval.to_dict() == {"mean": 2.0, "ci95": interval.half_width, "n": 3}


def test_identical_values_have_a_zero_width_interval():
    assert t_interval([0.5, 0.5, 0.5]).half_width == 0.0


def test_one_value_has_no_interval():
    interval = t_interval([0.7])
    assert math.isnan(interval.half_width)
    assert interval.to_dict()["ci95"] is None
    assert interval.text() == "0.700"
    assert Interval(0.7, 0.01, 2).text() == "0.700 ± 0.010"


@pytest.mark.parametrize(("values", "match"), [([], "no values"), ([1.0, math.nan], "not finite")])
def test_interval_refuses_bad_values(values, match):
    with pytest.raises(ValueError, match=match):
        t_interval(values)


def test_paired_ratio_averages_per_seed_ratios():
    ratio = paired_ratio([0.9, 0.8], [1.0, 0.5])  # ratios 0.9 and 1.6
    assert ratio.mean == pytest.approx(1.25)
    assert ratio.n == 2
    with pytest.raises(ValueError, match="unequal length"):
        paired_ratio([1.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="denominator is 0"):
        paired_ratio([1.0], [0.0])
