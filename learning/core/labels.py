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


# What a model learns (SUPERDISPATCH_LEARNED_TARGET): that a held agent claims the card, or
# that it claims it and the run it starts succeeds.
CLAIMED = "claimed"
SUCCEEDED = "succeeded"
GOALS = (CLAIMED, SUCCEEDED)
CLAIMS = frozenset({WON_CLAIMED, LOST_CLAIMED})


def target(label_: str, run_status: str | None = None, goal: str = CLAIMED) -> int | None:
    """The candidate's training target under `goal`, or None (not trained on).

    `claimed`: 1 it claimed, 0 it was held for and did not. `succeeded`: 1 only when it claimed
    and the claim's run succeeded, 0 when the run failed or it was held for and did not claim;
    a claim whose run is not known (yet, or at all: only the chosen agent's claim is joined to
    its run) teaches nothing.
    """
    try:
        claimed = _TARGETS[label_]
    except KeyError:
        raise ValueError(f"unknown label {label_!r}") from None
    if goal == CLAIMED:
        return claimed
    if goal != SUCCEEDED:
        raise ValueError(f"unknown target {goal!r}")
    if label_ not in CLAIMS:
        return claimed  # 0 for a hold that was not claimed, None for no signal
    if run_status == "succeeded":
        return 1
    if run_status == "failed":
        return 0
    return None


def run_status(decision: Mapping[str, Any]) -> str | None:
    """The status of the claim's run on a decision record (`run.status`), None while unknown."""
    return (decision.get("run") or {}).get("status")
