"""Events out: each decision and settlement goes into the outbox in its own transaction, a
worker sends it signed to the sandbox's receiver over real HTTP, retries with backoff, and
dead-letters it; a receiver that is down, slow or failing loses nothing and slows no pass.
New suggestions go to the chat webhook once, with a link to their admin page."""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import replace
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import transaction

from common import config
from records.models import Board, Decision, OutboxEvent
from records.store.actions.decisions import do_settle
from records.suggestions import sync
from sandbox import Receiver, ReceiverServer
from superdispatch import outbox
from superdispatch.clients.receivers import Receiver as ReceiverClient
from tests.conftest import T0
from tests.service.test_config import GOOD
from tests.support.factories import make_decision
from tests.support.world import lane, make_world

pytestmark = [pytest.mark.django_db, pytest.mark.storage]
SECRET = "events-secret-for-tests-0123"
FAST = (0.5, 0.3)  # connect, read: a slow receiver times out at once


class Clock:
    def __init__(self, start=T0):
        self.now = start

    def __call__(self):
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def inbox():
    server = ReceiverServer(Receiver(SECRET)).start()
    yield server
    server.stop()


@pytest.fixture
def events_on(settings, inbox):
    settings.SUPERDISPATCH = replace(
        settings.SUPERDISPATCH,
        events_url=inbox.url + "/events",
        events_secret=SECRET,
        chat_webhook_url=inbox.url + "/chat",
        public_url="https://dispatch.example",
    )
    return inbox


@pytest.fixture
def kicks(monkeypatch):
    """Delivery runs the loop asked for (a worker would run them)."""
    asked = []
    monkeypatch.setattr(outbox, "kick", lambda: asked.append(1))
    return asked


def targets(inbox, timeout=FAST) -> dict:
    return {
        "events": ReceiverClient("events", inbox.url + "/events", secret=SECRET, timeout=timeout),
        "chat": ReceiverClient("chat", inbox.url + "/chat", timeout=timeout),
    }


def rows(**filters) -> list[OutboxEvent]:
    return list(OutboxEvent.objects.filter(**filters).order_by("created_at", "id"))


def swept_world():
    world = make_world(lane())
    world.opt_in("brd_a")
    card = world.suite.pipeline.add_card("brd_a")
    return world, card


def test_nothing_goes_into_the_outbox_when_no_receiver_is_set():
    world, card = swept_world()
    world.sweep()
    assert Decision.objects.count() == 1 and OutboxEvent.objects.count() == 0


@pytest.mark.django_db(transaction=True)  # rows are noted on commit, as in a worker
def test_each_decision_and_settlement_is_an_event_in_the_outbox(events_on, kicks):
    world, card = swept_world()
    world.sweep()
    world.advance(3)
    world.suite.pipeline.claim("agt_a", card.id)
    world.sweep()
    [decision] = Decision.objects.all()
    recorded, settled = rows(channel="events")
    assert (recorded.type, settled.type) == ("decision.recorded", "decision.settled")
    assert recorded.state == settled.state == "pending"
    body = json.loads(recorded.body)
    assert body["id"] == recorded.id and body["type"] == "decision.recorded"
    assert (body["boardId"], body["cardId"], body["data"]["decision"]["id"]) == (
        "brd_a",
        card.id,
        decision.id,
    )
    assert body["data"]["decision"]["tier"] == {"name": "winner", "step": 1}
    assert body["data"]["decision"]["candidates"] == 3
    outcome = json.loads(settled.body)["data"]["decision"]["outcome"]
    assert (outcome["status"], outcome["by"]) == ("claimed", "agt_a")
    assert kicks  # the passes asked for a run, after they ended


def test_a_decision_rolled_back_leaves_no_event(events_on):
    decided = make_decision(chosen="agt_a")
    with pytest.raises(RuntimeError), transaction.atomic():
        do_settle(decided.id, "expired", None, T0)
        raise RuntimeError("the transaction fails after the settlement")
    assert OutboxEvent.objects.count() == 0
    assert Decision.objects.get().outcome_status is None


def test_a_worker_run_sends_each_event_signed_and_marks_it_delivered(events_on, kicks):
    world, card = swept_world()
    world.sweep()
    clock = Clock()
    summary = outbox.deliver_due(targets(events_on), clock)
    assert summary.delivered == 1
    [row] = rows()
    assert (row.state, row.attempts, row.delivered_at) == ("delivered", 1, T0)
    got = events_on.receiver.received
    assert got.refused == 0 and [e["id"] for e in got.events] == [row.id]
    assert got.deliveries == {row.id: 1}


def test_the_signature_is_the_relays_scheme_under_superdispatchs_own_headers(inbox):
    seen = []
    inbox.receiver.handle = lambda path, headers, body: seen.append((headers, body)) or 202
    ReceiverClient("events", inbox.url + "/events", secret=SECRET, clock=lambda: 1_800_000_000).post(
        "evt_0123456789abcdef01234567", b'{"a":1}'
    )
    [(headers, body)] = seen
    expected = hmac.new(SECRET.encode(), b"1800000000." + body, hashlib.sha256).hexdigest()
    assert headers["x-superdispatch-delivery"] == "evt_0123456789abcdef01234567"
    assert headers["x-superdispatch-timestamp"] == "1800000000"
    assert headers["x-superdispatch-signature"] == "sha256=" + expected


@pytest.mark.parametrize("fault", ["500", "slow", "down"])
def test_a_failing_receiver_leaves_every_event_waiting_and_the_pass_unaffected(events_on, kicks, fault):
    receiver = events_on.receiver
    if fault == "500":
        receiver.status = 500
    elif fault == "slow":
        receiver.slow_s = 1.0  # past the client's read timeout
    world, card = swept_world()
    second = world.suite.pipeline.add_card("brd_a")
    summary = world.sweep()
    assert (summary.decisions, summary.holds) == (2, 2)  # as with no receiver at all
    assert receiver.received.requests == 0  # the pass sent nothing itself
    send_to = targets(events_on)
    if fault == "down":
        events_on.stop()
    clock = Clock()
    run = outbox.deliver_due(send_to, clock)
    assert (run.delivered, run.failed) == (0, 1)  # one attempt, then the channel rests
    assert receiver.received.requests == (0 if fault == "down" else 1)
    first, waiting = rows(channel="events")
    assert (first.state, first.attempts, first.next_attempt_at) == ("pending", 1, T0 + timedelta(seconds=10))
    assert first.last_error == {"500": "http-500", "slow": "timeout", "down": "unreachable"}[fault]
    assert (waiting.state, waiting.attempts) == ("pending", 0)  # untouched, nothing lost
    assert world.suite.pipeline.card(second.id).reservation is not None


def test_retries_back_off_exponentially_then_dead_letter_and_redeliver_sends_again(events_on, kicks, capsys):
    events_on.receiver.status = 500
    make_decision(chosen="agt_a")
    do_settle(Decision.objects.get().id, "expired", None, T0)
    clock = Clock()
    waits = []
    for attempt in range(1, outbox.MAX_ATTEMPTS + 1):
        outbox.deliver_due(targets(events_on), clock)
        [row] = rows()
        if row.state == "dead":
            break
        waits.append((row.next_attempt_at - clock.now).total_seconds())
        clock.now = row.next_attempt_at
    assert waits[:5] == [10, 20, 40, 80, 160] and max(waits) == 3600
    assert (row.state, row.attempts) == ("dead", outbox.MAX_ATTEMPTS)
    clock.advance(7200)
    assert outbox.deliver_due(targets(events_on), clock).delivered == 0  # dead stays dead
    events_on.receiver.status = 202
    call_command("events", "--redeliver", "--deliver")
    out = capsys.readouterr().out
    assert "events: 1 dead event(s) queued again" in out
    assert "events: events: 0 pending, 1 delivered, 0 dead" in out
    assert [e["id"] for e in events_on.receiver.received.events] == [row.id]


def test_a_new_suggestion_is_posted_to_chat_once_with_its_admin_link(events_on, kicks):
    Board.objects.create(board_id="brd_a", enabled=True, created_at=T0, updated_at=T0)
    for i in range(3):
        make_decision(
            card=f"card_{i}",
            reason="one-candidate",
            tier=None,
            created_at=T0 + timedelta(minutes=i),
            candidates=[{"agent": "agt_a"}, {"agent": "agt_b", "off_roster": True}],
        )
    now = T0 + timedelta(hours=1)
    assert sync(now).opened == 1
    assert sync(now + timedelta(minutes=5)).opened == 0  # found again: not posted again
    [post] = rows(channel="chat")
    outbox.deliver_due(targets(events_on), Clock(now))
    [text] = events_on.receiver.received.chat
    assert text.startswith("Roster suggestion `add-agent-to-board` for brd_a / review: ")
    suggestion_id = text.rsplit("/change/", 1)[0].rsplit("/", 1)[1]
    assert text.endswith(f"https://dispatch.example/admin/records/suggestion/{suggestion_id}/change/")


def test_the_admin_lists_the_outbox_and_redelivers_a_dead_event(events_on, staff):
    make_decision(chosen="agt_a")
    do_settle(Decision.objects.get().id, "expired", None, T0)
    OutboxEvent.objects.update(state="dead", attempts=12, last_error="http-500")
    [row] = rows()
    page = staff.get("/admin/records/outboxevent/?state__exact=dead")
    assert page.status_code == 200 and row.id in page.content.decode()
    staff.post("/admin/records/outboxevent/", {"action": "redeliver", "_selected_action": [row.id]})
    row.refresh_from_db()
    assert (row.state, row.attempts, row.last_error) == ("pending", 0, "")


@pytest.mark.parametrize(
    "env,problem",
    [
        (
            {"SUPERDISPATCH_EVENTS_URL": "ftp://x", "SUPERDISPATCH_EVENTS_SECRET": SECRET},
            "SUPERDISPATCH_EVENTS_URL must be an http(s) URL",
        ),
        (
            {"SUPERDISPATCH_CHAT_WEBHOOK_URL": "hooks.slack.example/T0/B0/secret"},
            "SUPERDISPATCH_CHAT_WEBHOOK_URL must be an http(s) URL",
        ),
        (
            {"SUPERDISPATCH_EVENTS_URL": "http://127.0.0.1:9/events"},
            "SUPERDISPATCH_EVENTS_SECRET is required when SUPERDISPATCH_EVENTS_URL is set "
            "(at least 16 characters)",
        ),
        (
            {"SUPERDISPATCH_EVENTS_URL": "http://127.0.0.1:9/events", "SUPERDISPATCH_EVENTS_SECRET": "short"},
            "SUPERDISPATCH_EVENTS_SECRET must be at least 16 characters",
        ),
    ],
)
def test_bad_receiver_settings_stop_start_up_naming_the_setting_never_the_value(env, problem):
    with pytest.raises(config.ConfigError) as err:
        config.load({**GOOD, **env})
    assert str(err.value) == problem
    for value in env.values():
        assert value == "http://127.0.0.1:9/events" or value not in str(err.value)


def test_no_error_or_log_line_names_a_webhook_url_or_the_secret(settings, caplog):
    secret_url = "http://127.0.0.1:9/services/T000/B000/XyZsecretPart"
    settings.SUPERDISPATCH = replace(
        settings.SUPERDISPATCH,
        chat_webhook_url=secret_url,
        events_url="http://127.0.0.1:9/events",
        events_secret=SECRET,
    )
    Board.objects.create(board_id="brd_a", enabled=True, created_at=T0, updated_at=T0)
    make_decision(chosen="agt_a")
    do_settle(Decision.objects.get().id, "expired", None, T0)
    OutboxEvent.objects.create(
        channel="chat", type="suggestion.opened", body='{"text":"x"}', next_attempt_at=T0, created_at=T0
    )
    caplog.set_level("DEBUG")
    run = outbox.deliver_due(outbox.receivers(settings.SUPERDISPATCH), Clock())
    assert run.failed == 2  # both channels unreachable
    logged = caplog.text + " ".join(r.last_error for r in rows())
    assert "XyZsecretPart" not in logged and SECRET not in logged
    assert "unreachable" in logged
