"""The relay webhook: signed, fresh, deduplicated; card.ready places, others look later."""

import hashlib
import hmac
import json
import time
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.conf import settings
from django.utils import timezone

from records.models import RelayClaim, RelayDelivery
from records.store.actions.boards import do_opt_in
from records.store.actions.relay import do_prune_deliveries
from superdispatch import relay, tasks
from tests.conftest import T0

pytestmark = [pytest.mark.django_db, pytest.mark.storage]


@pytest.fixture
def enqueued(monkeypatch):
    calls = []
    monkeypatch.setattr(tasks.place_card_task, "delay", lambda *a: calls.append(("place", a)))
    monkeypatch.setattr(
        tasks.look_at_board_task,
        "apply_async",
        lambda args, countdown: calls.append(("look", args, countdown)),
    )
    return calls


@pytest.fixture
def board():
    do_opt_in("brd_a", T0)


def deliver(client, event, *, delivery="dlv_1", ts=None, secret=None, body=None):
    body = body if body is not None else json.dumps(event).encode()
    ts = str(int(time.time()) if ts is None else ts)
    secret = secret or settings.SUPERDISPATCH.relay_secret
    sig = "sha256=" + hmac.new(secret.encode(), ts.encode() + b"." + body, hashlib.sha256).hexdigest()
    return client.post(
        "/v1/relay/events",
        data=body,
        content_type="application/json",
        HTTP_X_TREATY_DELIVERY=delivery,
        HTTP_X_TREATY_TIMESTAMP=ts,
        HTTP_X_TREATY_SIGNATURE=sig,
    )


READY = {
    "id": "evt_1",
    "type": "card.ready",
    "boardId": "brd_a",
    "cardId": "card_7",
    "stageKey": "review",
    "subject": "evt.tnt_x.superpipeline.card.ready",
}


def test_a_signed_card_ready_places_that_card_at_once(client, board, enqueued):
    response = deliver(client, READY)
    assert response.status_code == 202
    assert enqueued == [("place", ("brd_a", "card_7", None, "dlv_1"))]
    row = RelayDelivery.objects.get()  # names its card; its pass says what became of it
    assert (row.delivery_id, row.board_id, row.card_id, row.outcome) == ("dlv_1", "brd_a", "card_7", "")


def test_a_bad_signature_is_401_and_does_nothing(client, board, enqueued):
    response = deliver(client, READY, secret="some-other-secret-entirely")
    assert response.status_code == 401 and enqueued == []


def test_a_stale_timestamp_is_refused(client, board, enqueued, monkeypatch):
    now = 1_800_000_000
    monkeypatch.setattr(relay, "time", SimpleNamespace(time=lambda: float(now)))  # the webhook's clock
    assert deliver(client, READY, ts=now - 301).status_code == 401
    assert deliver(client, READY, ts=now + 301, delivery="d2").status_code == 401
    assert enqueued == []
    assert deliver(client, READY, ts=now - 300, delivery="d3").status_code == 202
    assert deliver(client, READY, ts=now + 300, delivery="d4").status_code == 202


def test_a_replayed_delivery_answers_200_and_is_done_once(client, board, enqueued):
    assert deliver(client, READY).status_code == 202
    again = deliver(client, READY)
    assert again.status_code == 200 and again.json()["duplicate"] is True
    assert len(enqueued) == 1


def test_an_event_for_a_board_not_opted_in_is_ignored(client, enqueued):
    response = deliver(client, READY)
    assert response.status_code == 200 and response.json() == {"ok": True, "ignored": True}
    assert RelayDelivery.objects.get().outcome == "ignored"
    assert enqueued == []


def test_other_events_look_at_the_board_two_seconds_later_once_per_burst(client, board, enqueued):
    for i in range(3):
        deliver(client, {**READY, "type": "card.claimed"}, delivery=f"dlv_{i}")
    assert enqueued == [("look", ("brd_a",), 2)]


CLAIMED = {
    **READY,
    "id": "evt_2",
    "type": "card.claimed",
    "ts": "2026-11-13T10:00:05.250Z",
    "data": {"agentId": "agt_ada", "reserved": True},
}


def test_a_claims_event_keeps_who_took_the_card_at_its_stage_for_settling(client, board, enqueued):
    assert deliver(client, CLAIMED).status_code == 202
    advanced = {
        **CLAIMED,
        "type": "card.advanced",
        "ts": "2026-11-13T10:00:09.000Z",
        "data": {"agentId": "agt_ada", "toStageKey": "ship"},
    }
    assert deliver(client, advanced, delivery="dlv_2").status_code == 202
    assert deliver(client, CLAIMED).json()["duplicate"] is True  # kept once
    assert [
        (c.board_id, c.card_id, c.stage_key, c.agent_id, c.kind, c.at)
        for c in RelayClaim.objects.order_by("at")
    ] == [
        ("brd_a", "card_7", "review", "agt_ada", "card.claimed", T0 + timedelta(seconds=5.25)),
        ("brd_a", "card_7", "review", "agt_ada", "card.advanced", T0 + timedelta(seconds=9)),
    ]
    assert enqueued == [("look", ("brd_a",), 2)]
    do_prune_deliveries(timezone.now() + timedelta(seconds=1))
    assert not RelayClaim.objects.exists()  # forgotten with the delivery ids


@pytest.mark.parametrize(
    "event",
    [
        {**CLAIMED, "data": {}},
        {**CLAIMED, "data": None},
        {**CLAIMED, "stageKey": None},
        {**CLAIMED, "data": {"agentId": "agt_" + "x" * 200}},
    ],
)
def test_a_claims_event_short_of_its_agent_card_or_stage_is_only_a_look(client, board, enqueued, event):
    assert deliver(client, event).status_code == 202
    assert not RelayClaim.objects.exists() and enqueued == [("look", ("brd_a",), 2)]


def test_a_claims_event_for_a_board_not_opted_in_keeps_nothing(client, enqueued):
    assert deliver(client, CLAIMED).json() == {"ok": True, "ignored": True}
    assert not RelayClaim.objects.exists()


@pytest.mark.parametrize(
    "body", [b"{nope", b"[]", b'{"type": "card.ready", "boardId": "brd_a"}', b'{"boardId": "brd_a"}']
)
def test_a_signed_but_malformed_event_is_400(client, board, enqueued, body):
    assert deliver(client, None, body=body).status_code == 400 and enqueued == []


def test_the_relay_needs_no_operator_token_but_a_signature(client, board, enqueued):
    assert client.post("/v1/relay/events", data=b"{}", content_type="application/json").status_code == 401
