"""A claim that came and went between two reads of its board is settled by who made it.

The board read shows a claim only while its run lasts: a run that fails back to ready in the
same stage, or passes the card on to another stage, before the next read leaves no
`claimedAt`. The held agent's claim is then found from the card's `attemptCount` (back in the
same stage), from SuperWitness's runs and from the relay's `card.claimed`/`card.advanced`
events (passed on); a claim that may have been the held agent's is never a no-show.
"""

from dataclasses import replace

import pytest

from records.models import Decision, RelayClaim
from records.serializers import DecisionSerializer
from superdispatch.relay import note_claim
from tests.support.world import lane, make_world

pytestmark = [pytest.mark.django_db, pytest.mark.storage]


def world_of(agents=("agt_a", "agt_b"), witness=True):
    world = make_world(lane(agents=agents))
    world.opt_in("brd_a")
    if not witness:
        world.loop = replace(world.loop, clients=replace(world.loop.clients, superwitness=None))
    return world


def held_card(world):
    """A new ready card, swept and held; returns the card and its decision."""
    card = world.suite.pipeline.add_card("brd_a")
    world.sweep()
    [decision] = world.decisions(card_id=card.id)
    assert decision.reserved_until is not None and decision.chosen is not None
    return card, decision


def run(world, agent_id, card_id, succeeded, seconds=3, witness=True):
    """The agent claims the card and its run ends `seconds` later, leaving a SuperWitness run."""
    pipeline = world.suite.pipeline
    pipeline.claim(agent_id, card_id)
    world.advance(seconds)
    stage = pipeline.card(card_id).stage_key
    pipeline.finish(agent_id, card_id, succeeded)
    if witness:
        world.suite.witness.record(
            "prn_" + agent_id.removeprefix("agt_"),
            "succeeded" if succeeded else "failed",
            "brd_a",
            stage,
            world.now,
            None,
            agent_id,
        )


def ran_within_the_hold(world, card, decision, succeeded, witness=True):
    """The held agent claims 5 s into its hold and its run ends 3 s later; a sweep 10 s after."""
    world.advance(5)
    run(world, decision.chosen, card.id, succeeded=succeeded, witness=witness)
    world.advance(10)
    world.sweep()


def ran_after_the_lapse(world, card, decision, succeeded, witness=True):
    """The held agent claims 50 s into its hold, and its run of 20 s ends after the hold has
    lapsed; a sweep 5 s after."""
    world.advance(50)
    run(world, decision.chosen, card.id, succeeded=succeeded, seconds=20, witness=witness)
    world.advance(5)
    world.sweep()


def settled(decision) -> dict:
    decision = Decision.objects.get(pk=decision.pk)
    return DecisionSerializer(decision).data["outcome"]


@pytest.mark.parametrize("witness", [True, False], ids=["superwitness", "no-superwitness"])
def test_a_held_claim_that_failed_back_to_ready_before_the_sweep_is_claimed(witness):
    # Two agents rostered, a hold for one; it claims, its run fails back to ready, a sweep.
    world = world_of(witness=witness)
    card, decision = held_card(world)
    ran_within_the_hold(world, card, decision, succeeded=False, witness=witness)
    outcome = settled(decision)
    assert (outcome["status"], outcome["by"]) == ("claimed", decision.chosen)
    assert world.suite.pipeline.card(card.id).attempt_count == 1


def test_the_count_the_decision_saw_is_kept_with_it():
    world = world_of()
    card, first = held_card(world)
    run(world, first.chosen, card.id, succeeded=False)
    world.advance(5)
    world.sweep()  # settles the first, holds the card again in its new ladder
    second = Decision.objects.filter(card_id=card.id).exclude(pk=first.pk).get()
    assert (Decision.objects.get(pk=first.pk).attempt_count, second.attempt_count) == (0, 1)


def test_a_fail_back_after_the_hold_lapsed_is_no_lapse_without_evidence():
    world = world_of(witness=False)
    card, decision = held_card(world)
    ran_after_the_lapse(world, card, decision, succeeded=False)  # back after the lapse
    assert settled(decision)["status"] == "superseded"  # may have been its claim: no no-show


def test_a_fail_back_after_the_hold_lapsed_is_claimed_by_its_superwitness_run():
    world = world_of()
    card, decision = held_card(world)
    ran_after_the_lapse(world, card, decision, succeeded=False)
    stored = Decision.objects.get(pk=decision.pk)
    assert (stored.outcome_status, stored.outcome_by) == ("claimed", decision.chosen)
    assert stored.run_status == "failed"


def test_a_card_a_person_moved_back_to_its_stage_is_still_a_lapse():
    world = world_of()
    card, decision = held_card(world)
    world.advance(61)
    world.suite.pipeline.move_card(card.id, "review")  # the same stage: no claim, count kept
    world.advance(5)
    world.sweep()
    assert settled(decision)["status"] == "expired"


def test_a_held_claim_passed_on_is_claimed_by_its_superwitness_run():
    world = world_of()
    card, decision = held_card(world)
    ran_within_the_hold(world, card, decision, succeeded=True)
    stored = Decision.objects.get(pk=decision.pk)
    assert (stored.outcome_status, stored.outcome_by) == ("claimed", decision.chosen)
    assert stored.run_status == "succeeded"


def test_a_card_passed_on_with_nothing_to_name_its_claimant_is_superseded():
    world = world_of(witness=False)
    card, decision = held_card(world)
    ran_within_the_hold(world, card, decision, succeeded=True, witness=False)
    assert (settled(decision)["status"], settled(decision)["by"]) == ("superseded", None)


def test_a_card_passed_on_after_the_hold_lapsed_is_no_lapse_without_evidence():
    world = world_of(witness=False)
    card, decision = held_card(world)
    ran_after_the_lapse(world, card, decision, succeeded=True, witness=False)
    assert settled(decision)["status"] == "superseded"


def test_another_agents_run_at_the_stage_names_nobody():
    world = world_of(agents=("agt_a", "agt_b", "agt_c"))
    card, decision = held_card(world)
    other = next(a for a in ("agt_a", "agt_b", "agt_c") if a != decision.chosen)
    world.advance(5)
    run(world, decision.chosen, card.id, succeeded=True, witness=False)
    world.suite.witness.record(
        "prn_" + other.removeprefix("agt_"), "succeeded", "brd_a", "review", world.now, None, other
    )
    world.advance(10)
    world.sweep()
    assert settled(decision)["status"] == "superseded"


@pytest.mark.parametrize("witness", [True, False], ids=["superwitness", "no-superwitness"])
def test_with_the_relay_a_claim_passed_on_is_claimed_by_its_event(witness):
    # The relay delivers as the webhook would, and places the card's next stage at once
    # (card.ready), before any sweep reads the board.
    world = world_of(witness=witness)
    card, decision = held_card(world)
    world.drive(sweep_every_s=10**6)
    world.advance(5)
    run(world, decision.chosen, card.id, succeeded=True, witness=witness)
    world.suite.relay.flush()  # card.claimed, card.advanced, card.ready at the next stage
    stored = Decision.objects.get(pk=decision.pk)
    assert (stored.outcome_status, stored.outcome_by) == ("claimed", decision.chosen)
    claimed = RelayClaim.objects.filter(card_id=card.id, kind="card.claimed").get()
    assert stored.outcome_at == claimed.at  # the claim's own time, from its event


def test_with_the_relay_a_claim_by_another_agent_after_the_lapse_is_theirs():
    world = world_of(witness=False)
    card, decision = held_card(world)
    other = next(a for a in ("agt_a", "agt_b") if a != decision.chosen)
    world.advance(61)
    pipeline = world.suite.pipeline
    pipeline.claim(other, card.id)
    note_claim(
        {
            "type": "card.claimed",
            "boardId": "brd_a",
            "cardId": card.id,
            "stageKey": "review",
            "ts": world.now.isoformat(),
            "data": {"agentId": other},
        }
    )
    world.advance(3)
    pipeline.finish(other, card.id, succeeded=True)
    world.sweep()
    assert (settled(decision)["status"], settled(decision)["by"]) == ("claimed-by-other", other)


# --- A lapsed hold on a card archived before the next read -----------------------------


def test_a_hold_that_lapsed_before_its_card_was_archived_is_expired():
    # The read lists the archived card (archivedAt) with the count the decision saw: nobody
    # claimed it, and the hold lapsed while it still waited: a lapse, then a person's archive.
    world = world_of()
    card, decision = held_card(world)
    world.advance(61)
    world.suite.pipeline.archive_card(card.id)
    world.advance(5)
    world.sweep()
    stored = Decision.objects.get(pk=decision.pk)
    assert (stored.outcome_status, stored.outcome_by) == ("expired", None)
    assert stored.outcome_at == stored.reserved_until


def test_a_card_archived_while_its_hold_was_live_is_superseded():
    world = world_of()
    card, decision = held_card(world)
    world.advance(20)
    world.suite.pipeline.archive_card(card.id)
    archived_at = world.now
    world.advance(60)  # the hold's end passes after the archive
    world.sweep()
    stored = Decision.objects.get(pk=decision.pk)
    assert (stored.outcome_status, stored.outcome_at) == ("superseded", archived_at)


def test_a_lapsed_hold_on_a_card_gone_from_the_read_is_superseded():
    # A SuperPipeline that drops archived cards from the read says neither when the card
    # left nor whether anybody claimed it first: no lapse is recorded on no evidence.
    world = world_of()
    world.suite.pipeline.keep_finished_seconds = 0
    card, decision = held_card(world)
    world.advance(62)
    world.suite.pipeline.archive_card(card.id)
    world.advance(5)
    world.sweep()
    stored = Decision.objects.get(pk=decision.pk)
    assert (stored.outcome_status, stored.outcome_by, stored.outcome_at) == (
        "superseded",
        None,
        world.now,
    )  # when the read found it gone
