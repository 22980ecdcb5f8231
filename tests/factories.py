"""Hand-built records for tests: a decision with its candidates, written as the loop would."""
from __future__ import annotations

from datetime import datetime

from records.models import Candidate, Decision
from tests.conftest import T0

FILTERS = ("roster", "capability", "grant", "claimable", "policy", "health", "capacity",
           "idle", "held", "noShow", "passedOver")


def filters(failing: dict[str, str] | None = None, only_roster: bool = False) -> list[dict]:
    """Filter verdicts: every filter passes except those named {filter: reason}."""
    failing = failing or {}
    names = FILTERS[:1] if only_roster else FILTERS
    out = []
    for name in names:
        if name in failing:
            out.append({"filter": name, "passed": False, "reason": failing[name]})
        else:
            out.append({"filter": name, "passed": True})
    return out


def make_decision(*, board="brd_a", card="card_1", stage="review", chosen=None, reason=None,
                  tier=("winner", 1), created_at: datetime = T0, candidates=(), **fields):
    """A decision with candidates given as dicts {agent, failing?, off_roster?, total?, ...}."""
    decision = Decision.objects.create(
        board_id=board, card_id=card, stage_key=stage, policy="idle-stage-success-lru@3",
        chosen=chosen, reason=reason, tier_name=tier[0] if tier else None,
        tier_step=tier[1] if tier else None, requires={"all": ["code-review"], "any": []},
        ladder_ready_at=created_at, created_at=created_at, **fields)
    rows = []
    for position, c in enumerate(candidates):
        off = c.get("off_roster", False)
        verdicts = filters({"roster": "not-on-roster"} if off else c.get("failing"), only_roster=off)
        eligible = all(f["passed"] for f in verdicts)
        reasons = [f["reason"] for f in verdicts if not f["passed"]]
        rows.append(Candidate(
            decision=decision, position=position, agent_id=c["agent"],
            principal_id=c.get("principal", "prn_" + c["agent"][4:]),
            station_id=c.get("station"), source=c.get("source", "direct" if off else "roster"),
            filters=verdicts,
            score={"total": c["total"], "terms": c.get("terms", {})} if eligible else None,
            capable=c.get("capable", True) if off else None,
            stage_history=c.get("history"), policy=c.get("policy"),
            in_set=not off, eligible=eligible,
            reasons="," + ",".join(reasons) + "," if reasons else ""))
    Candidate.objects.bulk_create(rows)
    return decision
