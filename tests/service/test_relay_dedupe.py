"""The relay's deliveries are deduplicated in our own table: a redelivery is known after any
number of other deliveries, two racing copies start one task, and ids go after a day."""

import threading
from datetime import timedelta

import pytest
from celery.signals import beat_init
from django.db import connections
from django.test import Client
from django.utils import timezone
from django_celery_beat.models import IntervalSchedule, PeriodicTask

from records.models import RelayDelivery
from records.store.actions.boards import do_opt_in
from records.store.actions.relay import DELIVERIES_KEPT, do_note_delivery
from superdispatch import relay, tasks
from superdispatch.celery import app
from superdispatch.schedule import PRUNE_DELIVERIES_TASK_NAME
from tests.service.test_relay import READY, deliver

pytestmark = [pytest.mark.storage]


@pytest.fixture
def placed(monkeypatch):
    """The cards handed to the workers, in order (from any thread)."""
    calls = []
    monkeypatch.setattr(tasks.place_card_task, "delay", lambda *a: calls.append(a[:2]))  # less the ts
    return calls


@pytest.mark.django_db
def test_a_thousand_deliveries_then_each_again_are_all_known_as_duplicates(client, placed):
    do_opt_in("brd_a", timezone.now())
    ids = [f"dlv_{i:04d}" for i in range(1000)]
    first = [deliver(client, {**READY, "cardId": f"card_{d}"}, delivery=d).status_code for d in ids]
    assert first == [202] * 1000 and len(placed) == 1000
    again = [deliver(client, {**READY, "cardId": f"card_{d}"}, delivery=d) for d in ids]
    assert [(r.status_code, r.json()) for r in again] == [(200, {"ok": True, "duplicate": True})] * 1000
    assert len(placed) == 1000  # nothing handed to the workers twice
    assert RelayDelivery.objects.count() == 1000


@pytest.mark.django_db
def test_an_ignored_event_is_remembered_too(client, placed):
    assert deliver(client, READY).json() == {"ok": True, "ignored": True}
    assert deliver(client, READY).json() == {"ok": True, "duplicate": True}


@pytest.mark.django_db
def test_a_hand_off_that_fails_forgets_the_id_so_the_relays_retry_is_accepted(client, placed, monkeypatch):
    do_opt_in("brd_a", timezone.now())
    real = tasks.place_card_task.delay

    def broker_down(*args):
        raise ConnectionError("broker unreachable")

    monkeypatch.setattr(tasks.place_card_task, "delay", broker_down)
    with pytest.raises(ConnectionError):
        deliver(client, READY)
    assert not RelayDelivery.objects.exists()
    monkeypatch.setattr(tasks.place_card_task, "delay", real)
    assert deliver(client, READY).status_code == 202 and placed == [("brd_a", "card_7")]


@pytest.mark.django_db(transaction=True)
def test_two_racing_copies_of_one_delivery_start_exactly_one_task(placed, monkeypatch):
    do_opt_in("brd_a", timezone.now())
    # Both copies are verified and parsed before either records its id: they meet at the insert.
    both_parsed = threading.Barrier(2, timeout=10)
    parse = relay._event

    def parse_then_wait(body):
        event = parse(body)
        both_parsed.wait()
        return event

    monkeypatch.setattr(relay, "_event", parse_then_wait)
    answers = []

    def copy():
        try:
            answers.append(deliver(Client(), READY, delivery="dlv_race"))
        finally:
            connections.close_all()  # this thread's own, kept past the request on PostgreSQL

    threads = [threading.Thread(target=copy) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert sorted((a.status_code, a.json()) for a in answers) == [
        (200, {"ok": True, "duplicate": True}),
        (202, {"ok": True}),
    ]
    assert placed == [("brd_a", "card_7")]


@pytest.mark.django_db
def test_ids_older_than_a_day_are_pruned_by_a_beat_task():
    now = timezone.now()
    do_note_delivery("dlv_old", now - DELIVERIES_KEPT - timedelta(minutes=1))
    do_note_delivery("dlv_new", now - DELIVERIES_KEPT + timedelta(minutes=1))
    tasks.prune_deliveries_task()
    assert list(RelayDelivery.objects.values_list("delivery_id", flat=True)) == ["dlv_new"]
    PeriodicTask.objects.filter(name=PRUNE_DELIVERIES_TASK_NAME).delete()
    beat_init.send(sender=None)  # beat registers it when it starts, as it does the sweep
    entry = PeriodicTask.objects.get(name=PRUNE_DELIVERIES_TASK_NAME)
    assert entry.enabled and entry.task == "superdispatch.prune_deliveries"
    assert (entry.interval.every, entry.interval.period) == (1, IntervalSchedule.HOURS)
    assert entry.task in app.tasks
