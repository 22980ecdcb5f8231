"""The percentile and the median, written once for placement, the store and the benches.

A percentile is by nearest rank, as the lab chose: the smallest value with at least q% of the
values at or below it, so a p95 is always a value that was seen (of twenty claims, the
nineteenth quickest) and reads the same in the loop, the record and every bench's table. A
median is `statistics.median`'s: the middle value, or the mean of the two middle ones.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable


def percentile(values: Iterable[float], q: float) -> float | None:
    """The q-th percentile (0 to 100) by nearest rank; None for no values."""
    ordered = sorted(values)
    if not ordered:
        return None
    rank = max(1, int(-(-len(ordered) * q // 100)))  # ceil(n * q / 100), in whole numbers where q is one
    return ordered[rank - 1]


def median(values: Iterable[float], empty: float = 0.0) -> float:
    """The median; `empty` for no values (no evidence, where a caller weighs it as nothing)."""
    values = list(values)
    return statistics.median(values) if values else empty
