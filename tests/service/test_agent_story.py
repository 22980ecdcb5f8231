"""An agent's story: the API's `agent` parameter and the admin's agent page."""

from __future__ import annotations

import pytest

from records.console import pages
from records.console.pages import agent_url
from tests.conftest import at
from tests.support.admin_pages import change_url
from tests.support.factories import make_decision, make_suggestion

pytestmark = [pytest.mark.django_db, pytest.mark.storage]


def _three_decisions():
    chose = make_decision(
        card="card_1",
        chosen="agt_ada",
        created_at=at(1),
        reserved_until=at(61),
        outcome_status="claimed",
        outcome_by="agt_ada",
        outcome_at=at(20),
        candidates=[{"agent": "agt_ada", "total": 2}, {"agent": "agt_bob", "total": 1}],
    )
    rejected = make_decision(
        board="brd_b",
        card="card_2",
        created_at=at(2),
        reason="none-eligible",
        candidates=[
            {"agent": "agt_ada", "failing": {"idle": "not-idle"}},
            {"agent": "agt_cyd", "failing": {"health": "unhealthy"}},
        ],
    )
    make_decision(
        card="card_3", created_at=at(3), chosen="agt_cyd", candidates=[{"agent": "agt_cyd", "total": 1}]
    )
    return chose, rejected


def test_decisions_for_an_agent_carry_its_own_verdict_newest_first(api):
    chose, rejected = _three_decisions()
    body = api.get("/v1/decisions?agent=agt_ada").json()["decisions"]
    assert [d["id"] for d in body] == [rejected.id, chose.id]
    assert body[0]["agent"] == {
        "agentId": "agt_ada",
        "verdict": "rejected",
        "reasons": ["not-idle"],
        "record": body[0]["candidates"][0],
    }
    assert body[1]["agent"]["verdict"] == "chosen" and body[1]["agent"]["reasons"] == []
    assert body[1]["agent"]["record"]["candidate"]["agentId"] == "agt_ada"
    bob = api.get("/v1/decisions?agent=agt_bob").json()["decisions"]
    assert [(d["id"], d["agent"]["verdict"]) for d in bob] == [(chose.id, "eligible")]


def test_an_agents_decisions_page_and_combine_with_board(api):
    _, rejected = _three_decisions()
    assert [d["id"] for d in api.get("/v1/decisions?agent=agt_ada&board=brd_b").json()["decisions"]] == [
        rejected.id
    ]
    assert len(api.get("/v1/decisions?agent=agt_ada&limit=1").json()["decisions"]) == 1
    older = api.get("/v1/decisions?agent=agt_ada&before=2026-11-13T10:00:02Z").json()
    assert [d["cardId"] for d in older["decisions"]] == ["card_1"]


def test_an_agent_never_seen_is_an_empty_story_and_a_malformed_one_is_400(api):
    _three_decisions()
    response = api.get("/v1/decisions?agent=agt_never")
    assert response.status_code == 200 and response.json() == {"decisions": []}
    for bad in ("ada", "agt_", "agt_a/b", "agt_" + "x" * 101):
        response = api.get("/v1/decisions", {"agent": bad})
        assert response.status_code == 400, bad
        assert "agent" in response.json()["error"]["message"]


def test_every_candidate_row_links_to_its_agent_page(staff):
    chose, _ = _three_decisions()
    page = staff.get(change_url(chose)).content.decode()
    assert f'href="{agent_url("agt_ada")}"' in page and f'href="{agent_url("agt_bob")}"' in page
    assert agent_url("agt_ada") == "/admin/agents/agt_ada/"


@pytest.fixture
def at_t0(monkeypatch):
    """The admin pages read the clock at a minute past the records' T0."""
    monkeypatch.setattr(pages, "clock", lambda: at(60))


def test_the_agent_page_tells_its_story(staff, at_t0):
    chose, rejected = _three_decisions()
    make_decision(
        id="pld_2300000000000000000000aa",
        card="card_9",
        created_at=at(5),
        chosen="agt_ada",
        reserved_until=at(35),
        outcome_status="expired",
        outcome_at=at(40),
        candidates=[
            {
                "agent": "agt_ada",
                "total": 1,
                "history": {"runs": 12, "succeeded": 10, "verdicts": 6, "passes": 5, "stageRecord": 0.81},
            }
        ],
    )
    make_suggestion(id="sug_2600000000000000000000bb", rostered=["agt_ada"])
    make_suggestion(board_id="brd_z", stage_key="qa", rostered=["agt_adam"])
    response = staff.get(agent_url("agt_ada"), {"range": "week"})
    assert response.status_code == 200
    page = response.content.decode()
    tallies = page[page.index('id="sd-tallies"') : page.index("Why it was turned away")]
    for number, word in (
        (3, "considered"),
        (2, "eligible"),
        (2, "chosen"),
        (2, "held"),
        (1, "claimed"),
        (1, "no-show"),
    ):
        assert f"<strong>{number}</strong>{word}" in tallies, word
    assert "not-idle" in page and "rejection reasons over time" in page
    # Links to decisions are escaped as the admin escapes keys.
    assert 'href="/admin/records/decision/pld_5F2300000000000000000000aa/change/"' in page
    assert f'href="{change_url(rejected)}"' in page
    assert "brd_a / review" in page and "0.810" in page  # its stage record
    assert "sug_2600000000000000000000bb" in page and "brd_z" not in page


def test_an_agent_page_for_an_unknown_agent_is_empty_and_bad_input_is_400(staff):
    page = staff.get(agent_url("agt_never"))
    assert page.status_code == 200 and "No decision has considered agt_never" in page.content.decode()
    assert staff.get("/admin/agents/robot/").status_code == 400
    assert staff.get(agent_url("agt_ada"), {"range": "year"}).status_code == 400


def test_the_agent_page_is_for_staff_only(client):
    response = client.get(agent_url("agt_ada"))
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
