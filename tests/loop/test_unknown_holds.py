"""A hold whose answer never came (a timeout) is unknown, not refused: its agent counts as
holding meanwhile, and the next read of the board says which it was."""

import pytest

from records.api.explain import explain
from records.models import Decision, HoldTally
from records.serializers import DecisionSerializer
from records.store import holds
from tests.loop.test_claims_between_reads import run, world_of
from tests.support.world import one_board_world

pytestmark = [pytest.mark.django_db, pytest.mark.storage]


@pytest.fixture
def world():
    return one_board_world()


def record(decision) -> dict:
    return dict(DecisionSerializer(Decision.objects.get(pk=decision.pk)).data)


def settled_holds(agent_id) -> tuple[int, int]:
    tally = HoldTally.objects.filter(board_id="brd_a", agent_id=agent_id).first()
    return (tally.claimed, tally.settled) if tally else (0, 0)


def test_a_hold_made_but_unanswered_is_unknown_and_its_agent_counts_as_holding(world):
    world.suite.toggles.hold_timeout = "made"  # SuperPipeline holds, the answer comes too late
    first = world.suite.pipeline.add_card("brd_a")
    second = world.suite.pipeline.add_card("brd_a")
    world.sweep()
    [one], [two] = world.decisions(card_id=first.id), world.decisions(card_id=second.id)
    shown = record(one)
    assert (shown["reservation"], shown["reservationRefused"], shown["outcome"]) == (None, None, None)
    assert shown["reservationUnknown"] == "timeout"
    assert two.chosen != one.chosen  # the first card's agent may hold it: not held again
    assert world.suite.pipeline.card(first.id).reservation.agent_id == one.chosen

    world.suite.toggles.hold_timeout = ""
    world.advance(10)
    world.sweep()  # the read shows the hold: it was held, until when SuperPipeline says
    shown = record(one)
    held = world.suite.pipeline.card(first.id).reservation
    assert shown["reservation"] == {
        "reservedUntil": held.reserved_until.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    }
    assert "reservationUnknown" not in shown and shown["outcome"] is None
    assert Decision.objects.get(pk=one.pk).reserved_until == held.reserved_until
    assert world.suite.pipeline.card(second.id).reservation.agent_id == two.chosen

    world.suite.pipeline.claim(one.chosen, first.id)
    world.advance(5)
    world.sweep()
    assert record(one)["outcome"]["status"] == "claimed"


def test_a_hold_that_timed_out_unmade_is_not_reserved_at_the_next_read(world):
    world.suite.toggles.hold_timeout = "lost"  # the PUT times out before anything is done
    card = world.suite.pipeline.add_card("brd_a")
    world.sweep()
    [decision] = world.decisions()
    assert record(decision)["outcome"] is None  # unknown: not refused, not yet settled
    assert world.suite.pipeline.card(card.id).reservation is None

    world.suite.toggles.hold_timeout = ""
    world.advance(10)
    world.sweep()
    shown = record(decision)
    assert shown["outcome"]["status"] == "not-reserved"
    assert (shown["reservation"], shown["reservationRefused"]) == (None, "timeout")
    assert "reservationUnknown" not in shown
    assert len(world.decisions()) == 1  # the card waits five minutes, as after a refusal
    world.advance(300)
    world.sweep()
    assert len(world.decisions()) == 2


def test_an_unknown_hold_is_known_once_the_board_can_be_read_again(world):
    world.suite.toggles.hold_timeout = "made"
    card = world.suite.pipeline.add_card("brd_a")
    world.sweep()
    [decision] = world.decisions()
    world.suite.toggles.hold_timeout = ""
    world.suite.toggles.board_failures["brd_a"] = "500"
    world.advance(30)
    world.sweep()  # unread: nothing known, nothing settled
    assert Decision.objects.get(pk=decision.pk).reservation_unknown == "timeout"
    world.suite.toggles.board_failures.clear()
    world.advance(60)  # the hold lapsed meanwhile, and the card still waits
    held = world.suite.pipeline.card(card.id).reservation
    world.sweep()
    stored = Decision.objects.get(pk=decision.pk)
    assert stored.reservation_unknown is None and stored.reserved_until == held.reserved_until
    assert stored.outcome_status == "expired" and stored.outcome_at == held.reserved_until
    runner_up = world.decisions()[-1]  # and the ladder walks on, past the lapsed agent
    assert (runner_up.tier_name, runner_up.chosen) == ("runner-up", "agt_b")


# --- An unknown hold, then claimed before the next read --------------------------------
# SuperPipeline clears a hold when its agent claims, so the next read of a hold made but never
# answered shows no hold: what it shows instead (a claim, a risen count, the relay's events,
# a SuperWitness run) settles it, as for any hold.


def unknown_world(witness=True):
    world = world_of(witness=witness)
    world.suite.toggles.hold_timeout = "made"
    card = world.suite.pipeline.add_card("brd_a")
    world.sweep()
    world.suite.toggles.hold_timeout = ""
    [decision] = world.decisions(card_id=card.id)
    assert decision.reservation_unknown == "timeout"
    assert world.suite.pipeline.card(card.id).reservation.agent_id == decision.chosen
    return world, card, decision


def outcome_of(decision) -> tuple:
    shown = record(decision)["outcome"]
    return (shown["status"], shown["by"]) if shown else None


SETUPS = [True, False]
SETUP_IDS = ["superwitness", "no-superwitness"]


@pytest.mark.parametrize("witness", SETUPS, ids=SETUP_IDS)
def test_an_unknown_hold_whose_agent_claimed_and_still_works_is_claimed(witness):
    world, card, decision = unknown_world(witness)
    world.advance(5)
    world.suite.pipeline.claim(decision.chosen, card.id)
    world.advance(5)
    world.sweep()  # the claim cleared the hold: the read shows the claim, no reservation
    assert outcome_of(decision) == ("claimed", decision.chosen)
    assert settled_holds(decision.chosen) == (1, 1)  # a sample for its success tally


@pytest.mark.parametrize("witness", SETUPS, ids=SETUP_IDS)
def test_an_unknown_hold_whose_agent_failed_back_before_the_read_is_claimed(witness):
    world, card, decision = unknown_world(witness)
    world.advance(5)
    run(world, decision.chosen, card.id, succeeded=False, witness=witness)
    world.advance(5)
    world.sweep()  # back in its stage, the count risen before the hold could end
    assert outcome_of(decision) == ("claimed", decision.chosen)


def test_an_unknown_hold_whose_agent_passed_it_on_is_claimed_by_its_superwitness_run():
    world, card, decision = unknown_world()
    world.advance(5)
    run(world, decision.chosen, card.id, succeeded=True)
    world.advance(5)
    world.sweep()
    assert outcome_of(decision) == ("claimed", decision.chosen)
    assert Decision.objects.get(pk=decision.pk).run_status == "succeeded"


@pytest.mark.parametrize("witness", SETUPS, ids=SETUP_IDS)
def test_with_the_relay_an_unknown_hold_passed_on_is_claimed_by_its_event(witness):
    world, card, decision = unknown_world(witness)
    world.drive(sweep_every_s=10**6)
    world.advance(5)
    run(world, decision.chosen, card.id, succeeded=True, witness=witness)
    world.suite.relay.flush()  # card.claimed, card.advanced, card.ready at the next stage
    assert outcome_of(decision) == ("claimed", decision.chosen)


@pytest.mark.parametrize("witness", SETUPS, ids=SETUP_IDS)
def test_with_the_relay_an_unknown_hold_whose_agent_still_works_is_claimed_at_the_look(witness):
    world, card, decision = unknown_world(witness)
    on_tick = world.drive(sweep_every_s=10**6)
    world.advance(5)
    world.suite.pipeline.claim(decision.chosen, card.id)
    world.suite.relay.flush()  # card.claimed: a look at the board two seconds later
    world.advance(2)
    on_tick(world.now)
    assert outcome_of(decision) == ("claimed", decision.chosen)


def test_an_unknown_hold_passed_on_with_nothing_to_name_its_claimant_is_superseded():
    world, card, decision = unknown_world(witness=False)
    world.advance(5)
    run(world, decision.chosen, card.id, succeeded=True, witness=False)
    world.advance(5)
    world.sweep()
    assert outcome_of(decision) == ("superseded", None)  # never not-reserved: it left its ladder


def test_an_unknown_hold_claimed_by_another_agent_is_theirs_and_no_no_show():
    world, card, decision = unknown_world(witness=False)
    other = next(a for a in ("agt_a", "agt_b") if a != decision.chosen)
    world.advance(120)  # past the latest the hold could have lasted: open to pull
    world.suite.pipeline.claim(other, card.id)
    world.advance(5)
    world.sweep()
    assert outcome_of(decision) == ("claimed-by-other", other)
    # Whether the hold was ever made no read can say (the claim cleared it): no lapse is
    # counted against its agent.
    lapses = holds.holds(world.now, world.loop.rules).lapses_of()
    assert decision.chosen not in lapses
    shown = record(decision)
    assert (shown["reservation"], shown["reservationUnknown"]) == (None, "timeout")
    assert "whether it was held is not known" in explain(shown)


def test_an_unknown_hold_on_a_card_still_waiting_unclaimed_is_not_reserved():
    world, card, decision = unknown_world()
    world.suite.pipeline.card(card.id).reservation = None  # a hold SuperPipeline did not keep
    world.advance(10)
    world.sweep()
    assert outcome_of(decision) == ("not-reserved", None)
