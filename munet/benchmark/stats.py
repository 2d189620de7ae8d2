"""Means and 95% intervals over seeds (Student t), and paired ratios.

Pure functions, no torch: the report and the tests use them directly.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

# Two-sided 95% quantiles of Student's t (t_{0.975, df}) for df 1..30; beyond, the
# Cornish-Fisher expansion around the normal quantile (error < 1e-4 for df > 30).
_T975 = (
    12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281,
    2.2010, 2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860,
    2.0796, 2.0739, 2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423,
)  # fmt: skip
_Z975 = 1.959963984540054


def t_quantile_975(df: int) -> float:
    """Student's t quantile at 0.975 (the half-width factor of a 95% interval).

    Raises:
        ValueError: ``df`` < 1.
    """
    if df < 1:
        raise ValueError(f"degrees of freedom {df!r}: expected at least 1")
    if df <= len(_T975):
        return _T975[df - 1]
    z = _Z975
    return (
        z
        + (z**3 + z) / (4 * df)
        + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)
        + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * df**3)
    )


@dataclass(frozen=True)
class Interval:
    """Mean of ``n`` values and the half-width of its 95% interval (NaN for one value)."""

    mean: float
    half_width: float
    n: int

    @property
    def low(self) -> float:
        return self.mean - self.half_width

    @property
    def high(self) -> float:
        return self.mean + self.half_width

    def text(self, digits: int = 3) -> str:
        """``0.912 ± 0.014`` (``0.912`` alone when there is no interval)."""
        if not math.isfinite(self.half_width):
            return f"{self.mean:.{digits}f}"
        return f"{self.mean:.{digits}f} ± {self.half_width:.{digits}f}"

    def to_dict(self) -> dict[str, float | int | None]:
        half = self.half_width if math.isfinite(self.half_width) else None
        return {"mean": self.mean, "ci95": half, "n": self.n}


def t_interval(values: Sequence[float]) -> Interval:
    """Mean and 95% Student-t half-width ``t_{0.975, n-1} * sd / sqrt(n)`` of ``values``.

    Raises:
        ValueError: no values, or a value that is not finite.
    """
    values = [float(v) for v in values]
    if not values:
        raise ValueError("no values to average")
    bad = [v for v in values if not math.isfinite(v)]
    if bad:
        raise ValueError(f"value {bad[0]!r} is not finite")
    mean = statistics.fmean(values)
    if len(values) == 1:
        return Interval(mean, float("nan"), 1)
    sd = statistics.stdev(values)
    return Interval(
        mean, t_quantile_975(len(values) - 1) * sd / math.sqrt(len(values)), len(values)
    )


def paired_ratio(numerators: Sequence[float], denominators: Sequence[float]) -> Interval:
    """Per-pair ratios ``a_i / b_i`` (pairs: the same seed), averaged with a 95% interval.

    Raises:
        ValueError: the sequences differ in length, are empty, or a denominator is 0.
    """
    if len(numerators) != len(denominators):
        raise ValueError(
            f"paired values of unequal length: {len(numerators)} and {len(denominators)}"
        )
    if any(b == 0 for b in denominators):
        raise ValueError("a paired denominator is 0")
    return t_interval([a / b for a, b in zip(numerators, denominators, strict=True)])
