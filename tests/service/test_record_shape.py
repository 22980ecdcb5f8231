"""The record has one owner: what placement decides is what the store keeps and the API answers."""

import json

import pytest

from common.times import iso
from records.models import Candidate, Decision
from records.serializers import CandidateSerializer
from records.store.actions.decisions import do_record_decision, do_record_hold, do_settle
from records.store.columns import (
    CANDIDATE_DERIVED,
    CANDIDATE_READS,
    CANDIDATE_STORED,
    DECISION_READS,
    candidate_columns,
)
from tests.conftest import at
from tests.support.placement import NOW, board, decided, every_kind_decided

pytestmark = [pytest.mark.django_db, pytest.mark.storage]


def _answered(api, decision_id: str) -> dict:
    """The decision as the API answers it, less `explanation`: the words the API adds after
    the record (tests/service/test_explain.py reads them)."""
    one = api.get(f"/v1/decisions/{decision_id}").json()["decision"]
    assert api.get("/v1/decisions").json()["decisions"] == [one]
    assert list(one)[-1] == "explanation" and one.pop("explanation")
    return one


def test_a_decision_reads_back_from_the_api_as_placement_recorded_it(api):
    placed = every_kind_decided()
    learned = {"model": "mdl_" + "0" * 24, "choice": "agt_ada", "placed": False}
    decision = do_record_decision(placed, NOW, learned=learned)
    do_record_hold(decision, at(60))
    do_settle(decision.id, "claimed", "agt_ada", at(19))

    body = _answered(api, decision.id)

    record = json.loads(json.dumps(placed.to_record()))  # as JSON keeps it: lists, not tuples
    assert {c["candidate"]["agentId"] for c in record["candidates"]} == {"agt_ada", "agt_bob", "agt_eli"}
    assert body == {
        "id": decision.id,
        **record,
        "reservation": {"reservedUntil": iso(at(60))},
        "reservationRefused": None,
        "outcome": {"status": "claimed", "by": "agt_ada", "at": iso(at(19))},
        "createdAt": iso(NOW),
        "learned": learned,
    }


def test_a_decision_nobody_was_held_for_reads_back_with_nothing_added(api):
    placed = decided(board("agt_ada"))  # one candidate: pull decides
    assert placed.chosen is None and placed.reason == "one-candidate"
    decision = do_record_decision(placed, NOW)

    body = _answered(api, decision.id)

    assert body == {
        "id": decision.id,
        **json.loads(json.dumps(placed.to_record())),
        "reservation": None,
        "reservationRefused": None,
        "outcome": None,
        "createdAt": iso(NOW),
    }
    assert "learned" not in body and "capable" not in body["candidates"][0]


def test_capable_reads_back_for_the_agents_off_the_roster_alone(api):
    """Under `all`: a direct agent in the set has `capable`, a disabled bridge row has none."""
    from dataclasses import replace

    from tests.support.placement import load_row, roster_row, verdict, with_rows

    facts = with_rows(
        board("agt_ada", "agt_bob"),
        roster=[roster_row("agt_bob", enabled=False)],
        eligibility=[verdict("agt_eli", "capability_mismatch")],
    )
    placed = decided(replace(facts, load=(load_row("agt_eli"),)), candidates="all")
    decision = do_record_decision(placed, NOW)

    body = _answered(api, decision.id)

    capable = {c["candidate"]["agentId"]: c.get("capable", "absent") for c in body["candidates"]}
    assert capable == {"agt_ada": "absent", "agt_bob": "absent", "agt_eli": False}
    assert body["candidates"] == json.loads(json.dumps(placed.to_record()))["candidates"]


def test_the_write_keeps_the_columns_the_store_queries_by():
    placed = every_kind_decided()
    decision = do_record_decision(placed, NOW)
    rows = {c.agent_id: c for c in Decision.objects.get(pk=decision.pk).candidates}
    assert [c.position for c in sorted(rows.values(), key=lambda c: c.agent_id)] == [0, 1, 2]
    # The agent off the set is a mark against the roll, not a row.
    assert set(Candidate.objects.filter(decision=decision).values_list("agent_id", flat=True)) == {
        "agt_ada",
        "agt_bob",
    }
    assert (rows["agt_ada"].in_set, rows["agt_ada"].eligible, rows["agt_ada"].reasons) == (True, True, "")
    assert (rows["agt_bob"].in_set, rows["agt_bob"].eligible, rows["agt_bob"].reasons) == (
        True,
        False,
        ",tool-missing,",
    )
    assert (rows["agt_eli"].in_set, rows["agt_eli"].reasons) == (False, ",not-on-roster,")
    assert Decision.objects.get().ladder_ready_at == placed.card.ready_at


def test_every_stored_column_is_a_field_of_the_record_or_worked_out_by_the_write():
    read = {attr for attr, _ in CANDIDATE_READS}
    assert read | set(CANDIDATE_DERIVED) == {f.attname for f in CANDIDATE_STORED}
    assert not read & set(CANDIDATE_DERIVED)
    # A decision's ladder (the card's readyAt and attemptCount as its read showed them) is
    # what the API does not answer, besides how it keeps its candidates off the set.
    assert {f.attname for f in Decision._meta.concrete_fields} - {attr for attr, _ in DECISION_READS} == {
        "ladder_ready_at",
        "attempt_count",
        "roll_id",
        "roll_marks",
    }


def test_the_write_maps_a_candidate_to_columns_as_the_serializer_reads_it():
    for record in json.loads(json.dumps(every_kind_decided().to_record()))["candidates"]:
        given = CandidateSerializer(data=record)
        assert given.is_valid(), given.errors
        absent_is_null = {attr: None for attr, _ in CANDIDATE_READS}
        assert {**absent_is_null, **given.validated_data} == candidate_columns(record)
