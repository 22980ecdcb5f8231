"""The dispatch policy: what Accounts' answers say of each candidate, for its filter and the record.

Accounts answers, agent by agent, whether the workspace's dispatch policy lets it take the
work, and with which reasons and policy version. The `policy` filter (`filters.py`) refuses
whom the answers refuse; every candidate's answer is recorded as its `policy`.
"""

from __future__ import annotations

from typing import Any, Iterable, NamedTuple

from .facts import PolicyFacts, PolicyVerdict

LIMIT_PREFIX = "limit:"  # a limit's own reason code, as Accounts spells it: `limit:…`

# The policy filter's reason codes. Besides these, a refusal by a limit is recorded with the
# limit's own reason (`limit:…`).
POLICY_DENIED, POLICY_UNREAD, NO_PRINCIPAL = "policy-denied", "policy-unread", "no-principal"


class PolicyRecord(NamedTuple):
    """The dispatch policy's verdict on a candidate: `{allow, reasons, policyVersion}`."""

    allow: bool
    reasons: tuple[str, ...]
    policy_version: str | None

    def to_record(self) -> dict[str, Any]:
        return {"allow": self.allow, "reasons": list(self.reasons), "policyVersion": self.policy_version}


class PolicyAnswers(NamedTuple):
    """What the dispatch policy said of the candidate set, read once for the filter and the record."""

    refusals: dict[str, str]  # by agent id: `limit:…` or `policy-denied`
    unanswered: list[str]  # in the set, with no verdict
    records: dict[str, PolicyRecord]  # by agent id, every verdict as recorded
    no_policy: bool  # the last answer said the workspace has no policy


def policy_refusal(verdict: PolicyVerdict) -> str | None:
    """Why a policy verdict refuses the agent (`limit:…` or `policy-denied`), or None.

    Accounts cannot count SuperDispatch's holds, so a limit is judged here by our own count,
    and a refusal whose only reasons are the limit's is ours to overrule.
    """
    if verdict.allow and verdict.limit_max_runs is None:
        return None
    limit_reasons = [reason for reason in verdict.reasons if reason.startswith(LIMIT_PREFIX)]
    if verdict.limit_max_runs is None:
        refused = not verdict.allow
    elif verdict.holds_in_window >= verdict.limit_max_runs:
        return limit_reasons[0] if limit_reasons else LIMIT_PREFIX + "max-runs"
    else:
        refused = not verdict.allow and len(limit_reasons) < max(len(verdict.reasons), 1)
    return POLICY_DENIED if refused else None


def policy_answers(in_set: Iterable[str], facts: PolicyFacts) -> PolicyAnswers:
    """Whom the policy refuses and why, and each candidate's verdict as recorded.

    Candidates the policy answered alike share one record.
    """
    answered = facts.verdicts
    # The common answer, an allow with no limit, is looked up by its reasons and then its
    # version, so that each candidate's costs no key of its own: a card has a thousand.
    allowed: dict[tuple[str, ...], dict[str | None, PolicyRecord]] = {}
    shared: dict[tuple[bool, tuple[str, ...], str | None], PolicyRecord] = {}
    refusals: dict[str, str] = {}
    unanswered = []
    records = {}
    for agent_id in in_set:
        verdict = answered.get(agent_id)
        if verdict is None:
            unanswered.append(agent_id)
            continue
        if verdict.allow and verdict.limit_max_runs is None:
            versions = allowed.get(verdict.reasons)
            if versions is None:
                versions = allowed[verdict.reasons] = {}
            record = versions.get(verdict.policy_version)
            if record is None:
                record = versions[verdict.policy_version] = PolicyRecord(
                    True, verdict.reasons, verdict.policy_version
                )
        else:
            refusal = policy_refusal(verdict)
            if refusal is not None:
                refusals[agent_id] = refusal
            recorded = _recorded(verdict, refusal)
            record = shared.get(recorded)
            if record is None:
                record = shared[recorded] = PolicyRecord(*recorded)
        records[agent_id] = record
    return PolicyAnswers(refusals, unanswered, records, facts.last_answer_no_policy)


def _recorded(verdict: PolicyVerdict, refusal: str | None) -> tuple[bool, tuple[str, ...], str | None]:
    reasons = verdict.reasons
    if refusal is not None and refusal.startswith(LIMIT_PREFIX) and refusal not in reasons:
        reasons = (*reasons, refusal)
    return refusal is None, reasons, verdict.policy_version
