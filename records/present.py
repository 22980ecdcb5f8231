"""The JSON the operator API answers: camelCase, exactly as the docs name each field."""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Iterable

from records.models import Board, Candidate, Decision, Suggestion


def iso(moment: datetime | None) -> str | None:
    """RFC 3339 UTC with milliseconds, as the suite writes times: 2026-11-13T10:03:12.000Z."""
    if moment is None:
        return None
    moment = moment.astimezone(timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def board_json(board: Board) -> dict:
    return {
        "boardId": board.board_id,
        "enabled": board.enabled,
        "createdAt": iso(board.created_at),
        "updatedAt": iso(board.updated_at),
    }


def candidate_json(c: Candidate) -> dict:
    out = {
        "candidate": {"agentId": c.agent_id, "principalId": c.principal_id,
                      "stationId": c.station_id, "source": c.source},
        "filters": c.filters,
        "score": c.score,
    }
    if c.capable is not None:
        out["capable"] = c.capable
    out["stageHistory"] = c.stage_history
    if c.policy is not None:
        out["policy"] = c.policy
    return out


def decision_json(d: Decision, candidates: Iterable[Candidate]) -> dict:
    out = {
        "id": d.id,
        "boardId": d.board_id,
        "cardId": d.card_id,
        "stageKey": d.stage_key,
        "policy": d.policy,
        "chosen": d.chosen,
        "reason": d.reason,
        "tier": d.tier,
        "requires": d.requires,
        "candidates": [candidate_json(c) for c in candidates],
        "reservation": {"reservedUntil": iso(d.reserved_until)} if d.reserved_until else None,
        "reservationRefused": d.reservation_refused,
        "outcome": ({"status": d.outcome_status, "by": d.outcome_by, "at": iso(d.outcome_at)}
                    if d.outcome_status else None),
        "createdAt": iso(d.created_at),
    }
    if d.learned is not None:
        out["learned"] = d.learned
    if d.waiting is not None:
        out["waiting"] = d.waiting
    if d.run_status is not None:
        out["run"] = {"status": d.run_status, "verdictMark": d.run_mark, "endedAt": iso(d.run_ended_at)}
    return out


def suggestion_json(s: Suggestion) -> dict:
    common_head = {"id": s.id, "kind": s.kind, "boardId": s.board_id, "stageKey": s.stage_key}
    common_tail = {
        "evidence": s.evidence,
        "evidenceCount": s.evidence_count,
        "firstSeenAt": iso(s.first_seen_at),
        "lastSeenAt": iso(s.last_seen_at),
        "resolvedAt": iso(s.resolved_at),
        "dismissedAt": iso(s.dismissed_at),
    }
    if s.is_supply:
        body = {
            "rationale": s.rationale,
            "target": s.target,
            "estimatedEffect": s.estimated_effect,
            "howToApply": s.how_to_apply,
            "registry": s.registry,
        }
    else:
        body = {
            "capability": s.capability,
            "rostered": s.rostered,
            "candidates": s.candidates,
            "reasons": s.reasons,
            "reason": s.reason,
        }
    return {**common_head, **body, **common_tail}
