"""Supply proposals: each kind from hand-built decisions and a remembered registry."""

from __future__ import annotations

from placement.facts import RegistryFact, Station
from records.store.actions.sweeps import do_remember_registry as remember_registry
from tests.conftest import at
from tests.suggestions.conftest import synced as synced_all
from tests.support.factories import make_decision

MIN = 60
NEEDS_MODEL = {"agent": "agt_ada", "station": "stn_1", "lacking": {"model": ["m-large", "m-xl"]}}
NEEDS_TOOLS = {
    "agent": "agt_bob",
    "station": "stn_2",
    "lacking": {"isolation": ["container"], "tools": ["git"]},
}
OFF_CAPABLE = {"agent": "agt_eli", "off_roster": True, "capable": True}


def synced(now):
    """The proposals a sync leaves open, by kind (roster suggestions have their own tests)."""
    return {
        kind: s
        for kind, s in synced_all(now).items()
        if kind not in ("add-agent-to-board", "lane-single-point")
    }


def blocked(n: int, candidates, reason="none-eligible", start=0, **fields):
    return [
        make_decision(
            card=f"card_{start + i}",
            reason=reason,
            created_at=at((start + i) * MIN),
            candidates=candidates,
            **fields,
        )
        for i in range(n)
    ]


def station(station_id, occupant=None, proof="declared", models=(), tools=(), isolation=None):
    return Station(
        station_id=station_id,
        runtime="rt_1",
        harness="codex",
        occupant=occupant,
        isolation=RegistryFact(isolation, proof) if isolation else None,
        models=tuple(RegistryFact(m, proof) for m in models),
        tools=tuple(RegistryFact(t, proof) for t in tools),
    )


def test_an_agent_turned_away_only_for_its_model_gets_a_change_model_proposal():
    blocked(2, [NEEDS_MODEL, OFF_CAPABLE])
    p = synced(at(5 * MIN))["change-model"]
    assert p.target == {"agentId": "agt_ada", "stationId": "stn_1", "model": "m-large"}
    assert p.estimated_effect["cards"] == 2 and p.estimated_effect["agents"] == 1
    assert p.evidence_count == 2 and p.registry == "unread"
    assert "declare model m-large for station stn_1" in p.how_to_apply
    assert "runs none of m-large or m-xl" in p.rationale


def test_one_decision_is_not_enough_to_propose_anything():
    blocked(1, [NEEDS_MODEL, NEEDS_TOOLS])
    assert synced(at(5 * MIN)) == {}


def test_nothing_is_proposed_once_the_lanes_newest_decision_chose_somebody():
    blocked(3, [NEEDS_MODEL, NEEDS_TOOLS])
    make_decision(
        card="card_9",
        chosen="agt_cyd",
        created_at=at(4 * MIN),
        candidates=[NEEDS_MODEL, {"agent": "agt_cyd"}],
    )
    assert synced(at(5 * MIN)) == {}


def test_a_decision_that_is_not_blocked_does_not_bear_out_a_station_shortfall():
    blocked(2, [NEEDS_MODEL, NEEDS_TOOLS], reason="any-match")
    assert synced(at(5 * MIN)) == {}


def test_an_agent_turned_away_for_more_than_its_station_bears_out_no_shortfall():
    busy_too = {**NEEDS_MODEL, "failing": {"idle": "not-idle"}}
    blocked(2, [busy_too, {**NEEDS_TOOLS, "failing": {"health": "unhealthy"}}])
    assert synced(at(5 * MIN)) == {}


def test_a_station_in_the_registry_with_all_the_lane_lacked_gets_move_to_host_empty_first():
    remember_registry(
        (
            station("stn_1"),
            station("stn_2"),
            station("stn_7", occupant="agt_gus", isolation="sandbox", tools=["git"], models=["m-large"]),
            station("stn_8", isolation="container", tools=["git", "jq"], models=["m-xl"]),
            station("stn_9", isolation="host", tools=["git"], models=["m-large"]),
        ),
        at(0),
    )
    blocked(2, [NEEDS_MODEL, NEEDS_TOOLS, OFF_CAPABLE])
    found = synced(at(5 * MIN))
    assert "add-station" not in found
    p = found["move-to-host"]
    assert p.target == {
        "stationId": "stn_8",
        "occupant": None,
        "runtime": "rt_1",
        "harness": "codex",
        "isolation": "container",
        "model": "m-xl",
    }
    assert p.registry == "read" and "empty station stn_8" in p.how_to_apply
    assert "container isolation, model m-large or m-xl, tool git" in p.rationale


def test_an_occupied_station_is_proposed_when_no_empty_one_has_it():
    remember_registry((station("stn_7", occupant="agt_gus", isolation="sandbox", tools=["git"]),), at(0))
    blocked(2, [NEEDS_TOOLS, OFF_CAPABLE])
    p = synced(at(5 * MIN))["move-to-host"]
    assert p.target["occupant"] == "agt_gus"
    assert "or add its agent agt_gus to the roster of brd_a" in p.how_to_apply


def test_a_shortfall_no_registry_station_meets_gets_add_station_naming_what_is_needed():
    remember_registry((station("stn_7", isolation="host", tools=["git"]),), at(0))
    blocked(2, [NEEDS_TOOLS, OFF_CAPABLE])
    found = synced(at(5 * MIN))
    assert set(found) == {"add-station"}
    p = found["add-station"]
    assert p.target == {
        "capability": {"all": ["code-review"], "any": []},
        "isolation": "container",
        "models": [],
        "tools": ["git"],
        "credentials": [],
    }
    assert p.registry == "read" and "no station in the registry has all of it" in p.rationale
    assert "set up a runtime, then a station with code-review and container isolation" in p.how_to_apply


def test_a_shortfall_with_the_registry_unread_gets_add_station():
    blocked(2, [NEEDS_TOOLS, OFF_CAPABLE])
    p = synced(at(5 * MIN))["add-station"]
    assert p.registry == "unread" and "the registry was not read" in p.rationale


def test_nothing_is_proposed_when_the_registry_says_the_lanes_own_station_has_it_by_now():
    remember_registry(
        (
            station("stn_2", isolation="container", tools=["git"]),
            station("stn_8", isolation="sandbox", tools=["git"]),
        ),
        at(0),
    )
    blocked(2, [NEEDS_TOOLS, OFF_CAPABLE])
    assert synced(at(5 * MIN)) == {}


def test_a_registry_fact_weaker_than_the_minimum_proof_does_not_count(configure):
    remember_registry((station("stn_8", proof="declared", isolation="container", tools=["git"]),), at(0))
    blocked(2, [NEEDS_TOOLS, OFF_CAPABLE])
    assert set(synced(at(5 * MIN))) == {"move-to-host"}
    configure(min_proof="installed")
    assert set(synced(at(6 * MIN))) == {"add-station"}


def test_own_station_fact_below_the_minimum_proof_does_not_silence_proposals(configure):
    configure(min_proof="probed")
    remember_registry((station("stn_2", proof="installed", isolation="container", tools=["git"]),), at(0))
    blocked(2, [NEEDS_TOOLS, OFF_CAPABLE])
    assert set(synced(at(5 * MIN))) == {"add-station"}


def test_nobody_with_the_capability_in_the_workspace_gets_add_station_for_the_capability():
    no_cap = {"failing": {"capability": "capability-missing"}}
    blocked(
        2,
        [{"agent": "agt_ada", **no_cap}, {"agent": "agt_eli", "off_roster": True, "capable": False}],
        reason="one-candidate",
    )
    p = synced(at(5 * MIN))["add-station"]
    assert p.target["capability"] == {"all": ["code-review"], "any": []}
    assert p.target["tools"] == [] and p.target["isolation"] is None
    assert "nobody on the roster or in the workspace has code-review" in p.rationale


def test_an_agent_off_the_roster_with_the_capability_means_no_station_is_needed_for_it():
    no_cap = {"failing": {"capability": "capability-missing"}}
    blocked(2, [{"agent": "agt_ada", **no_cap}, OFF_CAPABLE], reason="one-candidate")
    assert "add-station" not in synced(at(5 * MIN))


def test_every_capable_rostered_agent_held_back_by_load_alone_gets_raise_capacity():
    full = {"agent": "agt_ada", "failing": {"capacity": "at-capacity"}}
    busy = {"agent": "agt_bob", "failing": {"idle": "not-idle", "health": "unhealthy"}}
    blocked(2, [full, busy, OFF_CAPABLE], reason="any-match")
    p = synced(at(5 * MIN))["raise-capacity"]
    assert p.target is None and p.estimated_effect == {
        "cards": 2,
        "agents": 1,
        "summary": p.estimated_effect["summary"],
    }
    assert "raise the agent concurrency of board brd_a" in p.how_to_apply


def test_raise_capacity_needs_one_agent_at_capacity_and_no_other_reason():
    busy = {"agent": "agt_bob", "failing": {"idle": "not-idle"}}
    blocked(2, [{"agent": "agt_ada", "failing": {"idle": "not-idle"}}, busy], reason="any-match")
    assert synced(at(5 * MIN)) == {}
    sick = {"agent": "agt_bob", "failing": {"health": "unhealthy"}}
    full = {"agent": "agt_ada", "failing": {"capacity": "at-capacity"}}
    blocked(2, [full, sick], reason="any-match", start=10)
    assert synced(at(15 * MIN)) == {}


def test_proposals_count_distinct_cards_among_their_evidence():
    for minute in (0, 6, 12):
        make_decision(
            card="card_1",
            reason="none-eligible",
            created_at=at(minute * MIN),
            candidates=[NEEDS_MODEL, OFF_CAPABLE],
        )
    make_decision(
        card="card_2", reason="none-eligible", created_at=at(13 * MIN), candidates=[NEEDS_MODEL, OFF_CAPABLE]
    )
    p = synced(at(14 * MIN))["change-model"]
    assert p.evidence_count == 4 and p.estimated_effect["cards"] == 2
