"""Every filter a candidate goes through, in the order they run, and the reason each rejects with.

An agent outside the candidate set goes through `roster` alone. Every other candidate goes
through all of them, so its record lists each thing that was wrong, not just the first.

Each filter is a small function of the card's pool of agents and the pass's facts that
returns its verdicts on the candidates it does not simply pass, each with the agents it is
given to. Working over the whole pool at once keeps a thousand candidates cheap: most
filters are a set operation, and most give one verdict to many agents.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Callable, Iterable, Mapping, NamedTuple

from .candidates import CAPABILITY_MISMATCH, Pool
from .facts import Facts, PolicyFacts, PolicyVerdict
from .rules import Rules
from .stations import PROOF_RANK, Lacking, agents_lacking

# SuperPipeline's eligibility reasons that have a filter of their own; any other is `not-claimable`.
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


class FilterResult(NamedTuple):
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
OFF_THE_SET = (REJECTED["roster"],)

Verdicts = Iterable[tuple[FilterResult, Iterable[str]]]  # each verdict a filter gives, and to whom


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


@dataclass(frozen=True, slots=True)
class Ground:
    """What the filters read besides the pool: the card's needs and this pass's facts."""

    filters: tuple[tuple[str, Callable[[Pool, "Ground"], Verdicts]], ...]
    passing: tuple[FilterResult, ...]  # the record of a candidate every filter simply passed
    lacking: Mapping[Lacking, list[str]] | None  # agents whose station lacks anything, by what; None: unchecked
    policy: PolicyAnswers | None  # None: policy off
    holding: frozenset[str]
    lapses: Mapping[str, tuple[datetime, ...]]
    no_show_since: datetime  # a lapse at or before this has aged out
    no_show_count: int
    passed_over: frozenset[str]


def ground_for(facts: Facts, pool: Pool, rules: Rules, now: datetime) -> Ground:
    """The filters to run for this card, in order, and everything they read.

    The station filters run only for a stage that states a need, with station filters on;
    when the registry was not read they pass everyone, marked unchecked.
    """
    needs = facts.card.needs
    stations_run = rules.station_filters and needs is not None and needs.states_anything
    filters = IN_ORDER if stations_run else tuple(f for f in IN_ORDER if f[0] not in STATION_FILTERS)
    unchecked = stations_run and facts.registry is None
    lacking = None
    if stations_run and facts.registry is not None:
        lacking = agents_lacking(needs, facts.registry, pool.in_set, pool.stations,  # type: ignore[arg-type]
                                 PROOF_RANK[rules.min_proof])
    return Ground(
        filters=filters,
        passing=tuple(UNCHECKED[name] if unchecked and name in STATION_FILTERS else PASSED[name]
                      for name, _ in filters),
        lacking=lacking,
        policy=policy_answers(pool.in_set, facts.policy) if facts.policy is not None else None,
        holding=facts.own.holding,
        lapses=facts.own.lapses,
        no_show_since=now - timedelta(seconds=rules.no_show_window_s),
        no_show_count=rules.no_show_count,
        passed_over=facts.ladder.passed_over,
    )


class Filtered(NamedTuple):
    """Every considered agent's verdicts in filter order, and who passed them all."""

    verdicts: dict[str, tuple[FilterResult, ...]]  # in agent id order
    eligible: list[str]  # in agent id order


def run_filters(pool: Pool, ground: Ground) -> Filtered:
    """Run every filter in order; an agent outside the candidate set goes through `roster` alone.

    Each verdict a filter gives is one bit, so an agent's verdicts are the bits it gathers,
    and agents singled out alike share one tuple of verdicts.
    """
    passing, in_set = ground.passing, pool.in_set
    given: list[tuple[int, FilterResult]] = []  # each verdict given, with its filter's place
    failing = 0  # the bits of the verdicts that reject
    # The station filters give their verdicts to the very same groups of agents, so each
    # group gathers its bits before its agents do. Every group is kept, so no id is reused.
    groups: dict[int, list] = {}  # by the id of a group of agents: the group and its bits
    for place, (_, check) in enumerate(ground.filters):
        for result, agent_ids in check(pool, ground):
            bit = 1 << len(given)
            given.append((place, result))
            if not result.passed:
                failing |= bit
            group = groups.get(id(agent_ids))
            if group is None:
                groups[id(agent_ids)] = [agent_ids, bit]
            else:
                group[1] |= bit
    gathered: dict[str, int] = {}  # by agent id: the bits of the verdicts given to it
    bits_of = gathered.get
    for agent_ids, bits in groups.values():
        for agent_id in agent_ids:
            gathered[agent_id] = bits_of(agent_id, 0) | bits
    alike: dict[int, tuple[FilterResult, ...]] = {0: passing}
    verdicts: dict[str, tuple[FilterResult, ...]] = {}
    eligible = []
    for agent_id in pool.ids:
        if agent_id not in in_set:
            verdicts[agent_id] = OFF_THE_SET
            continue
        bits = gathered.get(agent_id, 0)
        results = alike.get(bits)
        if results is None:
            results = alike[bits] = _with_verdicts(passing, given, bits)
        verdicts[agent_id] = results
        if not bits & failing:
            eligible.append(agent_id)
    return Filtered(verdicts, eligible)


def _with_verdicts(passing: tuple[FilterResult, ...], given: list[tuple[int, FilterResult]],
                   bits: int) -> tuple[FilterResult, ...]:
    results = list(passing)
    while bits:
        place, result = given[(bits & -bits).bit_length() - 1]  # the lowest bit left
        results[place] = result
        bits &= bits - 1
    return tuple(results)


# --- The filters, in the order they run ---------------------------------------------------

def roster(pool: Pool, ground: Ground) -> Verdicts:
    """In the candidate set: an enabled bridge row, or (with `all`) reporting its load.

    Every candidate passes; an agent outside the set goes through this filter alone.
    """
    return ()


def capability(pool: Pool, ground: Ground) -> Verdicts:
    """SuperPipeline finds the stage's capability on the agent (no `capability_mismatch`)."""
    return _rejecting("capability", _objected_for(CAPABILITY_MISMATCH, pool))


def grant(pool: Pool, ground: Ground) -> Verdicts:
    """The card's dispatch grant covers the agent (no `grant_denied`)."""
    return _rejecting("grant", _objected_for(GRANT_DENIED, pool))


def claimable(pool: Pool, ground: Ground) -> Verdicts:
    """SuperPipeline would let it claim, for every reason without a filter of its own.

    Missing from the eligibility read, ineligible with no reason, or any other reason,
    including one a later SuperPipeline adds: not claimable.
    """
    unjudged = pool.in_set - pool.verdicts.keys()
    refused = (
        agent_id for agent_id, verdict in pool.objections.items()
        if not verdict.reasons or not NAMED_ELIGIBILITY_REASONS.issuperset(verdict.reasons)
    )
    return _rejecting("claimable", (*unjudged, *refused))


def isolation(pool: Pool, ground: Ground) -> Verdicts:
    """The station is isolated at least as strongly as the stage asks."""
    return _station_rejections("isolation", ground)


def model(pool: Pool, ground: Ground) -> Verdicts:
    """The station runs one of the models the stage asks for."""
    return _station_rejections("model", ground)


def tools(pool: Pool, ground: Ground) -> Verdicts:
    """The station has every tool the stage asks for."""
    return _station_rejections("tools", ground)


def credentials(pool: Pool, ground: Ground) -> Verdicts:
    """The station reaches every credential name the stage asks for."""
    return _station_rejections("credentials", ground)


def policy(pool: Pool, ground: Ground) -> Verdicts:
    """The workspace's dispatch policy lets the agent take this work; it fails closed.

    Off: everyone passes. Unanswered, or no principal to ask about: passes only when the
    last answer said the workspace has no policy. An agent SuperPipeline refuses on the
    grant is never asked, so its policy is unchecked.
    """
    answers = ground.policy
    if answers is None:
        return ()
    refused: dict[str, list[str]] = {}  # by why
    for agent_id, refusal in answers.refusals.items():
        refused.setdefault(refusal, []).append(agent_id)
    unchecked = []
    for agent_id in answers.unanswered:
        if GRANT_DENIED in _reasons(pool, agent_id):
            unchecked.append(agent_id)
        elif not answers.no_policy:
            unasked = "no-principal" if pool.principal(agent_id) is None else "policy-unread"
            refused.setdefault(unasked, []).append(agent_id)
    return [(UNCHECKED["policy"], unchecked),
            *((FilterResult("policy", False, why), agent_ids) for why, agent_ids in refused.items())]


def health(pool: Pool, ground: Ground) -> Verdicts:
    """Healthy by its load shape: ready to take a card held for it."""
    return _rejecting("health", pool.unhealthy)


def capacity(pool: Pool, ground: Ground) -> Verdicts:
    """Under its board's concurrency (no `concurrency_reached`)."""
    return _rejecting("capacity", _objected_for(CONCURRENCY_REACHED, pool))


def idle(pool: Pool, ground: Ground) -> Verdicts:
    """Less in hand than its capacity, anywhere in the workspace."""
    return _rejecting("idle", pool.full)


def held(pool: Pool, ground: Ground) -> Verdicts:
    """Holds no other card now: one live hold per agent."""
    return _rejecting("held", pool.in_set & ground.holding)


def no_show(pool: Pool, ground: Ground) -> Verdicts:
    """Fewer than two unclaimed lapses, on any cards, in the window before now.

    A lapse exactly the window old has aged out.
    """
    return _rejecting("noShow", (
        agent_id for agent_id, lapses in ground.lapses.items()
        if agent_id in pool.in_set
        and sum(1 for lapsed_at in lapses if lapsed_at > ground.no_show_since) >= ground.no_show_count
    ))


def passed_over(pool: Pool, ground: Ground) -> Verdicts:
    """Its hold on this card has not already lapsed on the card's current ladder (by identity)."""
    return _rejecting("passedOver", pool.in_set & ground.passed_over)


IN_ORDER = (
    ("roster", roster), ("capability", capability), ("grant", grant), ("claimable", claimable),
    ("isolation", isolation), ("model", model), ("tools", tools), ("credentials", credentials),
    ("policy", policy), ("health", health), ("capacity", capacity), ("idle", idle), ("held", held),
    ("noShow", no_show), ("passedOver", passed_over),
)


# --- What the filters share ---------------------------------------------------------------

def _rejecting(name: str, agent_ids: Iterable[str]) -> Verdicts:
    return ((REJECTED[name], agent_ids),)


def _objected_for(reason: str, pool: Pool) -> Iterable[str]:
    return (agent_id for agent_id, verdict in pool.objections.items() if reason in verdict.reasons)


def _reasons(pool: Pool, agent_id: str) -> tuple[str, ...]:
    verdict = pool.verdicts.get(agent_id)
    return verdict.reasons if verdict is not None else ()


def _station_rejections(name: str, ground: Ground) -> Verdicts:
    if ground.lacking is None:
        return ()  # unchecked: `ground.passing` already says so
    need = STATION_FILTERS.index(name)
    return [(FilterResult(name, False, REASON_CODES[name], lacks[need]), agent_ids)
            for lacks, agent_ids in ground.lacking.items() if lacks[need]]


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
    return "policy-denied" if refused else None


def policy_answers(in_set: Iterable[str], facts: PolicyFacts) -> PolicyAnswers:
    """Whom the policy refuses and why, and each candidate's verdict as recorded.

    Candidates the policy answered alike share one record.
    """
    answered = facts.verdicts
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
            recorded = (True, verdict.reasons, verdict.policy_version)  # the common answer, kept quick
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
