"""What a pass leaves in the store: each decision as placement recorded it, and the registry."""

import pytest

from records.models import Decision
from records.store.actions.decisions import do_record_decision
from records.store.registry import last_registry
from superdispatch.loop import placing
from tests.support.world import make_world

pytestmark = [pytest.mark.django_db, pytest.mark.storage]


def crowded_lane():
    """Rostered agents with stations, one that only reports its load, and a policy that denies."""
    return {
        "name": "crowded",
        "seed": 1,
        "start": "2026-11-13T10:00:00.000Z",
        "boards": [
            {
                "id": "brd_a",
                "stages": [
                    {
                        "key": "review",
                        "owner": "code-review",
                        "placement": {"isolation": "container", "tools": ["git"]},
                    }
                ],
            }
        ],
        "agents": [
            *(
                {
                    "id": f"agt_{n}",
                    "capabilities": ["code-review"],
                    "station": f"stn_{n}",
                    "boards": ["brd_a"],
                }
                for n in "abcd"
            ),
            {"id": "agt_free", "capabilities": ["code-review"], "capacity": 2},
        ],
        "stations": [
            {
                "stationId": f"stn_{n}",
                "isolation": {"value": "container"},
                "tools": ["git"] if n != "c" else [],
            }
            for n in "abcd"
        ],
        "policy": {
            "version": "pol_1",
            "rules": [{"agentId": "agt_d", "effect": "deny", "reason": "rule:no-d"}],
        },
    }


def test_every_candidate_is_stored_as_the_decision_recorded_it(monkeypatch):
    world = make_world(crowded_lane(), candidates="all", policy="on")
    world.opt_in("brd_a")
    recorded = []

    def record(placed, now, **kwargs):
        recorded.append(placed)
        return real(placed, now, **kwargs)

    real = do_record_decision
    monkeypatch.setattr(placing, "do_record_decision", record)  # as the loop calls it
    world.suite.pipeline.add_card("brd_a")
    world.sweep()

    [placed] = recorded
    stored = list(Decision.objects.get().candidates)
    wanted = placed.to_record()["candidates"]
    assert len(stored) == len(wanted) == 5
    for row, rec, cand in zip(stored, wanted, placed.candidates):
        assert {
            "agentId": row.agent_id,
            "principalId": row.principal_id,
            "stationId": row.station_id,
            "source": row.source,
        } == rec["candidate"]
        assert (row.filters, row.score, row.stage_history) == (
            rec["filters"],
            rec["score"],
            rec["stageHistory"],
        )
        assert (row.capable, row.policy) == (rec.get("capable"), rec.get("policy"))
        assert (row.in_set, row.eligible) == (cand.in_set, cand.eligible)
        failed = [f["reason"] for f in rec["filters"] if not f["passed"] and f.get("reason")]
        assert row.reasons == ("," + ",".join(failed) + "," if failed else "")
    by_agent = {row.agent_id: row for row in stored}
    assert by_agent["agt_free"].source == "direct"
    assert by_agent["agt_free"].reasons == ",isolation-too-weak,tool-missing,unhealthy,"
    assert ",tool-missing," in by_agent["agt_c"].reasons
    assert by_agent["agt_d"].policy["allow"] is False


def test_a_pass_remembers_the_registry_it_read_for_the_supply_proposals():
    world = make_world(crowded_lane())
    world.opt_in("brd_a")
    world.suite.pipeline.add_card("brd_a")
    world.sweep()
    stations, read_at = last_registry()
    assert sorted(s.station_id for s in stations) == ["stn_a", "stn_b", "stn_c", "stn_d"]
    assert read_at == world.now

    world.suite.toggles.station_registry = False
    world.advance(60)
    world.suite.pipeline.add_card("brd_a")
    world.sweep()
    assert last_registry() == (None, world.now)


def test_a_pass_that_needs_no_station_facts_leaves_the_registry_alone():
    world = make_world(crowded_lane())
    world.opt_in("brd_a")
    world.sweep()  # no ready card, so no stage's needs to check
    assert last_registry() == (None, None)
