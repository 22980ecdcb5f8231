import json
from dataclasses import FrozenInstanceError, replace

import pytest

from tests.support.placement import board, decided, every_kind_decided


def _decision():
    return every_kind_decided()


def test_record_names_every_field_as_the_decision_records_do():
    record = _decision().to_record()
    assert list(record) == [
        "boardId",
        "cardId",
        "stageKey",
        "policy",
        "chosen",
        "reason",
        "tier",
        "requires",
        "candidates",
    ]
    assert record["policy"] == "idle-stage-success-lru@3"
    assert (record["chosen"], record["reason"], record["tier"]) == (
        "agt_ada",
        None,
        {"name": "winner", "step": 1},
    )
    assert record["requires"] == {"all": ["code-review"], "any": []}


def test_candidate_record_shapes():
    ada, bob, eli = _decision().to_record()["candidates"]
    assert ada["candidate"] == {
        "agentId": "agt_ada",
        "principalId": "prn_ada",
        "stationId": "stn_ada",
        "source": "roster",
    }
    assert ada["filters"][0] == {"filter": "roster", "passed": True}
    assert set(ada["score"]) == {"total", "terms"}
    assert set(ada["score"]["terms"]) == {"stageRecord", "successRate", "sinceLastDispatchS"}
    assert set(ada["stageHistory"]) == {
        "runs",
        "succeeded",
        "verdicts",
        "passes",
        "weight",
        "outcomeRate",
        "verdictRate",
        "stageRecord",
    }
    assert ada["policy"] == {"allow": True, "reasons": ["no-policy"], "policyVersion": None}
    assert "capable" not in ada
    assert bob["score"] is None and bob["stageHistory"] is None
    assert {"filter": "tools", "passed": False, "reason": "tool-missing", "missing": ["git"]} in bob[
        "filters"
    ]
    assert eli == {
        "candidate": {"agentId": "agt_eli", "principalId": "prn_eli", "stationId": None, "source": "direct"},
        "filters": [{"filter": "roster", "passed": False, "reason": "not-on-roster"}],
        "score": None,
        "stageHistory": None,
        "capable": True,
    }


def test_record_is_json_safe():
    record = _decision().to_record()
    assert json.loads(json.dumps(record, allow_nan=False)) == record


def test_decision_is_a_frozen_value():
    decision = _decision()
    with pytest.raises(FrozenInstanceError):
        decision.chosen = "agt_bob"  # type: ignore[misc]
    assert decision == _decision()


def test_candidate_exposes_eligible_in_set_and_its_rejections():
    decision = _decision()
    assert decision.candidate("agt_ada").eligible and decision.candidate("agt_ada").in_set
    bob = decision.candidate("agt_bob")
    assert not bob.eligible and bob.in_set and [r.reason for r in bob.rejections] == ["tool-missing"]
    assert not decision.candidate("agt_eli").in_set
    assert decision.candidate("agt_nobody") is None


def test_hold_names_the_chosen_agent():
    decision = decided(replace(board()))
    assert decision.hold.agent_id == decision.chosen
