"""Every filter a candidate goes through, in the order they run, and the reason each rejects with.

An agent outside the candidate set goes through `roster` alone. Every other candidate goes
through all of them, so its record lists each thing that was wrong, not just the first.
Each filter is a small function of the agent and the pass's facts (`Ground`).
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Callable, Mapping

from .candidates import Agent
from .facts import Facts, PolicyFacts, PolicyVerdict, Station, StationNeeds
from .rules import Rules
from .stations import (
    PROOF_RANK,
    credentials_lacking,
    isolation_lacking,
    models_lacking,
    tools_lacking,
)

# SuperPipeline's eligibility reasons that have a filter of their own; any other is `not-claimable`.
CAPABILITY_MISMATCH = "capability_mismatch"
GRANT_DENIED = "grant_denied"
CONCURRENCY_REACHED = "concurrency_reached"
NAMED_ELIGIBILITY_REASONS = frozenset({CAPABILITY_MISMATCH, GRANT_DENIED, CONCURRENCY_REACHED})

LIMIT_PREFIX = "limit:"

# Each filter and the reason code it rejects with, in the order they run.
REASON_CODES = {
    "roster": "not-on-roster",
    "capability": "capability-missing",
    "grant": "grant-denied",
    "claimable": "not-claimable",
    "isolation": "isolation-too-weak",
    "model": "model-mismatch",
    "tools": "tool-missing",
    "credentials": "credential-missing",
    "policy": "policy-denied",
    "health": "unhealthy",
    "capacity": "at-capacity",
    "idle": "not-idle",
    "held": "holding-another",
    "noShow": "recently-no-show",
    "passedOver": "passed-over",
}
STATION_FILTERS = ("isolation", "model", "tools", "credentials")


@dataclass(frozen=True, slots=True)
class FilterResult:
    """One filter's verdict on one candidate, as the decision records it."""

    filter: str
    passed: bool
    reason: str | None = None
    missing: tuple[str, ...] | None = None  # a station filter's: what the station lacks
    unchecked: bool = False  # passed because the fact could not be read, not because it held

    def to_record(self) -> dict[str, Any]:
        record: dict[str, Any] = {"filter": self.filter, "passed": self.passed}
        if self.reason is not None:
            record["reason"] = self.reason
        if self.missing is not None:
            record["missing"] = list(self.missing)
        if self.unchecked:
            record["unchecked"] = True
        return record


# Verdicts that carry nothing of their own are shared, so filtering allocates almost nothing.
PASSED = {name: FilterResult(name, True) for name in REASON_CODES}
REJECTED = {name: FilterResult(name, False, code) for name, code in REASON_CODES.items()}
UNCHECKED = {name: FilterResult(name, True, unchecked=True) for name in (*STATION_FILTERS, "policy")}


def _judged(name: str, ok: bool) -> FilterResult:
    return PASSED[name] if ok else REJECTED[name]


@dataclass(frozen=True, slots=True)
class PolicyRecord:
    """The dispatch policy's verdict on a candidate: `{allow, reasons, policyVersion}`."""

    allow: bool
    reasons: tuple[str, ...]
    policy_version: str | None

    def to_record(self) -> dict[str, Any]:
        return {"allow": self.allow, "reasons": list(self.reasons), "policyVersion": self.policy_version}


@dataclass(frozen=True, slots=True)
class Ground:
    """What the filters read besides the agent: the card's needs and this pass's facts."""

    filters: tuple[Callable[[Agent, "Ground"], FilterResult], ...]
    needs: StationNeeds  # only read when the station filters run
    stations: Mapping[str, Station] | None  # None: registry unread, needs left unchecked
    min_proof_rank: int
    policy: PolicyFacts | None  # None: policy off
    holding: frozenset[str]
    lapses: Mapping[str, tuple[datetime, ...]]
    no_show_since: datetime  # a lapse at or before this has aged out
    no_show_count: int
    passed_over: frozenset[str]


def ground_for(facts: Facts, rules: Rules, now: datetime) -> Ground:
    """The filters to run for this card and everything they read."""
    needs = facts.card.needs
    stations_run = rules.station_filters and needs is not None and needs.states_anything
    registry = facts.registry
    return Ground(
        filters=IN_ORDER if stations_run else WITHOUT_STATION_FILTERS,
        needs=needs or StationNeeds(),
        stations=None if registry is None else {station.station_id: station for station in registry},
        min_proof_rank=PROOF_RANK[rules.min_proof],
        policy=facts.policy,
        holding=facts.own.holding,
        lapses=facts.own.lapses,
        no_show_since=now - timedelta(seconds=rules.no_show_window_s),
        no_show_count=rules.no_show_count,
        passed_over=facts.ladder.passed_over,
    )


def run_filters(agent: Agent, ground: Ground) -> tuple[FilterResult, ...]:
    """Every verdict on the agent, in order: `roster` alone outside the candidate set."""
    if not agent.in_set:
        return (REJECTED["roster"],)
    return tuple([each(agent, ground) for each in ground.filters])


# --- The filters, in the order they run ---------------------------------------------------

def roster(agent: Agent, ground: Ground) -> FilterResult:
    """In the candidate set: an enabled bridge row, or (with `all`) reporting its load."""
    return _judged("roster", agent.in_set)


def capability(agent: Agent, ground: Ground) -> FilterResult:
    """SuperPipeline finds the stage's capability on the agent."""
    return _judged("capability", CAPABILITY_MISMATCH not in _reasons(agent))


def grant(agent: Agent, ground: Ground) -> FilterResult:
    """The card's dispatch grant covers the agent."""
    return _judged("grant", GRANT_DENIED not in _reasons(agent))


def claimable(agent: Agent, ground: Ground) -> FilterResult:
    """SuperPipeline would let it claim, for every reason without a filter of its own.

    Missing from the eligibility read, ineligible with no reason, or any reason a later
    SuperPipeline adds: not claimable.
    """
    verdict = agent.verdict
    if verdict is None or (not verdict.eligible and not verdict.reasons):
        return REJECTED["claimable"]
    return _judged("claimable", NAMED_ELIGIBILITY_REASONS.issuperset(verdict.reasons))


def isolation(agent: Agent, ground: Ground) -> FilterResult:
    """The station is isolated at least as strongly as the stage asks."""
    return _station_verdict("isolation", isolation_lacking, agent, ground)


def model(agent: Agent, ground: Ground) -> FilterResult:
    """The station runs one of the models the stage asks for."""
    return _station_verdict("model", models_lacking, agent, ground)


def tools(agent: Agent, ground: Ground) -> FilterResult:
    """The station has every tool the stage asks for."""
    return _station_verdict("tools", tools_lacking, agent, ground)


def credentials(agent: Agent, ground: Ground) -> FilterResult:
    """The station reaches every credential name the stage asks for."""
    return _station_verdict("credentials", credentials_lacking, agent, ground)


def policy(agent: Agent, ground: Ground) -> FilterResult:
    """The workspace's dispatch policy lets the agent take this work; it fails closed.

    Unanswered (or no principal to ask about) passes only if the last answer said the
    workspace has no policy. An agent SuperPipeline refuses on the grant is never asked.
    """
    facts = ground.policy
    if facts is None:
        return PASSED["policy"]
    verdict = facts.verdicts.get(agent.agent_id)
    if verdict is not None:
        refusal = policy_refusal(verdict)
        return PASSED["policy"] if refusal is None else FilterResult("policy", False, refusal)
    if GRANT_DENIED in _reasons(agent):
        return UNCHECKED["policy"]
    if facts.last_answer_no_policy:
        return PASSED["policy"]
    return FilterResult("policy", False, "no-principal" if agent.principal_id is None else "policy-unread")


def health(agent: Agent, ground: Ground) -> FilterResult:
    """Healthy by its load shape: ready to take a card held for it."""
    return _judged("health", agent.load.healthy)  # type: ignore[union-attr]


def capacity(agent: Agent, ground: Ground) -> FilterResult:
    """Under its board's concurrency, by SuperPipeline."""
    return _judged("capacity", CONCURRENCY_REACHED not in _reasons(agent))


def idle(agent: Agent, ground: Ground) -> FilterResult:
    """Less in hand than its capacity, anywhere in the workspace."""
    return _judged("idle", agent.load.idle)  # type: ignore[union-attr]


def held(agent: Agent, ground: Ground) -> FilterResult:
    """Holds no other card now: one live hold per agent."""
    return _judged("held", agent.agent_id not in ground.holding)


def no_show(agent: Agent, ground: Ground) -> FilterResult:
    """Fewer than two unclaimed lapses, on any cards, within the window before now.

    A lapse exactly the window old has aged out.
    """
    lapses = ground.lapses.get(agent.agent_id, ())
    recent = sum(1 for lapsed_at in lapses if lapsed_at > ground.no_show_since)
    return _judged("noShow", recent < ground.no_show_count)


def passed_over(agent: Agent, ground: Ground) -> FilterResult:
    """Its hold on this card has not already lapsed on the card's current ladder (by identity)."""
    return _judged("passedOver", agent.agent_id not in ground.passed_over)


IN_ORDER = (
    roster, capability, grant, claimable,
    isolation, model, tools, credentials,
    policy, health, capacity, idle, held, no_show, passed_over,
)
WITHOUT_STATION_FILTERS = tuple(each for each in IN_ORDER if each not in (isolation, model, tools, credentials))


# --- What the filters share ---------------------------------------------------------------

def _reasons(agent: Agent) -> tuple[str, ...]:
    return agent.verdict.reasons if agent.verdict is not None else ()


def _station_verdict(name: str, lacking: Callable[..., tuple[str, ...]], agent: Agent, ground: Ground) -> FilterResult:
    if ground.stations is None:
        return UNCHECKED[name]
    station = ground.stations.get(agent.station_id) if agent.station_id is not None else None
    missing = lacking(ground.needs, station, ground.min_proof_rank)
    return FilterResult(name, False, REASON_CODES[name], missing) if missing else PASSED[name]


def policy_refusal(verdict: PolicyVerdict) -> str | None:
    """Why a policy verdict refuses the agent (`limit:…` or `policy-denied`), or None.

    Accounts cannot count SuperDispatch's holds, so a limit is judged here by our own count,
    and a refusal that gives the limit as its only reason is ours to overrule.
    """
    limit_reasons = [reason for reason in verdict.reasons if reason.startswith(LIMIT_PREFIX)]
    if verdict.limit_max_runs is None:
        refused = not verdict.allow
    elif verdict.holds_in_window >= verdict.limit_max_runs:
        return limit_reasons[0] if limit_reasons else LIMIT_PREFIX + "max-runs"
    else:
        refused = not verdict.allow and len(limit_reasons) < max(len(verdict.reasons), 1)
    return "policy-denied" if refused else None


def policy_record(agent: Agent, ground: Ground) -> PolicyRecord | None:
    """The verdict as recorded on the candidate, when the policy was asked and answered."""
    if ground.policy is None:
        return None
    verdict = ground.policy.verdicts.get(agent.agent_id)
    if verdict is None:
        return None
    refusal = policy_refusal(verdict)
    reasons = verdict.reasons
    if refusal is not None and refusal not in reasons and refusal != "policy-denied":
        reasons = (*reasons, refusal)
    return PolicyRecord(allow=refusal is None, reasons=reasons, policy_version=verdict.policy_version)
