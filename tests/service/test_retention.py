"""Retention: settled decisions past SUPERDISPATCH_RETAIN_DAYS go with their candidates, in
batches; what the loop, the suggestions and the shadow report read stays."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django_celery_beat.models import PeriodicTask

from common import config
from records.models import Candidate, Decision
from records.store import retention
from records.store.actions.decisions import do_settle
from records.store.actions.retention import do_prune_decisions
from superdispatch import tasks
from superdispatch.schedule import (
    OUTBOX_TASK_NAME,
    PRUNE_TASK_NAME,
    ensure_housekeeping_schedule,
)
from tests.conftest import T0
from tests.service.test_config import GOOD
from tests.support.factories import make_decision

pytestmark = [pytest.mark.django_db, pytest.mark.storage]
NOW = T0 + timedelta(days=200)
OLD = NOW - timedelta(days=91)
RECENT = NOW - timedelta(days=89)
TWO = [{"agent": "agt_a"}, {"agent": "agt_b"}]


def decision(at, settled=True, learned=None, card="card_1"):
    d = make_decision(card=card, created_at=at, chosen="agt_a", candidates=TWO, learned=learned)
    if settled:
        do_settle(d.id, "claimed", "agt_a", at + timedelta(seconds=5))
    return d.id


def test_settled_decisions_past_the_retained_days_go_with_their_candidates():
    old = [decision(OLD - timedelta(minutes=i), card=f"card_{i}") for i in range(3)]
    recent = decision(RECENT)
    waiting = decision(OLD - timedelta(days=30), settled=False)
    summary = retention.prune(NOW, 90)
    assert (summary.decisions, summary.candidates, summary.more) == (3, 6, False)
    assert set(Decision.objects.values_list("id", flat=True)) == {recent, waiting}
    assert not Candidate.objects.filter(decision_id__in=old).exists()
    assert Candidate.objects.count() == 4


def test_the_latest_models_shadow_decisions_stay_whatever_their_age():
    keep = decision(OLD, learned={"model": "mdl_latest", "choice": "agt_a"})
    other = decision(OLD, learned={"model": "mdl_older", "choice": "agt_b"}, card="card_2")
    plain = decision(OLD, card="card_3")
    retention.prune(NOW, 90, keep_model="mdl_latest")
    assert set(Decision.objects.values_list("id", flat=True)) == {keep}
    assert other and plain


def test_it_works_in_batches_and_stops_on_its_budget_leaving_the_rest_for_later():
    for i in range(5):
        decision(OLD - timedelta(minutes=i), card=f"card_{i}")
    batches = []
    ticks = iter(range(100))
    summary = retention.prune(
        NOW,
        90,
        batch=2,
        budget_s=2.5,
        clock=lambda: next(ticks),
        on_batch=lambda c, d: batches.append((c, d)),
    )
    # The clock moves one tick per look: two batches fit the budget, one decision is left.
    assert batches == [(4, 2), (4, 2)] and summary.more
    assert Decision.objects.count() == 1
    summary = retention.prune(NOW, 90, batch=2)
    assert (summary.decisions, summary.more) == (1, False) and Decision.objects.count() == 0


def test_an_unsettled_decision_is_never_deleted_even_when_named():
    waiting = decision(OLD, settled=False)
    assert do_prune_decisions([waiting]) == (0, 0)
    assert Decision.objects.filter(id=waiting).exists() and Candidate.objects.count() == 2


def test_the_task_keeps_the_latest_model_and_goes_on_when_its_budget_ran_out(monkeypatch, settings, caplog):
    again = []
    monkeypatch.setattr(tasks, "utc_now", lambda: NOW)
    monkeypatch.setattr(tasks.prune_task, "apply_async", lambda **kw: again.append(kw))
    monkeypatch.setattr(tasks.learning_store, "latest", lambda: type("Model", (), {"id": "mdl_latest"})())
    keep = decision(OLD, learned={"model": "mdl_latest"})
    decision(OLD, card="card_2")
    caplog.set_level("INFO", logger="superdispatch.loop")
    tasks.prune_task()
    assert list(Decision.objects.values_list("id", flat=True)) == [keep]
    assert "retention: pruned 1 decisions and 2 candidates older than 90 days" in caplog.text
    assert again == []
    decision(OLD, card="card_3")
    monkeypatch.setattr(tasks, "PRUNE_BUDGET_S", 0)
    tasks.prune_task()
    assert again == [{"countdown": tasks.PRUNE_AGAIN_S}]


def test_retention_and_the_outbox_are_scheduled_each_expiring_after_its_interval():
    ensure_housekeeping_schedule()
    prune = PeriodicTask.objects.get(name=PRUNE_TASK_NAME)
    outbox = PeriodicTask.objects.get(name=OUTBOX_TASK_NAME)
    assert (prune.task, prune.interval.every, prune.expire_seconds) == ("superdispatch.prune", 3600, 3600)
    assert (outbox.task, outbox.interval.every, outbox.expire_seconds) == (
        "superdispatch.deliver_outbox",
        15,
        15,
    )


@pytest.mark.parametrize("value", ["30", "3651", "ninety", "-1"])
def test_retain_days_out_of_range_stops_start_up_naming_the_setting(value):
    with pytest.raises(config.ConfigError) as err:
        config.load({**GOOD, "SUPERDISPATCH_RETAIN_DAYS": value})
    assert str(err.value) == "SUPERDISPATCH_RETAIN_DAYS must be an integer from 31 to 3650"
    assert config.load(GOOD).retain_days == 90
