"""The fault checks' invariants (tests/support/invariants.py) catch what they are there for:
a decision without candidates, a card held twice at once, a hold never granted, a relayed
card nobody placed, and /healthz failing."""

import json
from datetime import timedelta

import pytest

from records.store.actions.relay import do_note_delivery, do_note_relay_outcome
from sandbox import Suite
from tests.conftest import T0
from tests.support.factories import make_decision
from tests.support.invariants import HealthWatch, RelayLedger, check
from tests.support.world import lane

pytestmark = [pytest.mark.django_db, pytest.mark.storage]
AGENT = [{"agent": "agt_a"}]


@pytest.fixture
def suite():
    from sandbox.scenario import parse_scenario

    return Suite(parse_scenario(lane()))


def held(suite, agent="agt_a", after_s=0, seconds=60, **fields):
    """A card held in the stand-in `after_s` from T0, and our decision saying so."""
    suite.clock.advance(max(0, T0.timestamp() + after_s - suite.clock().timestamp()))
    card = fields.pop("card", None) or suite.pipeline.add_card("brd_a")
    grant = suite.pipeline.reserve("brd_a", getattr(card, "id", card), agent, seconds)
    return make_decision(
        card=getattr(card, "id", card),
        chosen=agent,
        candidates=AGENT,
        created_at=suite.clock(),
        reserved_until=grant.reserved_until,
        **fields,
    )


def test_a_clean_store_passes(suite):
    held(suite)
    make_decision(card="card_9", reason="no-candidates", tier=None)
    found = check(suite.pipeline)
    assert found.ok and (found.decisions, found.holds) == (2, 1)


def test_a_decision_without_candidates_is_an_orphan(suite):
    orphan = make_decision(card="card_9", chosen="agt_a")
    assert check(suite.pipeline).orphan_decisions == [orphan.id]


def test_two_decisions_holding_one_card_over_the_same_moment_are_a_double_hold(suite):
    first = held(suite)
    second = held(suite, agent="agt_a", after_s=10, card=first.card_id)  # re-held, still live
    assert check(suite.pipeline).double_holds == [(first.card_id, first.id, second.id)]


def test_a_hold_that_ended_before_the_next_began_is_not_a_double_hold(suite):
    first = held(suite, seconds=30)
    held(suite, agent="agt_b", after_s=31, card=first.card_id)  # the runner-up, after the lapse
    claimed = held(suite, agent="agt_c", after_s=100)
    suite.clock.advance(5)
    suite.pipeline.claim("agt_c", claimed.card_id)  # the hold ends with the claim
    suite.pipeline.finish("agt_c", claimed.card_id, False)  # and the card waits again
    claimed.outcome_at = suite.clock()
    claimed.save()
    held(suite, agent="agt_a", after_s=106, card=claimed.card_id)
    assert check(suite.pipeline).double_holds == []


def test_a_hold_superpipeline_never_granted_is_caught(suite):
    card = suite.pipeline.add_card("brd_a")
    bogus = make_decision(
        card=card.id, chosen="agt_a", candidates=AGENT, reserved_until=T0 + timedelta(seconds=60)
    )
    assert check(suite.pipeline).ungranted_holds == [bogus.id]


def _taken(ledger, suite, status=202, body=b'{"ok": true}'):
    delivery = suite.relay.deliveries[-1]
    ledger.note(delivery.delivery_id, delivery.body, status, body, suite.clock())
    return delivery


def test_a_taken_card_ready_is_placed_said_why_not_or_lost(suite):
    ledger = RelayLedger()
    placed = suite.pipeline.add_card("brd_a")
    _taken(ledger, suite)
    make_decision(card=placed.id, chosen="agt_a", candidates=AGENT, ready_at=placed.ready_at)
    weighed = suite.pipeline.add_card("brd_a")
    waiting = _taken(ledger, suite)
    do_note_delivery(waiting.delivery_id, T0, weighed.id)
    do_note_relay_outcome(waiting.delivery_id, "waiting")  # weighed; waits for an agent
    suite.pipeline.add_card("brd_a")
    lost = _taken(ledger, suite)
    do_note_delivery(lost.delivery_id, T0, "card_x")  # taken, and its task never ran
    suite.pipeline.add_card("brd_a")
    _taken(ledger, suite, status=503)  # not taken: the relay delivers it again
    suite.pipeline.add_card("brd_a")
    _taken(ledger, suite, status=200, body=json.dumps({"ok": True, "ignored": True}).encode())
    found = check(suite.pipeline, ledger=ledger)
    assert (found.placed, found.explicit, found.lost_events) == (1, {"waiting": 1}, [lost.delivery_id])
    assert ledger.ignored() == 1 and ledger.unavailable() == 1 and ledger.failures() == []


def test_a_5xx_other_than_503_or_no_answer_is_a_relay_failure(suite):
    ledger = RelayLedger()
    suite.pipeline.add_card("brd_a")
    _taken(ledger, suite, status=500)
    _taken(ledger, suite, status=None, body=None)
    assert [a.status for a in ledger.failures()] == [500, None]


def test_healthz_answers_200_or_503_with_retry_after_while_the_store_is_down():
    answers = iter(
        [(200, {}), (503, {"Retry-After": "5"}), (503, {"Retry-After": "5"}), (503, {}), (500, {})]
    )
    down = iter([True, False, True, True])

    def get():
        try:
            return next(answers)
        except StopIteration:
            raise ConnectionError("refused") from None

    watch = HealthWatch(get, lambda: next(down))
    for _ in range(6):
        watch.ask()
    tally = watch.tally
    assert (tally.ok, tally.not_now) == (1, 1)
    assert tally.failures == {"http-503": 2, "http-500": 1, "no-answer": 1}
