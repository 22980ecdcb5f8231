"""The what-if's 95% intervals: a mean's, and a ratio of means' by the delta method, each
from a column's mean and variance (the spread over decisions plus each one's own)."""

from __future__ import annotations

import math
from itertools import repeat
from operator import mul, sub
from typing import NamedTuple, Sequence

Z95 = 1.959964


class Interval(NamedTuple):
    """A figure and its 95% interval."""

    value: float
    low: float
    high: float

    def to_record(self, digits: int) -> dict[str, float | None]:
        """Each bound rounded; None where there is no figure (no success: no lead to one)."""
        return {
            name: round(value, digits) if math.isfinite(value) else None
            for name, value in (("value", self.value), ("low", self.low), ("high", self.high))
        }


def column_of(values: Sequence[float], spreads: Sequence[float]) -> tuple[float, float]:
    """A column's mean, and its variance: the spread over decisions plus each one's own."""
    n = len(values)
    mean = math.fsum(values) / n
    return mean, sample_variance(values, mean) + math.fsum(spreads) / n


def mean_interval(column: tuple[float, float], n: int) -> Interval:
    """The mean, and its 95% interval: the column's variance over n."""
    mean, variance = column
    half = Z95 * math.sqrt(max(variance, 0.0) / n)
    return Interval(mean, mean - half, mean + half)


def ratio_interval(
    tops: Sequence[float], top: tuple[float, float], bottoms: Sequence[float], bottom: tuple[float, float]
) -> Interval:
    """mean(tops) / mean(bottoms), and its 95% interval by the delta method, from each
    column's mean and variance (`column_of`)."""
    n = len(tops)
    (top_mean, var_top), (bottom_mean, var_bottom) = top, bottom
    if bottom_mean <= 0:
        return Interval(math.inf, math.inf, math.inf)
    ratio = top_mean / bottom_mean
    covariance = math.fsum(
        map(mul, map(sub, tops, repeat(top_mean)), map(sub, bottoms, repeat(bottom_mean)))
    ) / max(n - 1, 1)
    variance = (var_top - 2 * ratio * covariance + ratio * ratio * var_bottom) / (bottom_mean * bottom_mean)
    half = Z95 * math.sqrt(max(variance, 0.0) / n)
    return Interval(ratio, ratio - half, ratio + half)


def sample_variance(values: Sequence[float], mean: float) -> float:
    """The sample variance: the sum of each (v - mean) squared, over n - 1."""
    if len(values) < 2:
        return 0.0
    deviations = list(map(sub, values, repeat(mean)))
    return math.fsum(map(mul, deviations, deviations)) / (len(values) - 1)


def clipped(interval: Interval, low: float, high: float = math.inf) -> Interval:
    return Interval(interval.value, max(interval.low, low), min(interval.high, high))
