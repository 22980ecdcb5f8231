"""Every key the API's record carries beyond the docs' shape is listed in docs/api.md, with what
it means; and `unchecked`, the one a filter's verdict may carry, is where those docs say."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from placement.facts import PolicyFacts, PolicyVerdict, StationNeeds
from placement.filtering import tables
from records.api.views import ExplainedDecisionSerializer
from records.serializers import CandidateSerializer, FilterVerdictSerializer
from tests.support.placement import board, card, decided, station, verdict, with_rows
from tests.support.record_shape import DOCUMENTED

API_DOCS = Path(__file__).resolve().parents[2] / "docs" / "api.md"
SERIALIZERS = {
    "decision": ExplainedDecisionSerializer,
    "candidate": CandidateSerializer,
    "filter": FilterVerdictSerializer,
}


def beyond_the_docs() -> str:
    """docs/api.md's section on the record beyond the docs, and its list."""
    text = API_DOCS.read_text()
    start = text.index("## The record beyond the docs")
    return text[start : text.index("\n\n", text.index("\n- ", start))]


def test_every_key_the_record_adds_to_the_docs_shape_is_listed_in_the_api_docs():
    listed = set(re.findall(r"`([A-Za-z]+)[`:]", beyond_the_docs()))
    for level, serializer in SERIALIZERS.items():
        added = set(serializer().fields) - DOCUMENTED[level]
        assert added <= listed, (level, added - listed)
    assert "unchecked" in listed


def _unchecked(decision) -> set[tuple[str, str]]:
    return {(c.agent_id, f.filter) for c in decision.candidates for f in c.filters if f.unchecked}


def test_unchecked_marks_a_pass_without_judgement_and_only_where_the_readme_says():
    needs = card(needs=StationNeeds(tools=("git",)))
    stations = tables().station_filters
    # AgentPod's registry unread: each station filter passes every candidate, unchecked.
    unread = decided(board("agt_ada", "agt_bob", card=needs, registry=None))
    assert _unchecked(unread) == {(a, f) for a in ("agt_ada", "agt_bob") for f in stations}
    assert all(f.passed for c in unread.candidates for f in c.filters if f.unchecked)
    assert {"filter": "tools", "passed": True, "unchecked": True} in unread.to_record()["candidates"][0][
        "filters"
    ]
    # Read: judged, so nothing is unchecked.
    read = decided(
        board("agt_ada", "agt_bob", card=needs, registry=(station("stn_ada"), station("stn_bob", tools=())))
    )
    assert _unchecked(read) == set()
    # The policy on: an agent refused on the grant is never asked, so its policy is unchecked;
    # every other is judged.
    asked = with_rows(board("agt_ada", "agt_bob"), eligibility=[verdict("agt_bob", "grant_denied")])
    asked = replace(asked, policy=PolicyFacts({"agt_ada": PolicyVerdict(True, ("allow",))}))
    policy = decided(asked)
    assert _unchecked(policy) == {("agt_bob", "policy")}
    assert [f.reason for f in policy.candidate("agt_bob").filters if not f.passed] == ["grant-denied"]
