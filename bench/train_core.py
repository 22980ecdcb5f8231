"""Train the routing model on 500,000 synthetic rows with a planted signal.

Prints the time to fit and the holdout AUC; the goal is a fit under 30 s.
Run: .venv/bin/python bench/train_core.py [rows]
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench._common import count_arg  # noqa: E402
from bench._results import last_line  # noqa: E402
from learning.core.train import train  # noqa: E402
from placement.learned import FEATURES  # noqa: E402


def synthetic(rows: int, seed: int = 11) -> list[tuple[str, tuple[float, ...], int]]:
    """Rows of three candidates per decision; claims follow the stage record and recency."""
    rng = np.random.default_rng(seed)
    x = np.empty((rows, len(FEATURES)))
    x[:, 0] = rng.random(rows)  # stageRecord
    x[:, 1] = rng.random(rows) < 0.8  # stageWeighed
    x[:, 2] = np.log1p(rng.integers(0, 40, rows))  # stageRuns
    x[:, 3] = rng.random(rows)  # successRate
    never = rng.random(rows) < 0.2
    x[:, 4] = np.where(never, 0.0, np.log1p(rng.uniform(0, 86400, rows)))  # recency
    x[:, 5] = never  # neverDispatched
    x[:, 6] = rng.random(rows) < 0.1  # direct
    x[:, 7] = rng.integers(1, 5, rows)  # tierStep
    hour = rng.integers(0, 24, rows)
    x[:, 8] = np.sin(2 * np.pi * hour / 24)
    x[:, 9] = np.cos(2 * np.pi * hour / 24)
    x[:, 10] = rng.integers(2, 5, rows)  # eligible
    x[:, 11] = rng.random(rows) * 0.5  # poolBusy
    logit = 6.0 * (x[:, 0] - 0.5) + np.where(never, 1.0, x[:, 4] / 11.4 - 0.5)
    y = (rng.random(rows) < 1 / (1 + np.exp(-logit))).astype(int)
    ids = [f"pld_{n // 3:024x}" for n in range(rows)]
    return list(zip(ids, map(tuple, x.tolist()), y.tolist()))


def main() -> None:
    rows = count_arg(500_000)
    data = synthetic(rows)
    started = time.perf_counter()
    result = train(data, seed=1)
    elapsed = time.perf_counter() - started
    m = result.metrics
    print(
        f"rows={m['count']} train={m['trainCount']} holdout={m['holdoutCount']} "
        f"train_auc={m['trainAuc']:.4f} log_loss={m['logLoss']:.4f}"
    )
    last_line(f"train_s={elapsed:.2f} holdout_auc={m['auc']:.4f}")


if __name__ == "__main__":
    main()
