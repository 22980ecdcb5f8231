"""While the store cannot be reached, the relay's webhook and /healthz answer 503 with
Retry-After (the relay delivers again; a probe says "not now"), never 500; and a kept
connection is checked before a request uses it, so a database restart costs no request.
Likewise the webhook while the task queue (Redis, broker and cache) cannot be reached."""

from __future__ import annotations

from unittest import mock

import pytest
from django.conf import settings
from django.db import OperationalError, connections

from records.store.actions.boards import do_opt_in
from tests.conftest import T0
from tests.service.test_relay import READY, deliver, enqueued  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.django_db, pytest.mark.storage]


def store_down():
    """Every new cursor fails as PostgreSQL's does while it restarts."""
    error = OperationalError("terminating connection due to administrator command")
    return mock.patch.object(connections["default"], "cursor", side_effect=error)


def test_healthz_answers_503_with_retry_after_while_the_store_is_down(client):
    assert client.get("/healthz").status_code == 200
    with store_down():
        response = client.get("/healthz")
    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    assert response.json()["error"]["code"] == "store-unavailable"
    assert "administrator" not in response.content.decode()  # the database's words stay in the log
    assert client.get("/healthz").status_code == 200  # back as soon as the store is


def test_a_relay_delivery_answers_503_while_the_store_is_down_and_is_taken_on_redelivery(client, enqueued):  # noqa: F811
    do_opt_in("brd_a", T0)
    with store_down():
        response = deliver(client, READY, delivery="dlv_down")
    assert response.status_code == 503 and response["Retry-After"] == "5"
    assert enqueued == []
    response = deliver(client, READY, delivery="dlv_down")  # the relay delivers it again
    assert response.status_code == 202
    assert enqueued == [("place", ("brd_a", "card_7", None, "dlv_down"))]


def test_kept_connections_are_checked_before_use():
    db = settings.DATABASES["default"]
    if db["ENGINE"] == "django.db.backends.sqlite3":
        pytest.skip("SQLite keeps no connection to a server")
    assert db["CONN_HEALTH_CHECKS"] is True and db["CONN_MAX_AGE"] == 60


def test_a_worker_keeps_its_connection_from_task_to_task_on_postgresql():
    """Celery's Django fixup closes the connection after every task unless told to reuse it;
    a new PostgreSQL connection costs a relayed card about 5 ms before its pass."""
    from celery.fixups.django import DjangoWorkerFixup

    from superdispatch.celery import app

    reuse = DjangoWorkerFixup(app).db_reuse_max
    if settings.DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
        assert reuse is None  # SQLite: a connection a task, as before
    else:
        assert reuse == 1000


@pytest.mark.parametrize("eager", [False, True])
def test_a_task_starts_and_ends_as_a_request_does(monkeypatch, eager):
    """Around every task run by a worker, connections past CONN_MAX_AGE, or that failed, are
    closed and kept ones marked for their health check; an eager task, inside its caller's
    transaction, is left alone."""
    from celery import signals

    from superdispatch import celery as ours
    from superdispatch.tasks import place_card_task

    for signal in (signals.task_prerun, signals.task_postrun):
        assert ours._close_old_connections in signal._live_receivers(place_card_task)
    calls = []
    monkeypatch.setattr(ours, "close_old_connections", lambda: calls.append(1))
    monkeypatch.setattr(place_card_task.request, "is_eager", eager, raising=False)
    ours._close_old_connections(task=place_card_task)
    assert calls == ([] if eager else [1])


# --- The queue (Redis: the broker and the cache) down ----------------------------------------


def test_a_relay_delivery_answers_503_while_the_queue_is_down_and_is_taken_on_redelivery(client, monkeypatch):
    """Redis restarting: the card's task cannot be sent. The delivery is answered 503 with
    Retry-After, its id forgotten with the transaction, so the relay's next try is taken."""
    from kombu.exceptions import OperationalError as BrokerDown

    from records.models import RelayDelivery
    from superdispatch import tasks

    do_opt_in("brd_a", T0)
    sent = []

    def delay(*args):
        if not sent:
            sent.append(None)
            raise BrokerDown("Error 111 connecting to 127.0.0.1:6379. Connection refused.")
        sent.append(args)

    monkeypatch.setattr(tasks.place_card_task, "delay", delay)
    response = deliver(client, READY, delivery="dlv_q")
    assert response.status_code == 503 and response["Retry-After"] == "5"
    assert response.json()["error"]["code"] == "queue-unavailable"
    assert "6379" not in response.content.decode()  # the broker's words stay in the log
    assert not RelayDelivery.objects.exists()
    assert deliver(client, READY, delivery="dlv_q").status_code == 202
    assert sent[1:] == [("brd_a", "card_7", None, "dlv_q")]


def test_another_event_answers_503_while_the_cache_is_down(client, monkeypatch):
    from redis.exceptions import ConnectionError as CacheDown

    from superdispatch import relay

    do_opt_in("brd_a", T0)

    def add(*args, **kwargs):
        raise CacheDown("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr(relay.cache, "add", add)
    response = deliver(client, {**READY, "type": "card.claimed"}, delivery="dlv_c")
    assert response.status_code == 503 and response["Retry-After"] == "5"
