"""The small statistics the switchback analysis reads its figures with: a percentile by nearest
rank, Student's t quantile, and a ratio's standard error over blocks. Pure arithmetic on lists
of floats, with the standard library only, so every figure can be checked by hand.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

from .stats import percentile

NORMAL = NormalDist()

# The percentile by nearest rank is the one the loop and the lab's benches read (`stats.py`).
nearest_rank = percentile


def _t_within(t: float, df: int) -> float:
    """P(|T| < t) for Student's t with a whole number of degrees of freedom, by the finite
    series of Abramowitz and Stegun 26.7.3 and 26.7.4."""
    theta = math.atan(t / math.sqrt(df))
    cos2 = math.cos(theta) ** 2
    if df % 2 == 1:
        term, total = 1.0, 0.0
        if df > 1:
            total = term = math.cos(theta)
            for k in range(3, df - 1, 2):
                term *= cos2 * (k - 1) / k
                total += term
        return 2 / math.pi * (theta + math.sin(theta) * total)
    term = total = 1.0
    for k in range(2, df - 1, 2):
        term *= cos2 * (k - 1) / k
        total += term
    return math.sin(theta) * total


def t_quantile(p: float, df: float) -> float:
    """Student's t quantile at probability p (0.5 < p < 1), with df degrees of freedom rounded
    down, so a fractional Welch df never narrows an interval. Beyond 200 degrees, the normal's."""
    whole = max(1, int(df))
    if whole > 200:
        return NORMAL.inv_cdf(p)
    within = 2 * p - 1
    low, high = 0.0, 1.0
    while _t_within(high, whole) < within:
        high *= 2
    for _ in range(100):
        middle = (low + high) / 2
        low, high = (middle, high) if _t_within(middle, whole) < within else (low, middle)
    return high


@dataclass(frozen=True)
class Ratio:
    """One arm's figure as a ratio over its blocks (successes over countable cards, seconds of
    lead over successes): the pooled value, its squared standard error from the block-to-block
    spread (None under two blocks), the same from the cards' own spread, and the block count."""

    value: float
    block_var: float | None
    card_var: float
    blocks: int


def ratio(tops: Sequence[float], bottoms: Sequence[float], card_var: float) -> Ratio | None:
    """The pooled ratio sum(tops) / sum(bottoms) over the blocks with a non-zero bottom, and its
    squared standard error by the ratio estimator's linearisation: n/(n-1) times the sum of
    (top - value * bottom)^2, over the squared sum of bottoms. None where no block counts."""
    pairs = [(top, bottom) for top, bottom in zip(tops, bottoms) if bottom > 0]
    if not pairs:
        return None
    total = sum(bottom for _, bottom in pairs)
    value = sum(top for top, _ in pairs) / total
    n = len(pairs)
    block_var = None
    if n >= 2:
        block_var = n / (n - 1) * sum((top - value * bottom) ** 2 for top, bottom in pairs) / total**2
    return Ratio(value, block_var, card_var, n)


def welch_df(a: float, n_a: float, b: float, n_b: float) -> float:
    """Welch-Satterthwaite degrees of freedom for two squared standard errors a and b from n_a
    and n_b blocks; the smaller sample's own where both are zero."""
    top = (a + b) ** 2
    bottom = a**2 / (n_a - 1) + b**2 / (n_b - 1)
    return top / bottom if bottom > 0 else float(min(n_a, n_b) - 1)


def mean_and_var(values: Sequence[float]) -> tuple[float, float]:
    """The mean of values and the squared standard error of that mean (0 under two values)."""
    n = len(values)
    mean = sum(values) / n
    if n < 2:
        return mean, 0.0
    return mean, sum((v - mean) ** 2 for v in values) / (n - 1) / n
