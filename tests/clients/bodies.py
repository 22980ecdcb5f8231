"""Contract-shaped answers of the suite (see the contracts), with fields to override."""

from __future__ import annotations

from typing import Any

T0 = "2026-11-13T10:00:00.000Z"


def stage(**over: Any) -> dict:
    return {
        "key": "review",
        "name": "Review",
        "order": 2,
        "ownerKind": "capability",
        "owner": "code-review",
        "requires": {"all": ["code-review"], "any": []},
        "placement": {
            "isolation": "container",
            "models": ["m-large"],
            "tools": ["git"],
            "credentials": ["GITHUB_TOKEN"],
        },
    } | over


def card(**over: Any) -> dict:
    return {
        "id": "card_1042",
        "title": "Fix the parser",
        "currentStageKey": "review",
        "state": "submitted",
        "delegateAgentId": None,
        "priority": 0,
        "readyAt": "2026-11-13T10:03:12.000Z",
        "claimedAt": None,
        "archivedAt": None,
        "reservation": None,
        "createdAt": T0,
        "updatedAt": "2026-11-13T10:03:12.000Z",
        "attemptCount": 0,
    } | over


def board(stages: list | None = None, cards: list | None = None) -> dict:
    return {
        "boardId": "brd_1",
        "tenantId": "tnt_1",
        "name": "Review",
        "stages": [stage()] if stages is None else stages,
        "cards": [card()] if cards is None else cards,
    }


def eligibility() -> dict:
    return {
        "cardId": "card_1042",
        "stageKey": "review",
        "requires": {"all": ["code-review"], "any": []},
        "agents": [
            {"agentId": "agt_ada", "principalId": "prn_ada", "eligible": True, "reasons": []},
            {
                "agentId": "agt_cyd",
                "principalId": "prn_cyd",
                "eligible": False,
                "reasons": ["concurrency_reached"],
            },
            {
                "agentId": "agt_eli",
                "principalId": None,
                "eligible": False,
                "reasons": ["capability_mismatch", "grant_denied"],
            },
        ],
    }


def bad_boards() -> list:
    """Board answers out of the contract's shape, each one way off."""
    return [
        {"boardId": "brd_1", "tenantId": "tnt_1", "name": "Review", "stages": []},
        board(cards=[{k: v for k, v in card().items() if k != "readyAt"}]),
        board(cards=[card(readyAt="yesterday")]),
        board(cards=[card(readyAt="2026-11-13T10:03:12")]),  # no offset
        board(cards=[card(priority="high")]),
        board(cards=[card(priority=True)]),
        board(cards=[card(reservation={"agentId": "agt_ada"})]),
        board(cards=[card(title=None)]),
        board(stages=[stage(order="2")]),
        board(stages=[stage(requires={"all": "code-review"})]),
        board(stages=[stage(placement={"isolation": "vm"})]),
        board(cards="none"),
        [board()],
    ]


def load() -> dict:
    return {
        "agents": [
            {
                "agentId": "agt_ada",
                "principalId": "prn_ada",
                "inFlight": 1,
                "capacity": 2,
                "lastHeartbeatAt": "2026-11-13T10:01:00.000Z",
            },
            {
                "agentId": "agt_bo",
                "principalId": None,
                "inFlight": 0,
                "capacity": None,
                "lastHeartbeatAt": None,
            },
        ]
    }


def reservation(agent_id: str = "agt_ada") -> dict:
    return {"reservation": {"agentId": agent_id, "reservedUntil": "2026-11-13T10:04:12.000Z"}}


def roster() -> dict:
    return {
        "boardId": "brd_1",
        "agents": [
            {
                "key": "codex-mac",
                "agentId": "agt_ada",
                "principalId": "prn_ada",
                "stationId": "station_1",
                "enabled": True,
                "ready": True,
                "busy": False,
                "lastTookWorkAt": "2026-11-13T09:00:00.000Z",
            },
            {
                "key": "claude-box",
                "agentId": "agt_bo",
                "principalId": None,
                "stationId": None,
                "enabled": False,
                "ready": False,
                "busy": True,
                "lastTookWorkAt": None,
            },
        ],
    }


def stations() -> dict:
    return {
        "stations": [
            {
                "stationId": "station_1",
                "runtime": "rt_1",
                "harness": "codex",
                "occupant": "agt_ada",
                "isolation": {"value": "container", "proof": "probed"},
                "models": [{"id": "m-large", "proof": "declared"}],
                "tools": [{"id": "git", "proof": "installed"}],
                "credentials": [{"name": "GITHUB_TOKEN", "proof": "declared"}],
            },
            {
                "stationId": "station_2",
                "runtime": None,
                "harness": None,
                "occupant": None,
                "isolation": None,
                "models": [],
                "tools": [],
                "credentials": [],
            },
        ]
    }


def run(
    principal: str = "prn_ada",
    status: str = "succeeded",
    stage_key: str | None = "review",
    verdict: Any = None,
) -> dict:
    return {
        "executor": {"id": principal, "name": principal},
        "status": status,
        "stage_key": stage_key,
        "ended_at": "2026-11-12T08:00:00.000Z",
        "latest_verdict": None if verdict is None else {"value": verdict},
    }


def runs(items: list, next_cursor: str | None = None) -> dict:
    return {"runs": items, "next_cursor": next_cursor}


def verdict(**over: Any) -> dict:
    return {"allow": True, "reasons": [], "policyVersion": "pol_1"} | over
