"""A card nobody was held for, claimed (and its run over) between two reads, is recorded
`claimed-by-other` by whoever claimed it, where anything names them, and is never a no-show.

Anyone may claim a card nobody holds, so the card's attemptCount names nobody. The relay's
`card.claimed`/`card.advanced` names the claimant of any such card; SuperWitness's runs name
no card, so only in the narrow `one-candidate` case: the lane's one rostered agent ran at the
stage within the card's ladder, and no other card of the lane left it meanwhile. With nothing
to name a claimant the card is `superseded`.
"""

import pytest

from learning.core import labels
from records.models import Decision, HoldTally
from records.serializers import DecisionSerializer
from records.store import holds
from superdispatch.relay import note_claim
from tests.loop.test_claims_between_reads import run, world_of
from tests.loop.test_experiment_loop import FORMULA, _experiment

pytestmark = [pytest.mark.django_db, pytest.mark.storage]

WINDOW_S = 11  # past the board's placement window (10 s): the card is open to pull


def unheld_card(world, reason="one-candidate"):
    """A new ready card, swept and held for nobody; returns the card and its decision."""
    card = world.suite.pipeline.add_card("brd_a")
    world.sweep()
    [decision] = world.decisions(card_id=card.id)
    assert (decision.reason, decision.chosen, decision.reserved_until) == (reason, None, None)
    return card, decision


def record(decision) -> dict:
    return DecisionSerializer(Decision.objects.get(pk=decision.pk)).data


def outcome_of(decision) -> tuple:
    shown = record(decision)["outcome"]
    return (shown["status"], shown["by"]) if shown else None


def relay_claim(world, agent_id, card_id, stage="review"):
    """The relay's card.claimed, kept as the webhook keeps it."""
    note_claim(
        {
            "type": "card.claimed",
            "boardId": "brd_a",
            "cardId": card_id,
            "stageKey": stage,
            "ts": world.now.isoformat(),
            "data": {"agentId": agent_id},
        },
        world.now,
    )


def assert_no_no_show(world, agent_id):
    assert agent_id not in holds.holds(world.now, world.loop.rules).lapses_of()
    assert not HoldTally.objects.filter(agent_id=agent_id).exists()  # nobody's hold


def test_a_one_candidate_card_claimed_and_passed_on_is_claimed_by_other_by_its_relay_event():
    world = world_of(agents=("agt_a",), witness=False)
    card, decision = unheld_card(world)
    world.drive(sweep_every_s=10**6)
    world.advance(WINDOW_S)
    run(world, "agt_a", card.id, succeeded=True, witness=False)
    world.suite.relay.flush()  # card.claimed, card.advanced, card.ready at the next stage
    world.sweep()
    assert outcome_of(decision) == ("claimed-by-other", "agt_a")
    assert_no_no_show(world, "agt_a")
    assert holds.pull_claims(world.now) == {"agt_a": WINDOW_S}  # card.claimed's own time


def after_the_lone_agents_run(succeeded: bool, witness: bool = True):
    """A one-agent lane's card left unheld, that agent's run of it once the window is over, and a
    sweep: the world and the card's decision."""
    world = world_of(agents=("agt_a",), witness=witness)
    card, decision = unheld_card(world)
    world.advance(WINDOW_S)
    run(world, "agt_a", card.id, succeeded=succeeded, witness=witness)
    world.advance(5)
    world.sweep()
    return world, decision


def test_a_one_candidate_card_passed_on_is_claimed_by_other_by_the_lone_agents_run():
    world, decision = after_the_lone_agents_run(succeeded=True)
    assert outcome_of(decision) == ("claimed-by-other", "agt_a")
    stored = Decision.objects.get(pk=decision.pk)
    assert stored.run_status == "succeeded"
    assert_no_no_show(world, "agt_a")
    assert holds.pull_claims(world.now) == {}  # only the run's end: no time to claim
    # The dataset's rows: the claimant's row is a claim, nobody's a hold ignored.
    shown = record(decision)
    assert [labels.label(shown, c) for c in shown["candidates"]] == [labels.LOST_CLAIMED]


def test_a_one_candidate_card_passed_on_with_nothing_to_name_its_claimant_is_superseded():
    _, decision = after_the_lone_agents_run(succeeded=True, witness=False)
    assert outcome_of(decision) == ("superseded", None)


def test_a_one_candidate_card_that_failed_back_is_claimed_by_other_by_the_lone_agents_run():
    _, decision = after_the_lone_agents_run(succeeded=False)
    assert outcome_of(decision) == ("claimed-by-other", "agt_a")
    assert Decision.objects.get(pk=decision.pk).run_status == "failed"


def test_the_lone_agents_run_names_nobody_when_another_card_of_the_lane_left_meanwhile():
    # Two cards in a one-agent lane: the agent works one, a person moves the other on, and
    # a single run at the stage could be either's.
    world = world_of(agents=("agt_a",))
    first, one = unheld_card(world)
    second = world.suite.pipeline.add_card("brd_a")
    world.sweep()
    [two] = world.decisions(card_id=second.id)
    world.advance(WINDOW_S)
    run(world, "agt_a", first.id, succeeded=True)
    world.suite.pipeline.move_card(second.id, "ship")
    world.advance(5)
    world.sweep()
    assert (outcome_of(one), outcome_of(two)) == (("superseded", None), ("superseded", None))


def test_a_one_candidate_card_a_person_moved_is_superseded_though_the_agent_ran_another():
    # The agent's run at the stage was of a card it claimed before this one was decided.
    world = world_of(agents=("agt_a",))
    first, one = unheld_card(world)
    world.advance(WINDOW_S)
    world.suite.pipeline.claim("agt_a", first.id)
    world.sweep()  # the claim shows: settled while its run goes on
    assert outcome_of(one) == ("claimed-by-other", "agt_a")
    second, two = unheld_card(world)
    world.advance(5)
    world.suite.pipeline.finish("agt_a", first.id, succeeded=True)
    world.suite.witness.record("prn_a", "succeeded", "brd_a", "review", world.now, None, "agt_a")
    world.suite.pipeline.move_card(second.id, "ship")
    world.advance(5)
    world.sweep()
    assert outcome_of(two) == ("superseded", None)


def any_match_card(world):
    """A new ready card whose winner and runner-up let their holds lapse; returns it and the
    decision after them, which held nobody (any match)."""
    card = world.suite.pipeline.add_card("brd_a")
    world.sweep()
    for lapse in (61, 31):
        world.advance(lapse)
        world.sweep()
    decision = world.decisions(card_id=card.id)[-1]
    assert decision.reason == "any-match"
    return card, decision


def test_an_any_match_card_claimed_between_reads_is_claimed_by_other_by_its_relay_event():
    world = world_of(agents=("agt_a", "agt_b"), witness=False)
    card, decision = any_match_card(world)
    assert decision.reserved_until is None
    world.advance(5)
    relay_claim(world, "agt_b", card.id)
    run(world, "agt_b", card.id, succeeded=True, witness=False)
    world.advance(5)
    world.sweep()
    assert outcome_of(decision) == ("claimed-by-other", "agt_b")


def test_an_any_match_card_passed_on_is_superseded_without_the_relay_whatever_superwitness_says():
    world = world_of(agents=("agt_a", "agt_b"))
    card, decision = any_match_card(world)
    world.advance(5)
    run(world, "agt_b", card.id, succeeded=True)
    world.advance(5)
    world.sweep()
    assert outcome_of(decision) == ("superseded", None)  # a run names no card: anyone's


# --- Any decision that holds nobody: an experiment's pull arm -----------------------------


def pull_arm_card(world):
    """A new ready card decided under an experiment's `pull` block; returns it and its decision."""
    _experiment(world, ["pull", FORMULA, "pull", FORMULA])
    card = world.suite.pipeline.add_card("brd_a")
    world.sweep()
    [decision] = world.decisions(card_id=card.id)
    assert (decision.reason, decision.chosen, decision.reserved_until) == ("pull-arm", None, None)
    return card, decision


def test_a_pull_arm_card_claimed_and_passed_on_is_claimed_by_other_by_its_relay_event():
    world = world_of(agents=("agt_a", "agt_b"), witness=False)
    card, decision = pull_arm_card(world)
    world.advance(2)
    relay_claim(world, "agt_b", card.id)
    run(world, "agt_b", card.id, succeeded=True, witness=False)
    world.advance(5)
    world.sweep()
    assert outcome_of(decision) == ("claimed-by-other", "agt_b")
    assert_no_no_show(world, "agt_b")


def test_a_pull_arm_card_passed_on_is_superseded_without_the_relay_whatever_superwitness_says():
    world = world_of(agents=("agt_a", "agt_b"))
    card, decision = pull_arm_card(world)
    world.advance(2)
    run(world, "agt_b", card.id, succeeded=True)
    world.advance(5)
    world.sweep()
    assert outcome_of(decision) == ("superseded", None)
