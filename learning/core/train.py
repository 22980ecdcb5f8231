"""Fitting the routing model: logistic regression over the placement features, deterministically.

The fit: each feature standardised with the training split's mean and (population) std,
a zero std read as 1; weights and bias from zero; `ITERATIONS` full-batch gradient descent
steps of size `LEARNING_RATE` on the mean log loss plus `L2`/2 * |w|^2 (the bias is not
penalised). Every number is float64 and there is no randomness: rows are sorted before
fitting, and a decision falls in the holdout when sha256("{seed}:{decisionId}") read as a
big-endian integer from its first 8 bytes, mod 100, is below `HOLDOUT_PCT`. So the same
rows and seed give the same model bit for bit, in whatever order the rows arrive, and all
candidates of one decision land on the same side.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from placement.learned import FEATURES, LearnedModel

from . import metrics
from .labels import CLAIMED, SUCCEEDED

ITERATIONS = 500
LEARNING_RATE = 0.5
L2 = 1e-4
HOLDOUT_PCT = 20
MIN_ROWS = 10  # below this a fit is noise and a holdout is mostly empty

Example = tuple[str, Sequence[float], int]


class TrainingError(Exception):
    """Training refused, with a stable `code` for the API and a sentence for people."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Trained:
    """A fitted model's parameters, how it was fitted, and its metrics (camelCase JSON)."""

    features: tuple[str, ...]
    means: tuple[float, ...]
    stds: tuple[float, ...]
    weights: tuple[float, ...]
    bias: float
    metrics: dict[str, Any]
    seed: int | str
    iterations: int
    learning_rate: float
    l2: float

    def model(self, id: str, version: int) -> LearnedModel:
        """The model placement applies, once the store has given it an id and a version."""
        return LearnedModel(
            id=id,
            version=version,
            features=self.features,
            means=self.means,
            stds=self.stds,
            weights=self.weights,
            bias=self.bias,
        )


def in_holdout(decision_id: str, seed: int | str) -> bool:
    """Whether a decision's rows are held out from fitting, for this seed."""
    digest = hashlib.sha256(f"{seed}:{decision_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % 100 < HOLDOUT_PCT


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * z))  # the logistic function, without overflow


def _design(examples: Iterable[Example]) -> tuple[list[str], np.ndarray, np.ndarray]:
    rows = sorted((str(d), tuple(f), t) for d, f, t in examples)
    ids = [r[0] for r in rows]
    try:
        x = np.array([r[1] for r in rows], dtype=np.float64).reshape(len(rows), len(FEATURES))
        y = np.array([r[2] for r in rows], dtype=np.float64)
    except (ValueError, TypeError):
        raise TrainingError(
            "bad-row", f"every row needs {len(FEATURES)} numeric features and a 0/1 target"
        ) from None
    if not np.isfinite(x).all() or not np.isin(y, (0.0, 1.0)).all():
        raise TrainingError("bad-row", "features must be finite numbers and targets 0 or 1")
    return ids, x, y


def _classes(y: np.ndarray, rows: str, goal: str = CLAIMED) -> None:
    positives = int(y.sum())
    if positives == 0 or positives == len(y):
        if goal == SUCCEEDED:
            only = "claimed and succeeded" if positives else "went unclaimed or failed"
        else:
            only = "claimed" if positives else "went unclaimed"
        raise TrainingError("single-class", f"every {rows} {only}: a model needs both outcomes to learn from")


def train(
    examples: Iterable[Example],
    seed: int | str = 0,
    *,
    progress: Callable[[int, int], None] | None = None,
    iterations: int = ITERATIONS,
    learning_rate: float = LEARNING_RATE,
    l2: float = L2,
    goal: str = CLAIMED,
) -> Trained:
    """Fit the model on `(decisionId, features, target)` rows of eligible candidates.

    `progress(iteration, total)` is called after each step. Raises TrainingError with code
    `bad-row`, `too-few-rows`, `single-class` or `empty-holdout`.
    """
    ids, x, y = _design(examples)
    if len(y) < MIN_ROWS:
        raise TrainingError("too-few-rows", f"{len(y)} training rows; at least {MIN_ROWS} are needed")
    _classes(y, "row", goal)
    held = {d: in_holdout(d, seed) for d in dict.fromkeys(ids)}
    mask = np.fromiter((held[d] for d in ids), dtype=bool, count=len(ids))
    if not mask.any():
        raise TrainingError(
            "empty-holdout",
            f"none of the {len(held)} decisions fell in the {HOLDOUT_PCT}% holdout "
            f"with seed {seed}: add decisions or try another seed",
        )
    x_train, y_train = x[~mask], y[~mask]
    if len(y_train) == 0:
        raise TrainingError("too-few-rows", f"every one of the {len(held)} decisions fell in the holdout")
    _classes(y_train, "training row", goal)

    means = x_train.mean(axis=0)
    stds = x_train.std(axis=0)
    stds[stds == 0] = 1.0
    xs = (x_train - means) / stds
    weights = np.zeros(xs.shape[1])
    bias = 0.0
    n = len(y_train)
    for step in range(iterations):
        residual = _sigmoid(xs @ weights + bias) - y_train
        weights -= learning_rate * (xs.T @ residual / n + l2 * weights)
        bias -= learning_rate * float(residual.sum() / n)
        if progress is not None:
            progress(step + 1, iterations)

    def predict(rows: np.ndarray) -> np.ndarray:
        return _sigmoid(((rows - means) / stds) @ weights + bias)

    y_hold, p_hold = y[mask], predict(x[mask])
    return Trained(
        features=FEATURES,
        means=tuple(means.tolist()),
        stds=tuple(stds.tolist()),
        weights=tuple(weights.tolist()),
        bias=bias,
        metrics={
            "count": len(y),
            "trainCount": n,
            "holdoutCount": len(y_hold),
            "positives": int(y.sum()),
            "auc": metrics.auc(y_hold, p_hold),
            "accuracy": metrics.accuracy(y_hold, p_hold),
            "logLoss": metrics.log_loss(y_hold, p_hold),
            "calibration": metrics.calibration(y_hold, p_hold),
            "trainAuc": metrics.auc(y_train, _sigmoid(xs @ weights + bias)),
        },
        seed=seed,
        iterations=iterations,
        learning_rate=learning_rate,
        l2=l2,
    )
