"""What each candidate of a settled decision teaches: its label and training target."""
from __future__ import annotations

from typing import Any, Mapping

WON_CLAIMED = "won-claimed"
WON_EXPIRED = "won-expired"
WON_CLAIMED_BY_OTHER = "won-claimed-by-other"
LOST_CLAIMED = "lost-claimed"
LOST = "lost"
VOID = "void"

LABELS = (WON_CLAIMED, WON_EXPIRED, WON_CLAIMED_BY_OTHER, LOST_CLAIMED, LOST, VOID)

# A person moved the card, or nothing was held: no signal about anyone.
VOID_STATUSES = frozenset({"superseded", "not-reserved"})
SETTLED_STATUSES = frozenset({"claimed", "claimed-by-other", "expired"}) | VOID_STATUSES

_TARGETS: dict[str, int | None] = {
    WON_CLAIMED: 1,
    WON_EXPIRED: 0,
    WON_CLAIMED_BY_OTHER: 0,
    LOST_CLAIMED: 1,
    LOST: None,  # never offered the card, so it says nothing about whether it would take it
    VOID: None,
}


def label(decision: Mapping[str, Any], candidate: Mapping[str, Any]) -> str:
    """The label of one candidate record of a settled decision record.

    Raises ValueError when the decision is not settled (no `outcome`, or an unknown status).
    """
    outcome = decision.get("outcome") or {}
    status = outcome.get("status")
    if status not in SETTLED_STATUSES:
        raise ValueError(f"decision {decision.get('id')} is not settled")
    if status in VOID_STATUSES:
        return VOID
    agent_id = (candidate.get("candidate") or {}).get("agentId")
    if decision.get("chosen") is not None and decision.get("chosen") == agent_id:
        return {
            "claimed": WON_CLAIMED,
            "expired": WON_EXPIRED,
            "claimed-by-other": WON_CLAIMED_BY_OTHER,
        }[status]
    if status != "expired" and outcome.get("by") == agent_id:
        return LOST_CLAIMED
    return LOST


def target(label_: str) -> int | None:
    """1 (it claimed), 0 (it was held for and did not), or None (not trained on)."""
    try:
        return _TARGETS[label_]
    except KeyError:
        raise ValueError(f"unknown label {label_!r}") from None
