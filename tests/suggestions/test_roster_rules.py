"""Roster suggestions: each rule and each kind, from hand-built decision histories."""

from __future__ import annotations

from records.models import Suggestion
from tests.conftest import T0, at
from tests.suggestions.conftest import synced
from tests.support.factories import make_decision

MIN = 60
ADA = {"agent": "agt_ada", "station": "stn_1"}
BOB = {"agent": "agt_bob", "station": "stn_2"}
SICK_ADA = {**ADA, "failing": {"health": "unhealthy"}}
SICK_BOB = {**BOB, "failing": {"noShow": "recently-no-show"}}
ELI_OFF = {"agent": "agt_eli", "off_roster": True, "capable": True}
FAY_OFF = {"agent": "agt_fay", "off_roster": True, "capable": False}


def test_one_rostered_agent_with_the_capability_is_flagged_one_candidate():
    decision = make_decision(reason="one-candidate", candidates=[ADA, FAY_OFF])
    s = synced(at(60))["lane-single-point"]
    assert (s.board_id, s.stage_key, s.reasons) == ("brd_a", "review", ["one-candidate"])
    assert s.rostered == ["agt_ada"] and s.candidates == []
    assert s.capability == {"all": ["code-review"], "any": []}
    assert s.evidence == [decision.id] and s.evidence_count == 1
    assert "only agt_ada on the roster has code-review" in s.reason
    assert "Nobody else in the workspace has code-review" in s.reason


def test_capable_agents_off_the_roster_make_it_add_agent_to_board_with_them_as_candidates():
    make_decision(reason="one-candidate", candidates=[ADA, ELI_OFF, FAY_OFF])
    found = synced(at(60))
    assert set(found) == {"add-agent-to-board"}
    s = found["add-agent-to-board"]
    assert s.candidates == [{"agentId": "agt_eli", "principalId": "prn_eli", "stationId": None}]
    assert "Add agt_eli to the board's roster in AgentPod" in s.reason


def test_an_agent_in_the_candidate_set_off_the_roster_is_a_candidate_by_its_capability_filter():
    direct = {"agent": "agt_gus", "source": "direct"}
    make_decision(reason="one-candidate", candidates=[ADA, direct])
    assert synced(at(60))["add-agent-to-board"].candidates[0]["agentId"] == "agt_gus"


def test_a_rostered_agent_without_the_capability_leaves_the_lane_on_one_candidate():
    make_decision(
        reason="none-eligible", candidates=[ADA, {**BOB, "failing": {"capability": "capability-missing"}}]
    )
    assert synced(at(60))["lane-single-point"].rostered == ["agt_ada"]


def test_a_disabled_bridge_row_counts_neither_as_rostered_nor_as_a_candidate():
    disabled = {"agent": "agt_cyd", "in_set": False, "source": "roster", "capable": True}
    make_decision(reason="one-candidate", candidates=[ADA, disabled])
    s = synced(at(60))["lane-single-point"]
    assert s.rostered == ["agt_ada"] and s.candidates == []


def test_one_candidate_reads_only_the_newest_decision_of_the_lane():
    make_decision(card="card_1", reason="one-candidate", created_at=at(0), candidates=[ADA])
    make_decision(card="card_2", chosen="agt_ada", created_at=at(60), candidates=[ADA, BOB])
    assert synced(at(120)) == {}


def test_unreliable_needs_three_decisions_in_which_every_capable_rostered_agent_was_out():
    for i in range(2):
        make_decision(
            card=f"card_{i}", reason="none-eligible", created_at=at(i * MIN), candidates=[SICK_ADA, SICK_BOB]
        )
    # One agent out, the other turned away for something else: not unreliable.
    make_decision(
        card="card_x",
        reason="none-eligible",
        created_at=at(3 * MIN),
        candidates=[SICK_ADA, {**BOB, "failing": {"idle": "not-idle"}}],
    )
    assert synced(at(5 * MIN)) == {}
    third = make_decision(
        card="card_2", reason="none-eligible", created_at=at(4 * MIN), candidates=[SICK_ADA, SICK_BOB]
    )
    s = synced(at(5 * MIN))["lane-single-point"]
    assert s.reasons == ["unreliable"] and s.evidence_count == 3 and s.evidence[0] == third.id
    assert "in 3 decisions every agent on the roster with code-review was unhealthy" in s.reason


def test_an_agent_without_the_capability_does_not_spare_a_lane_from_unreliable():
    lacking = {"agent": "agt_cyd", "failing": {"capability": "capability-missing"}}
    for i in range(3):
        make_decision(
            card=f"card_{i}",
            reason="none-eligible",
            created_at=at(i * MIN),
            candidates=[SICK_ADA, SICK_BOB, lacking],
        )
    assert synced(at(5 * MIN))["lane-single-point"].reasons == ["unreliable"]


def _stall(card: str, minutes: list[float], ready_minute: float = 0, **fields):
    return [
        make_decision(
            card=card,
            reason="none-eligible",
            created_at=at(m * MIN),
            ready_at=at(ready_minute * MIN),
            candidates=[SICK_ADA, BOB],
            **fields,
        )
        for m in minutes
    ]


def test_a_card_nobody_was_eligible_for_over_the_stall_minutes_stalls_its_lane():
    run = _stall("card_9", [0, 10, 20, 30])
    s = synced(at(31 * MIN))["lane-single-point"]
    assert s.reasons == ["stalled"]
    assert s.evidence == [d.id for d in reversed(run)] and s.evidence_count == 4
    assert "card_9 waited 30 minutes with nobody eligible" in s.reason


def test_a_wait_shorter_than_the_stall_minutes_is_not_stalled():
    _stall("card_9", [0, 10, 29.9])
    assert synced(at(31 * MIN)) == {}


def test_the_stall_minutes_setting_sets_the_bar(configure):
    configure(stall_minutes=10)
    _stall("card_9", [0, 10])
    assert synced(at(11 * MIN))["lane-single-point"].reasons == ["stalled"]


def test_none_eligible_on_two_attempts_of_a_card_is_not_one_stall():
    _stall("card_9", [0, 20], ready_minute=0)
    _stall("card_9", [25, 40], ready_minute=24)
    assert synced(at(41 * MIN)) == {}


def test_a_card_placed_after_its_wait_is_no_longer_stalled():
    _stall("card_9", [0, 30])
    make_decision(
        card="card_9", chosen="agt_bob", created_at=at(35 * MIN), ready_at=T0, candidates=[SICK_ADA, BOB]
    )
    assert synced(at(36 * MIN)) == {}


def test_only_the_unbroken_run_that_ends_the_attempt_is_measured():
    _stall("card_9", [0])
    make_decision(
        card="card_9", reason="one-candidate", created_at=at(5 * MIN), ready_at=T0, candidates=[SICK_ADA, BOB]
    )
    _stall("card_9", [10, 35])
    assert synced(at(36 * MIN)) == {}
    _stall("card_9", [40])
    s = synced(at(41 * MIN))["lane-single-point"]
    assert s.evidence_count == 3 and "30 minutes" in s.reason


def test_rules_that_agree_make_one_suggestion_with_every_reason_and_each_decision_once():
    for i in range(3):
        make_decision(
            card="card_9",
            reason="none-eligible",
            created_at=at(i * 15 * MIN),
            ready_at=T0,
            candidates=[SICK_ADA],
        )
    s = synced(at(31 * MIN))["lane-single-point"]
    assert s.reasons == ["one-candidate", "unreliable", "stalled"]
    assert s.evidence_count == 3 and len(s.evidence) == 3


def test_each_board_and_stage_is_its_own_lane():
    make_decision(board="brd_a", stage="review", reason="one-candidate", candidates=[ADA])
    make_decision(board="brd_a", stage="build", chosen="agt_ada", candidates=[ADA, BOB])
    make_decision(board="brd_b", stage="review", reason="one-candidate", candidates=[ADA])
    synced(at(60))
    assert sorted(Suggestion.objects.values_list("board_id", "stage_key")) == [
        ("brd_a", "review"),
        ("brd_b", "review"),
    ]


def test_evidence_keeps_the_newest_twenty_and_counts_them_all():
    made = [
        make_decision(card=f"card_{i}", reason="one-candidate", created_at=at(i), candidates=[ADA])
        for i in range(25)
    ]
    s = synced(at(60))["lane-single-point"]
    assert s.evidence_count == 25
    assert s.evidence == [d.id for d in reversed(made)][:20]


def test_a_lane_with_no_requires_recorded_reads_its_capability_as_null():
    make_decision(reason="one-candidate", candidates=[ADA], requires=None)
    s = synced(at(60))["lane-single-point"]
    assert s.capability is None and "the stage's capability" in s.reason
