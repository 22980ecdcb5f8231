"""Hand-built records for tests: a decision with its candidates, written as the loop would."""
from __future__ import annotations

from datetime import datetime

from records.models import Candidate, Decision
from tests.conftest import T0

FILTERS = ("roster", "capability", "grant", "claimable", "policy", "health", "capacity",
           "idle", "held", "noShow", "passedOver")
STATION_FILTERS = {"isolation": "isolation-too-weak", "model": "model-mismatch",
                   "tools": "tool-missing", "credentials": "credential-missing"}
REQUIRES = {"all": ["code-review"], "any": []}


def filters(failing: dict[str, str] | None = None, only_roster: bool = False,
            lacking: dict[str, list[str]] | None = None) -> list[dict]:
    """Filter verdicts: every filter passes except those named {filter: reason}.

    With `lacking` the station filters run too, each failing with what its station lacks.
    """
    failing = failing or {}
    names = FILTERS[:1] if only_roster else FILTERS
    if lacking is not None and not only_roster:
        names = names[:4] + tuple(STATION_FILTERS) + names[4:]
    out = []
    for name in names:
        if lacking and lacking.get(name):
            out.append({"filter": name, "passed": False, "reason": STATION_FILTERS[name],
                        "missing": list(lacking[name])})
        elif name in failing:
            out.append({"filter": name, "passed": False, "reason": failing[name]})
        else:
            out.append({"filter": name, "passed": True})
    return out


def make_decision(*, board="brd_a", card="card_1", stage="review", chosen=None, reason=None,
                  tier=("winner", 1), created_at: datetime = T0, candidates=(),
                  ready_at: datetime | None = None, requires=REQUIRES, **fields):
    """A decision with candidates given as dicts {agent, failing?, lacking?, off_roster?,
    in_set?, total?, ...}; `ready_at` (the card's readyAt) defaults to `created_at`."""
    decision = Decision.objects.create(
        board_id=board, card_id=card, stage_key=stage, policy="idle-stage-success-lru@3",
        chosen=chosen, reason=reason, tier_name=tier[0] if tier else None,
        tier_step=tier[1] if tier else None, requires=requires,
        ladder_ready_at=ready_at or created_at, created_at=created_at, **fields)
    rows = []
    for position, c in enumerate(candidates):
        off = c.get("off_roster", False) or c.get("in_set") is False  # outside the candidate set
        verdicts = filters({"roster": "not-on-roster"} if off else c.get("failing"), only_roster=off,
                           lacking=c.get("lacking"))
        eligible = all(f["passed"] for f in verdicts)
        reasons = [f["reason"] for f in verdicts if not f["passed"]]
        rows.append(Candidate(
            decision=decision, position=position, agent_id=c["agent"],
            principal_id=c.get("principal", "prn_" + c["agent"][4:]),
            station_id=c.get("station"), source=c.get("source", "direct" if off else "roster"),
            filters=verdicts,
            score={"total": c.get("total", 1.0), "terms": c.get("terms", {})} if eligible else None,
            capable=c.get("capable", True) if off else None,
            stage_history=c.get("history"), policy=c.get("policy"),
            in_set=not off, eligible=eligible and not off,
            reasons="," + ",".join(reasons) + "," if reasons else ""))
    Candidate.objects.bulk_create(rows)
    return decision
