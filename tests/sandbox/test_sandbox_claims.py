"""SuperPipeline's claim rules: priority, age, holds, the placement window, concurrency, grants."""

import pytest

from sandbox.replies import Refused


def test_claim_takes_the_highest_priority_then_the_oldest_ready_card(world):
    low = world.card(priority=0)
    world.clock.advance(1)
    high_new = world.card(priority=2)
    world.clock.advance(1)
    high_newer = world.card(priority=2)
    assert world.pipeline.next_card_for("agt_ada", ["brd_r"]) is high_new
    world.pipeline.claim("agt_ada", high_new.id)
    assert world.pipeline.next_card_for("agt_bob", ["brd_r"]) is high_newer
    world.pipeline.claim("agt_bob", high_newer.id)
    assert world.pipeline.next_card_for("agt_cyd", ["brd_r"]) is low


def test_a_held_card_outranks_priority_for_its_agent(world):
    held = world.card(priority=0)
    world.card(priority=5)
    world.pipeline.reserve("brd_r", held.id, "agt_bob", 60)
    assert world.pipeline.next_card_for("agt_bob", ["brd_r"]) is held
    claim = world.pipeline.claim("agt_bob", held.id)
    assert claim.reserved and held.reservation is None and held.state == "working"


def test_only_the_held_agent_can_claim_during_the_hold(world):
    card = world.card(priority=9)
    world.pipeline.reserve("brd_r", card.id, "agt_ada", 30)
    assert world.pipeline.next_card_for("agt_bob", ["brd_r"]) is None
    with pytest.raises(Refused) as refused:
        world.pipeline.claim("agt_bob", card.id)
    assert refused.value.code == "card_reserved"


def test_a_hold_lapses_on_its_own_and_the_card_opens_to_any_match(world):
    card = world.card()
    world.pipeline.reserve("brd_r", card.id, "agt_ada", 30)
    world.clock.advance(29)
    assert world.pipeline.refusal("agt_bob", card) == "card_reserved"
    world.clock.advance(1)
    assert world.pipeline.refusal("agt_bob", card) is None
    assert world.pipeline.is_ready(card)
    claim = world.pipeline.claim("agt_bob", card.id)
    assert not claim.reserved


def test_a_late_claim_by_the_held_agent_counts_as_unreserved(world):
    card = world.card()
    world.pipeline.reserve("brd_r", card.id, "agt_ada", 10)
    world.clock.advance(11)
    assert world.pipeline.claim("agt_ada", card.id).reserved is False


def test_placement_window_holds_a_new_card_back_from_pull(world):
    world.pipeline.set_placement_window("brd_r", 10)
    card = world.card()
    assert world.pipeline.is_ready(card)  # SuperDispatch still sees it ready
    assert world.pipeline.next_card_for("agt_bob", ["brd_r"]) is None
    assert world.pipeline.refusal("agt_bob", card) == "placement_window"
    world.clock.advance(10)
    assert world.pipeline.next_card_for("agt_bob", ["brd_r"]) is card


def test_a_hold_made_inside_the_window_is_claimable_by_its_agent_at_once(world):
    world.pipeline.set_placement_window("brd_r", 10)
    card = world.card()
    world.pipeline.reserve("brd_r", card.id, "agt_ada", 60)
    assert world.pipeline.next_card_for("agt_ada", ["brd_r"]) is card


def test_a_new_ready_card_is_relayed_as_card_ready_with_its_window(world):
    world.pipeline.set_placement_window("brd_r", 10)
    card = world.card(priority=1)
    [event] = world.events("card.ready")
    assert event["cardId"] == card.id and event["boardId"] == "brd_r" and event["stageKey"] == "review"
    assert event["subject"] == "evt.tnt_t.superpipeline.card.ready"
    assert event["data"] == {"priority": 1, "placementWindowSeconds": 10}
    assert set(event) == {"id", "subject", "type", "boardId", "cardId", "stageKey", "ts", "data"}


def test_per_board_concurrency_stops_a_second_claim(world):
    first, second, third = world.card(), world.card(), world.card()
    world.pipeline.claim("agt_ada", first.id)
    assert world.pipeline.refusal("agt_ada", second) == "concurrency_reached"
    world.pipeline.claim("agt_cyd", second.id)  # agt_cyd may work two at once
    assert world.pipeline.refusal("agt_cyd", third) is None


def test_an_agent_without_the_grant_cannot_claim(world):
    card = world.card(board="brd_o")
    assert world.pipeline.refusal("agt_eli", card) is None
    other = world.card()
    world.pipeline.agents["agt_eli"].capabilities |= {"code-review"}
    assert world.pipeline.refusal("agt_eli", other) == "grant_denied"


def test_a_card_of_its_own_grant_admits_only_the_agents_it_names(world):
    """Two cards of one stage are judged apart: the second admits agt_bob alone."""
    plain = world.card()
    granted = world.pipeline.add_card("brd_r", grants=["agt_bob"])
    verdicts = {v["agentId"]: v for v in world.pipeline.eligibility_json("brd_r", granted.id)["agents"]}
    assert verdicts["agt_bob"]["eligible"] and verdicts["agt_bob"]["reasons"] == []
    assert (verdicts["agt_ada"]["eligible"], verdicts["agt_ada"]["reasons"]) == (False, ["grant_denied"])
    plain_verdicts = {v["agentId"]: v for v in world.pipeline.eligibility_json("brd_r", plain.id)["agents"]}
    assert plain_verdicts["agt_ada"]["eligible"]
    assert world.pipeline.refusal("agt_ada", granted) == "grant_denied"
    assert world.pipeline.next_card_for("agt_ada", ["brd_r"]) is plain
    with pytest.raises(Refused) as refused:
        world.pipeline.reserve("brd_r", granted.id, "agt_ada", 30)
    assert refused.value.code == "agent_not_eligible"
    assert world.pipeline.claim("agt_bob", granted.id).card is granted


def test_completing_advances_to_the_next_stage_with_a_new_ladder(world):
    card = world.card()
    first_ready = card.ready_at
    world.pipeline.claim("agt_ada", card.id)
    world.clock.advance(30)
    assert world.pipeline.finish("agt_ada", card.id, succeeded=True) == "advanced"
    assert (card.stage_key, card.state, card.attempt_count) == ("qa", "submitted", 0)
    assert card.ready_at > first_ready and card.claimed_at is None and card.delegate_agent_id is None
    [advanced] = world.events("card.advanced")
    assert advanced["data"] == {"agentId": "agt_ada", "toStageKey": "qa"}
    assert [e["stageKey"] for e in world.events("card.ready")] == ["review", "qa"]


def test_completing_the_last_stage_finishes_the_card(world):
    card = world.card(stage="qa")
    world.pipeline.claim("agt_ada", card.id)
    assert world.pipeline.finish("agt_ada", card.id, succeeded=True) == "completed"
    assert card.state == "completed" and world.events("card.completed")
    assert world.pipeline.next_card_for("agt_ada", ["brd_r"]) is None


def test_failing_returns_the_card_to_its_stage_with_a_new_ready_at(world):
    card = world.card()
    world.pipeline.claim("agt_ada", card.id)
    world.clock.advance(20)
    assert world.pipeline.finish("agt_ada", card.id, succeeded=False) == "released"
    assert (card.stage_key, card.state, card.attempt_count) == ("review", "submitted", 1)
    assert card.ready_at == world.clock()
    assert world.events("run.released")[0]["data"] == {"agentId": "agt_ada", "status": "failed"}


def test_an_operator_move_gives_a_new_ladder_and_strands_the_worker(world):
    card = world.card()
    world.pipeline.claim("agt_ada", card.id)
    world.clock.advance(5)
    world.pipeline.move_card(card.id, "review")
    assert card.state == "submitted" and card.ready_at == world.clock()
    assert world.pipeline.finish("agt_ada", card.id, succeeded=True) == "lost"
    assert world.events("card.moved")[0]["data"] == {"fromStageKey": "review", "toStageKey": "review"}


def test_an_archived_card_leaves_every_lane(world):
    card = world.card()
    world.pipeline.reserve("brd_r", card.id, "agt_ada", 60)
    world.pipeline.archive_card(card.id)
    assert not world.pipeline.is_ready(card) and card.reservation is None
    assert world.pipeline.next_card_for("agt_ada", ["brd_r"]) is None
    assert world.events("card.archived")


def test_a_claim_is_relayed_as_card_claimed(world):
    card = world.card()
    world.pipeline.reserve("brd_r", card.id, "agt_ada", 60)
    world.pipeline.claim("agt_ada", card.id)
    [event] = world.events("card.claimed")
    assert event["data"] == {"agentId": "agt_ada", "reserved": True}


def test_the_attempt_count_rises_with_each_claim_and_starts_again_at_a_new_stage(world):
    card = world.card()
    counts = []
    for succeeded in (False, False, True):  # two failed runs back to review, then on to qa
        world.pipeline.claim("agt_ada", card.id)
        counts.append(card.attempt_count)
        world.pipeline.finish("agt_ada", card.id, succeeded=succeeded)
        counts.append((card.stage_key, card.attempt_count))
    assert counts == [1, ("review", 1), 2, ("review", 2), 3, ("qa", 0)]
    world.pipeline.claim("agt_ada", card.id)
    world.pipeline.move_card(card.id, "qa")  # a person puts it back in its stage: kept
    assert card.attempt_count == 1
    world.pipeline.move_card(card.id, "review")  # another stage: a new count
    assert card.attempt_count == 0
