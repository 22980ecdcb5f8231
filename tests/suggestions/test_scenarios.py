"""The sandbox's advice scenarios, end to end: the loop places, the sweep's sync advises."""

import pytest

from records.models import Suggestion
from tests.support.admin_pages import change_url, change_url_for
from tests.support.world import make_world

pytestmark = [pytest.mark.django_db, pytest.mark.storage]


def swept_once(scenario: str, board_id: str, stage_key: str) -> set[str]:
    """One sweep over a shipped scenario's board: the reasons its stage's decisions record."""
    w = make_world(scenario)
    w.opt_in(board_id)
    w.sweep()
    return {d.reason for d in w.decisions(stage_key=stage_key)}


def test_a_lane_with_one_agent_suggests_adding_the_capable_agents_off_the_roster(api):
    assert swept_once("one-agent-lane", "brd_lane", "triage") == {"one-candidate"}
    body = api.get("/v1/suggestions?board=brd_lane").json()["suggestions"]
    [s] = [s for s in body if s["stageKey"] == "triage"]
    assert s["kind"] == "add-agent-to-board" and s["reasons"] == ["one-candidate"]
    assert s["rostered"] == ["agt_solo"]
    assert {c["agentId"] for c in s["candidates"]} == {"agt_helper1", "agt_helper2"}
    assert s["evidenceCount"] >= 1


def test_a_lane_no_station_can_serve_proposes_supply_with_the_registry_read(api):
    assert swept_once("no-station-lane", "brd_ml", "train") == {"none-eligible"}
    body = api.get("/v1/suggestions?board=brd_ml&state=open").json()["suggestions"]
    supply = [s for s in body if s["stageKey"] == "train" and "howToApply" in s]
    assert supply, body
    kinds = {s["kind"] for s in supply}
    assert kinds & {"add-station", "move-to-host"}
    for s in supply:
        assert s["registry"] == "read" and s["evidenceCount"] >= 2
        assert s["howToApply"] and s["rationale"] and s["estimatedEffect"]["cards"] >= 1


def test_the_advice_shows_in_the_admin(admin_client):
    w = make_world("one-agent-lane")
    w.opt_in("brd_lane")
    w.sweep()
    s = Suggestion.objects.get(board_id="brd_lane", stage_key="triage")
    page = admin_client.get(change_url(s)).content.decode()
    assert "add-agent-to-board" in page and "agt_helper1" in page
    evidence = s.evidence[0]
    assert change_url_for("records", "decision", evidence) in page
