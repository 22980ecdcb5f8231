"""Candidates off the candidate set are kept as marks against a shared roll, not as rows, and
every reader of the record (the API, the admin, an agent's story, the dataset, the
suggestions, retention) reads each decision as placement made it."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from learning import dataset
from records.console.admin import candidate_rows
from records.models import Candidate, Decision, Roll
from records.store import agents, retention
from records.store.actions.decisions import do_record_decision, do_settle
from records.store.dashboard import RANGES
from tests.support.placement import NOW, board, card, decided, roster_row, verdict, with_rows

pytestmark = [pytest.mark.django_db, pytest.mark.storage]

ROSTER = ("agt_ada", "agt_bob")
OFF = tuple(f"agt_w{i:02d}" for i in range(12))  # the rest of the workspace, off the roster
INCAPABLE = {"agt_w03", "agt_w07"}


def workspace_decided(card_id: str = "card_1042"):
    """Two rostered agents, a disabled bridge row, and twelve agents of the workspace off the
    roster, two of them without the capability."""
    facts = with_rows(
        board(*ROSTER, card=card(card_id=card_id)),
        roster=[roster_row("agt_dee", enabled=False)],
        eligibility=[
            verdict("agt_dee"),
            *(verdict(a, "capability_mismatch") if a in INCAPABLE else verdict(a) for a in OFF),
        ],
    )
    return decided(facts)


def _record(placed) -> dict:
    return json.loads(json.dumps(placed.to_record()))


def _answered(api, decision_id: str) -> dict:
    body = api.get(f"/v1/decisions/{decision_id}").json()["decision"]
    body.pop("explanation")
    return body


def test_only_the_candidate_set_and_the_out_of_the_ordinary_get_rows_and_one_roll_serves_all(api):
    first, second = workspace_decided("card_1"), workspace_decided("card_2")
    d1 = do_record_decision(first, NOW)
    d2 = do_record_decision(second, NOW)

    # The two rostered agents and the disabled bridge row (source roster) have rows.
    assert sorted(Candidate.objects.filter(decision=d1).values_list("agent_id", flat=True)) == [
        "agt_ada",
        "agt_bob",
        "agt_dee",
    ]
    assert Roll.objects.count() == 1 and d1.roll_id == d2.roll_id
    assert Decision.objects.get(pk=d1.pk).roll_marks.count(".") == 3
    # ... and every candidate reads back as placed, in order.
    for placed, d in ((first, d1), (second, d2)):
        assert len(placed.candidates) == 15
        assert _answered(api, d.id)["candidates"] == _record(placed)["candidates"]


def _roll_queries(queries) -> int:
    return sum(Roll._meta.db_table in q["sql"] for q in queries)


def test_a_pass_asks_for_its_roll_once_its_first_decision_is_committed(django_capture_on_commit_callbacks):
    stored: set[str] = set()
    with CaptureQueriesContext(connection) as first, django_capture_on_commit_callbacks(execute=True):
        d1 = do_record_decision(workspace_decided("card_1"), NOW, stored_rolls=stored)
    assert stored == {d1.roll_id} and _roll_queries(first.captured_queries) == 2  # asked, stored
    with CaptureQueriesContext(connection) as second:
        d2 = do_record_decision(workspace_decided("card_2"), NOW, stored_rolls=stored)
    assert d2.roll_id == d1.roll_id and _roll_queries(second.captured_queries) == 0
    assert Roll.objects.count() == 1


def test_a_roll_whose_decision_was_rolled_back_is_asked_for_again(django_capture_on_commit_callbacks):
    stored: set[str] = set()
    with pytest.raises(RuntimeError), django_capture_on_commit_callbacks(execute=True):
        with transaction.atomic():
            do_record_decision(workspace_decided("card_1"), NOW, stored_rolls=stored)
            raise RuntimeError("the pass fails before it commits")
    assert stored == set() and Roll.objects.count() == 0
    d = do_record_decision(workspace_decided("card_2"), NOW, stored_rolls=stored)
    assert Roll.objects.filter(digest=d.roll_id).exists()


def test_a_decision_with_nobody_off_the_set_keeps_rows_alone(api):
    placed = decided(board(*ROSTER))
    d = do_record_decision(placed, NOW)
    assert (d.roll_id, d.roll_marks) == (None, "") and Roll.objects.count() == 0
    assert _answered(api, d.id)["candidates"] == _record(placed)["candidates"]


def test_an_agent_off_the_set_has_its_story_in_the_api_and_its_tallies(api):
    d1 = do_record_decision(workspace_decided("card_1"), NOW - timedelta(minutes=2))
    d2 = do_record_decision(workspace_decided("card_2"), NOW - timedelta(minutes=1))

    body = api.get("/v1/decisions?agent=agt_w03").json()["decisions"]
    assert [d["id"] for d in body] == [d2.id, d1.id]
    agent = body[0]["agent"]
    assert (agent["verdict"], agent["reasons"]) == ("rejected", ["not-on-roster"])
    assert agent["record"] == {
        "candidate": {"agentId": "agt_w03", "principalId": "prn_w03", "stationId": None, "source": "direct"},
        "filters": [{"filter": "roster", "passed": False, "reason": "not-on-roster"}],
        "score": None,
        "capable": False,
        "stageHistory": None,
    }
    assert agent["record"] in body[0]["candidates"]

    day = RANGES["day"]
    assert agents.tallies("agt_w03", day, NOW)["considered"] == 2
    assert agents.tallies("agt_ada", day, NOW)["considered"] == 2
    series = agents.rejections_over_time("agt_w03", day, NOW)["series"]
    assert set(series) == {"not-on-roster"} and sum(series["not-on-roster"]) == 2
    assert [c.agent_id for _, c in agents.recent("agt_w03")] == ["agt_w03", "agt_w03"]
    # An agent that no decision weighed is in none.
    assert api.get("/v1/decisions?agent=agt_zed").json()["decisions"] == []


def test_the_admin_shows_every_candidate_and_finds_decisions_by_the_identity_filters_code(staff):
    d = do_record_decision(workspace_decided(), NOW)
    rows = candidate_rows(Decision.objects.get(pk=d.pk))
    assert len(rows) == 15
    assert {r["agent"]: r["capable"] for r in rows}["agt_w07"] is False
    page = staff.get("/admin/records/decision/?turned_away=not-on-roster")
    assert page.status_code == 200 and d.id in page.content.decode()


def test_the_dataset_reads_marked_candidates_as_the_api_does(api):
    placed = workspace_decided()
    d = do_record_decision(placed, NOW)
    do_settle(d.id, "claimed", placed.chosen, NOW + timedelta(seconds=5))
    [chunk] = list(dataset.record_chunks(None))
    assert chunk[0]["candidates"] == _record(placed)["candidates"]
    [training] = list(dataset.record_chunks(None, for_training=True))
    assert [c["candidate"]["agentId"] for c in training[0]["candidates"]] == [
        c["candidate"]["agentId"] for c in _record(placed)["candidates"]
    ]


def test_retention_counts_the_marks_and_forgets_a_roll_no_decision_names(api):
    old = NOW - timedelta(days=100)
    gone = do_record_decision(workspace_decided("card_1"), old)
    do_settle(gone.id, "claimed", "agt_ada", old + timedelta(seconds=5))
    # A newer workspace: one more agent, so another roll, still named by a kept decision.
    newer = with_rows(
        board(*ROSTER, card=card(card_id="card_2")), eligibility=[verdict(a) for a in OFF + ("agt_w99",)]
    )
    kept = do_record_decision(decided(newer), old)

    summary = retention.prune(NOW, 90)

    assert (summary.decisions, summary.candidates, summary.rolls) == (1, 15, 1)
    assert list(Roll.objects.values_list("digest", flat=True)) == [kept.roll_id]
    assert len(Decision.objects.get(pk=kept.pk).candidates) == 15
