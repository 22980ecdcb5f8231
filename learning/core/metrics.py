"""How well predicted probabilities `p` match 0/1 outcomes `y`."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

EPSILON = 1e-15  # log loss clips probabilities to [EPSILON, 1 - EPSILON]


def _arrays(y: Sequence[float], p: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    ya = np.asarray(y, dtype=np.float64)
    pa = np.asarray(p, dtype=np.float64)
    if ya.shape != pa.shape or ya.ndim != 1:
        raise ValueError("y and p must be two sequences of the same length")
    return ya, pa


def auc(y: Sequence[float], p: Sequence[float]) -> float | None:
    """The area under the ROC curve by ranks (Mann-Whitney), ties averaged; None with one class."""
    ya, pa = _arrays(y, p)
    positives = int(np.count_nonzero(ya == 1))
    negatives = len(ya) - positives
    if positives == 0 or negatives == 0:
        return None
    _, inverse, counts = np.unique(pa, return_inverse=True, return_counts=True)
    # Tied values share the mean of the 1-based ranks they span.
    mean_rank = np.cumsum(counts) - (counts - 1) / 2.0
    rank_sum = float(mean_rank[inverse][ya == 1].sum())
    return (rank_sum - positives * (positives + 1) / 2.0) / (positives * negatives)


def log_loss(y: Sequence[float], p: Sequence[float]) -> float | None:
    """The mean negative log-likelihood, probabilities clipped; None when empty."""
    ya, pa = _arrays(y, p)
    if len(ya) == 0:
        return None
    pc = np.clip(pa, EPSILON, 1.0 - EPSILON)
    return float(-np.mean(ya * np.log(pc) + (1.0 - ya) * np.log(1.0 - pc)))


def accuracy(y: Sequence[float], p: Sequence[float], threshold: float = 0.5) -> float | None:
    """The share predicted right, a probability at or above `threshold` read as 1; None when empty."""
    ya, pa = _arrays(y, p)
    if len(ya) == 0:
        return None
    return float(np.mean((pa >= threshold) == (ya == 1)))


def calibration(y: Sequence[float], p: Sequence[float], bins: int = 5) -> list[dict[str, Any]]:
    """Equal-width probability bins over [0, 1] (the last includes 1): predicted vs observed.

    An empty bin has `count` 0 and null means.
    """
    ya, pa = _arrays(y, p)
    index = np.clip(np.floor(pa * bins), 0, bins - 1).astype(np.int64)
    table = []
    for b in range(bins):
        inside = index == b
        count = int(np.count_nonzero(inside))
        table.append(
            {
                "bin": b,
                "lo": b / bins,
                "hi": (b + 1) / bins,
                "count": count,
                "meanPredicted": float(pa[inside].mean()) if count else None,
                "observedRate": float(ya[inside].mean()) if count else None,
            }
        )
    return table
