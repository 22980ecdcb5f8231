"""Every write to the model store goes through a named function here (as
`records.store.actions` for the rest of the store), so the API, the admin and the commands
share one rule."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Max

from access.actions import do_record
from access.audit import SERVICE, Actor
from common.times import iso, parse_time
from learning import store
from learning.core.train import train
from learning.models import LearnedModel
from learning.store import Progress

_VERSION_ATTEMPTS = 5  # concurrent trainings race for the next version; the loser takes the one after


def do_train(
    since: datetime | None,
    seed: int,
    *,
    now: datetime,
    progress: Progress | None = None,
    target: str | None = None,
    by: Actor = SERVICE,
) -> LearnedModel:
    """Fit a model on the newest settled decisions since `since` and store it as the next version,
    its targets under `target` (`claimed` or `succeeded`; SUPERDISPATCH_LEARNED_TARGET when None).
    The model stored is in the audit trail, by `by`.

    Raises learning.core.train.TrainingError when the rows cannot support a model. Places nothing.
    """
    goal = target or settings.SUPERDISPATCH.learned_target
    examples, decisions, oldest, newest = store.read_examples(since, progress, goal)
    fit_progress = (lambda step, total: progress("fit", step, total)) if progress else None
    trained = train(examples, seed, progress=fit_progress, goal=goal)
    fields = dict(
        created_at=now,
        since=since,
        seed=seed,
        decisions=decisions,
        target=goal,
        first_decision_at=oldest and parse_time(oldest),
        last_decision_at=newest and parse_time(newest),
        features=list(trained.features),
        means=list(trained.means),
        stds=list(trained.stds),
        weights=list(trained.weights),
        bias=trained.bias,
        iterations=trained.iterations,
        learning_rate=trained.learning_rate,
        l2=trained.l2,
        metrics=trained.metrics,
    )
    return do_store_model(fields, by=by)


def do_store_model(fields: dict[str, Any], *, by: Actor = SERVICE) -> LearnedModel:
    """Store a fitted model as the next version; a training that races another for a version
    takes the one after."""
    attempts = 0
    while True:
        try:
            with transaction.atomic():
                version = (LearnedModel.objects.aggregate(v=Max("version"))["v"] or 0) + 1
                model = LearnedModel.objects.create(version=version, **fields)
                do_record(
                    by,
                    "model.train",
                    model.id,
                    None,
                    {
                        "version": version,
                        "target": model.target,
                        "since": iso(model.since),
                        "seed": model.seed,
                        "decisions": model.decisions,
                    },
                    fields["created_at"],
                )
                return model
        except IntegrityError:
            attempts += 1
            if attempts == _VERSION_ATTEMPTS:
                raise
