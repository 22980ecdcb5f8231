"""A lane whose roster has nobody with the capability: flagged with who could be added.

The decisions of such a lane record agents off the roster that have the capability
(`capable: true`); they are the `add-agent-to-board` suggestion's candidates, under the
lane's own rule `empty-lane`. With nobody in the workspace either, the supply proposal
(`add-station`) speaks instead.
"""

from __future__ import annotations

import pytest

from tests.conftest import at
from tests.suggestions.conftest import synced
from tests.support.factories import make_decision
from tests.support.world import make_world

MIN = 60
ADA = {"agent": "agt_ada", "station": "stn_1"}
ADA_INCAPABLE = {**ADA, "failing": {"capability": "capability-missing"}}
ELI_OFF = {"agent": "agt_eli", "off_roster": True, "capable": True}
FAY_OFF = {"agent": "agt_fay", "off_roster": True, "capable": False}
GUS_OFF = {"agent": "agt_gus", "off_roster": True, "capable": True}


def test_a_lane_nobody_on_the_roster_can_work_suggests_the_capable_agents_off_it():
    decision = make_decision(reason="empty-lane", candidates=[ADA_INCAPABLE, ELI_OFF, FAY_OFF, GUS_OFF])
    found = synced(at(60))
    assert set(found) == {"add-agent-to-board"}
    s = found["add-agent-to-board"]
    assert s.reasons == ["empty-lane"]
    assert s.rostered == []
    assert [c["agentId"] for c in s.candidates] == ["agt_eli", "agt_gus"]
    assert s.evidence == [decision.id] and s.evidence_count == 1
    assert s.reason.startswith("review on brd_a: nobody on the roster has code-review.")
    assert "Add agt_eli or agt_gus to the board's roster in AgentPod: they have code-review." in s.reason


def test_an_empty_roster_is_an_empty_lane_too():
    make_decision(reason="empty-lane", candidates=[ELI_OFF])
    s = synced(at(60))["add-agent-to-board"]
    assert s.reasons == ["empty-lane"] and s.candidates[0]["agentId"] == "agt_eli"


def test_decisions_recorded_as_one_candidate_before_the_lane_had_its_own_reason_still_flag_it():
    # The rule reads who the decision found, not the reason it was recorded under.
    make_decision(reason="one-candidate", candidates=[ADA_INCAPABLE, ELI_OFF])
    assert synced(at(60))["add-agent-to-board"].reasons == ["empty-lane"]


def test_the_evidence_is_every_decision_of_the_window_that_found_the_lane_empty():
    first = make_decision(card="card_1", reason="empty-lane", created_at=at(0), candidates=[ELI_OFF])
    make_decision(
        card="card_2", chosen="agt_ada", created_at=at(MIN), candidates=[ADA, {"agent": "agt_bob"}, ELI_OFF]
    )
    last = make_decision(
        card="card_3", reason="empty-lane", created_at=at(2 * MIN), candidates=[ADA_INCAPABLE, ELI_OFF]
    )
    s = synced(at(3 * MIN))["add-agent-to-board"]
    assert s.evidence == [last.id, first.id] and s.evidence_count == 2


def test_only_the_newest_decision_says_whether_the_lane_is_empty_now():
    make_decision(card="card_1", reason="empty-lane", created_at=at(0), candidates=[ELI_OFF])
    make_decision(
        card="card_2", chosen="agt_ada", created_at=at(MIN), candidates=[ADA, {"agent": "agt_bob"}, ELI_OFF]
    )
    assert synced(at(2 * MIN)) == {}


def test_with_nobody_in_the_workspace_either_the_supply_proposal_speaks_alone():
    for i in range(2):
        make_decision(
            card=f"card_{i}", reason="empty-lane", created_at=at(i * MIN), candidates=[ADA_INCAPABLE, FAY_OFF]
        )
    found = synced(at(5 * MIN))
    assert set(found) == {"add-station"}
    assert found["add-station"].target["capability"] == {"all": ["code-review"], "any": []}


def test_an_empty_lane_with_capable_agents_off_the_roster_proposes_no_station():
    for i in range(2):
        make_decision(
            card=f"card_{i}", reason="empty-lane", created_at=at(i * MIN), candidates=[ADA_INCAPABLE, ELI_OFF]
        )
    assert set(synced(at(5 * MIN))) == {"add-agent-to-board"}


EMPTY_LANE_SCENARIO = {
    "name": "empty-lane",
    "seed": 5,
    "tenantId": "tnt_empty",
    "boards": [
        {
            "id": "brd_docs",
            "name": "Docs",
            "initialCards": 2,
            "stages": [{"key": "write", "name": "Write", "owner": "writing"}],
        },
        {
            "id": "brd_web",
            "name": "Web",
            "initialCards": 0,
            "stages": [{"key": "write", "name": "Write", "owner": "writing"}],
        },
    ],
    "agents": [
        # On the docs board's roster, but neither can write.
        {"id": "agt_dev1", "capabilities": ["build"], "station": "station_d1", "boards": ["brd_docs"]},
        {"id": "agt_dev2", "capabilities": ["build"], "station": "station_d2", "boards": ["brd_docs"]},
        # Writers, rostered on another board only.
        {"id": "agt_pen1", "capabilities": ["writing"], "station": "station_p1", "boards": ["brd_web"]},
        {"id": "agt_pen2", "capabilities": ["writing"], "station": "station_p2", "boards": ["brd_web"]},
    ],
    "stations": [{"stationId": s} for s in ("station_d1", "station_d2", "station_p1", "station_p2")],
}


@pytest.mark.django_db
@pytest.mark.storage
def test_a_sandbox_lane_nobody_on_the_roster_can_work_is_recorded_and_flagged(api):
    w = make_world(EMPTY_LANE_SCENARIO)
    w.opt_in("brd_docs")
    w.sweep()
    decisions = w.decisions(board_id="brd_docs")
    assert decisions and {d.reason for d in decisions} == {"empty-lane"}
    listed = api.get("/v1/decisions?board=brd_docs&limit=1").json()["decisions"][0]
    assert listed["reason"] == "empty-lane"
    assert {c["candidate"]["agentId"] for c in listed["candidates"] if c.get("capable")} == {
        "agt_pen1",
        "agt_pen2",
    }
    [s] = api.get("/v1/suggestions?board=brd_docs").json()["suggestions"]
    assert (s["kind"], s["stageKey"], s["reasons"]) == ("add-agent-to-board", "write", ["empty-lane"])
    assert s["rostered"] == []
    assert [c["agentId"] for c in s["candidates"]] == ["agt_pen1", "agt_pen2"]
    assert "nobody on the roster has writing" in s["reason"]
