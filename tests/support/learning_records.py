"""Decision records in the operator API's shape, for the learning tests."""

from __future__ import annotations

from typing import Any

FILTERS = ("roster", "capability", "grant", "claimable", "health", "capacity", "idle", "held")


def candidate(
    agent_id: str,
    *,
    fails: dict[str, str] | None = None,
    source: str = "roster",
    terms: dict[str, Any] | None = None,
    history: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A candidate record; `fails` maps a filter to the reason it rejected with."""
    fails = fails or {}
    names = ("roster",) if "roster" in fails else FILTERS
    filters = [
        {"filter": f, "passed": False, "reason": fails[f]} if f in fails else {"filter": f, "passed": True}
        for f in names
    ]
    eligible = not fails
    return {
        "candidate": {
            "agentId": agent_id,
            "principalId": f"prn_{agent_id}",
            "stationId": None,
            "source": source,
        },
        "filters": filters,
        "score": {"total": 1, "terms": terms or {"successRate": 0.5, "sinceLastDispatchS": None}}
        if eligible
        else None,
        "stageHistory": history,
    }


def decision(
    candidates: list[dict[str, Any]],
    *,
    chosen: str | None,
    status: str | None,
    by: str | None = None,
    tier: dict[str, Any] | None = None,
    id: str = "pld_000000000000000000000001",
    created_at: str = "2026-11-13T10:03:12.000Z",
) -> dict[str, Any]:
    return {
        "id": id,
        "boardId": "brd_review",
        "cardId": "card_1042",
        "stageKey": "review",
        "policy": "idle-stage-success-lru@3",
        "chosen": chosen,
        "reason": None,
        "tier": tier if tier is not None else {"name": "winner", "step": 1},
        "requires": {"all": ["code-review"], "any": []},
        "candidates": candidates,
        "reservation": None,
        "reservationRefused": None,
        "outcome": None if status is None else {"status": status, "by": by, "at": "2026-11-13T10:03:31.000Z"},
        "createdAt": created_at,
    }
