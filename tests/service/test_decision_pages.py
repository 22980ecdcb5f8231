"""The decisions pages are written as JSON text a piece at a time (records/api/pages.py): each
answer reads byte for byte as the record's serializer and DRF's JSON renderer wrote it, and a
roll's marked candidates are presented once a process, not once a decision."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.renderers import JSONRenderer

from common.renderers import JSONRenderer as OurJSONRenderer, Written
from records.api import pages
from records.api.views import ExplainedDecisionSerializer
from records.models import Decision
from records.serializers import CandidateSerializer
from records.store import agents, marks
from records.store.actions.decisions import do_record_decision, do_settle
from tests.service.test_marks import workspace_decided
from tests.support.placement import NOW, board, decided

pytestmark = pytest.mark.django_db

ROSTER = ("agt_ada", "agt_bob")


def _as_drf_wrote_it(payload) -> bytes:
    """The answer as the views wrote it before: serializers, then DRF's own renderer."""
    return JSONRenderer().render(payload)


def _decisions(n: int = 3):
    made = []
    for i in range(n):
        placed = workspace_decided(f"card_{i}")
        d = do_record_decision(placed, NOW + timedelta(seconds=i))
        made.append(d)
    do_settle(made[0].id, "claimed", "agt_ada", NOW + timedelta(seconds=30))
    # One without marks: every candidate in the candidate set.
    made.append(do_record_decision(decided(board(*ROSTER)), NOW + timedelta(seconds=9)))
    return [Decision.objects.get(pk=d.pk) for d in made]


def test_a_page_and_one_decision_read_byte_for_byte_as_the_serializers_wrote_them(api):
    made = _decisions()
    newest_first = sorted(made, key=lambda d: (d.created_at, d.id), reverse=True)
    page = api.get("/v1/decisions?limit=20")
    assert page.status_code == 200 and page["Content-Type"] == "application/json"
    assert page.content == _as_drf_wrote_it(
        {"decisions": ExplainedDecisionSerializer(newest_first, many=True).data}
    )
    for d in made:
        assert api.get(f"/v1/decisions/{d.id}").content == _as_drf_wrote_it(
            {"decision": ExplainedDecisionSerializer(d).data}
        )


def test_an_agents_page_reads_as_before_with_its_verdict_and_record(api):
    made = _decisions()
    newest_first = sorted(made, key=lambda d: (d.created_at, d.id), reverse=True)
    for agent_id in ("agt_w03", "agt_ada"):  # marked in three decisions; a row in all four
        expected = []
        for d in (d for d in newest_first if d.candidate(agent_id) is not None):
            record = ExplainedDecisionSerializer(d).data
            candidate = d.candidate(agent_id)
            record["agent"] = {
                "agentId": agent_id,
                **agents.verdict(candidate, d.chosen),
                "record": CandidateSerializer(candidate).data,
            }
            expected.append(record)
        assert api.get(f"/v1/decisions?agent={agent_id}").content == _as_drf_wrote_it({"decisions": expected})


def test_a_page_reads_its_candidates_in_one_query_and_a_rolls_marks_are_presented_once(api, monkeypatch):
    made = _decisions()
    pages._marked.cache_clear()
    presented = []
    real = pages._present_candidate
    monkeypatch.setattr(pages, "_present_candidate", lambda row: presented.append(row) or real(row))
    with CaptureQueriesContext(connection) as queries:
        assert api.get("/v1/decisions?limit=20").status_code == 200
    assert sum('"records_candidate"' in q["sql"] for q in queries.captured_queries) == 1
    rows = sum(d.roll_marks.count(marks.ROW) if d.roll_marks else len(d.candidates) for d in made)
    roll = len(made[0].candidates)  # 15 agents, each presented as incapable and as capable
    assert len(presented) == rows + 2 * roll
    presented.clear()
    pages.WRITTEN.clear()  # the decisions' texts forgotten: each is written again
    assert api.get("/v1/decisions?limit=20").status_code == 200
    assert len(presented) == rows  # the roll's marked candidates, presented once a process


def test_a_page_read_again_reads_no_candidates_and_a_settled_decision_reads_settled(api):
    made = _decisions()
    assert api.get("/v1/decisions?limit=20").status_code == 200
    with CaptureQueriesContext(connection) as queries:
        again = api.get("/v1/decisions?limit=20")
    assert again.status_code == 200
    assert not any('"records_candidate"' in q["sql"] for q in queries.captured_queries)

    held = made[1]
    assert api.get(f"/v1/decisions/{held.id}").json()["decision"]["outcome"] is None
    do_settle(held.id, "expired", None, NOW + timedelta(minutes=5))
    held = Decision.objects.get(pk=held.pk)
    answer = api.get(f"/v1/decisions/{held.id}")
    assert answer.json()["decision"]["outcome"]["status"] == "expired"
    assert answer.content == _as_drf_wrote_it({"decision": ExplainedDecisionSerializer(held).data})


def test_a_written_answer_is_indented_when_asked_and_escapes_as_drf_escapes():
    data = {"a": ["x\u2028y", 1.5e-07, None, "é"], "b": {"c": True}}
    written = Written(pages.encode(data))
    renderer = OurJSONRenderer()
    assert renderer.render(written) == JSONRenderer().render(data)
    indented = "application/json; indent=4"
    assert renderer.render(written, indented) == JSONRenderer().render(data, indented)
    assert renderer.render(written, renderer_context={"indent": 2}) == JSONRenderer().render(
        data, renderer_context={"indent": 2}
    )


def test_merged_by_position_reads_as_merged():
    agents_ = [("agt_a", "prn_a"), ("agt_b", None), ("agt_c", "prn_c"), ("agt_d", None)]
    stored = f"{marks.ROW}{marks.CAPABLE}{marks.ROW}{marks.INCAPABLE}"
    whole = marks.merged(
        "pld_1", ["row0", "row2"], agents_, stored, lambda **c: (c["position"], c["capable"])
    )
    assert (
        marks.merged_by_position(["row0", "row2"], stored, lambda p, capable: (p, capable))
        == whole
        == ["row0", (1, True), "row2", (3, False)]
    )
    assert marks.merged_by_position(["r"], "", lambda p, capable: None) == ["r"]
