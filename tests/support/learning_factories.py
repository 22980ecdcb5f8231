"""Settled decisions, shadow records and stored models for the learning service's tests."""

from __future__ import annotations

import dataclasses
from datetime import datetime

from django.conf import settings

from learning.core.metrics import calibration
from learning.models import LearnedModel
from placement.learned import FEATURES
from tests.conftest import T0, at
from tests.support.factories import make_decision


def settled(
    n: int,
    *,
    chosen: str = "agt_ada",
    status: str = "claimed",
    by: str | None = "agt_ada",
    created_at: datetime = T0,
    record: float = 0.5,
    **fields,
):
    """A settled decision: `chosen` and agt_bob eligible, agt_cyd not idle."""
    return make_decision(
        card=f"card_{n}",
        chosen=chosen,
        created_at=created_at,
        reserved_until=at(60),
        outcome_status=status,
        outcome_by=by,
        outcome_at=at(30),
        candidates=[
            {
                "agent": chosen,
                "total": 2,
                "history": {"runs": 8, "stageRecord": record},
                "terms": {"stageRecord": record, "successRate": 0.75, "sinceLastDispatchS": 600},
            },
            {"agent": "agt_bob", "total": 1, "terms": {"successRate": 0.5, "sinceLastDispatchS": None}},
            {"agent": "agt_cyd", "failing": {"idle": "not-idle"}},
        ],
        **fields,
    )


def trainable(count: int = 40) -> None:
    """Settled decisions a model can learn from: strong stage records claim, weak ones lapse.

    Their ids are fixed, so which of them fall in the seeded holdout is too: with random ids,
    a read of 20 of them left the holdout empty about once in eighty runs."""
    for n in range(count):
        claims = n % 2 == 0
        settled(
            n,
            status="claimed" if claims else "expired",
            by="agt_ada" if claims else None,
            record=0.9 if claims else 0.1,
            created_at=at(n),
            id=f"pld_{n:024x}",
        )


def stored_model(version: int = 1, rows: int = 600) -> LearnedModel:
    """A model row as training would store it, with `rows` training rows."""
    n = len(FEATURES)
    return LearnedModel.objects.create(
        version=version,
        created_at=at(version),
        seed=0,
        decisions=rows // 2,
        features=list(FEATURES),
        means=[0.0] * n,
        stds=[1.0] * n,
        weights=[1.0] + [0.0] * (n - 1),
        bias=0.0,
        iterations=500,
        learning_rate=0.5,
        l2=1e-4,
        metrics={
            "count": rows,
            "trainCount": rows * 4 // 5,
            "holdoutCount": rows // 5,
            "positives": rows // 2,
            "auc": 0.81,
            "accuracy": 0.74,
            "logLoss": 0.52,
            "calibration": calibration([0, 1, 1, 0], [0.1, 0.9, 0.7, 0.3]),
            "trainAuc": 0.83,
        },
    )


def shadow(
    model: LearnedModel,
    n: int,
    *,
    formula: str | None,
    choice: str | None,
    status: str | None,
    by: str | None = None,
    placed: bool = False,
):
    """A decision that recorded `model`'s choice beside the formula's, and what became of it."""
    held = choice if placed else formula
    return make_decision(
        card=f"card_{n}",
        chosen=held,
        created_at=at(n),
        outcome_status=status,
        outcome_by=by,
        outcome_at=at(n + 30) if status else None,
        learned={
            "model": model.id,
            "version": model.version,
            "mode": "on" if placed else "shadow",
            "choice": choice,
            "formulaChoice": formula,
            "placed": placed,
            "probabilities": {a: 0.5 for a in (formula, choice) if a},
        },
    )


def learned_settings(mode: str = "on", *, min_rows: int = 500, min_shadow: int = 100, margin_pct: int = 5):
    """The service's settings with learned routing set as given."""
    return dataclasses.replace(
        settings.SUPERDISPATCH,
        learned=mode,
        learned_min_rows=min_rows,
        learned_min_shadow=min_shadow,
        learned_margin_pct=margin_pct,
    )
