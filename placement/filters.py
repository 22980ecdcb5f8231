"""Every filter a candidate goes through, each declared once, in the order they run.

Each filter is one `Filter` declaration (`filtering.py`), beside its function and above it the
read it shares with others. Adding a filter is one declaration, its function, and its read
(plus the `Facts` field and the loop's read, if it reads a fact nothing reads yet); every
table of filters is derived from the declarations.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Iterable, Mapping, NamedTuple

from .candidates import CAPABILITY_MISMATCH, Pool
from .dispatch_policy import NO_PRINCIPAL, POLICY_DENIED, POLICY_UNREAD, PolicyAnswers, policy_answers
from .facts import Facts, Verdict
from .filtering import SKIP, UNREAD, Filter, FilterResult, Tag, Verdicts, declare
from .rules import Rules
from .stations import PROOF_RANK, Lacking, agents_lacking

# SuperPipeline's eligibility reasons that have a filter of their own; any other is `not-claimable`.
GRANT_DENIED = "grant_denied"
CONCURRENCY_REACHED = "concurrency_reached"
NAMED_ELIGIBILITY_REASONS = frozenset({CAPABILITY_MISMATCH, GRANT_DENIED, CONCURRENCY_REACHED})


# --- What the filters read --------------------------------------------------------------------


def _candidate_set(facts: Facts, pool: Pool, rules: Rules, now: datetime) -> frozenset[str]:
    """Facts.roster's enabled rows, and with `all` the agents Facts.load reports."""
    return pool.in_set


def _eligibility(facts: Facts, pool: Pool, rules: Rules, now: datetime) -> dict[str, Verdict]:
    """Facts.eligibility: SuperPipeline's verdicts on in-set agents that are not a plain "eligible"."""
    return pool.objections


def _station_lacking(facts: Facts, pool: Pool, rules: Rules, now: datetime) -> Any:
    """Facts.registry against the card's needs: in-set agents whose station lacks anything, by what.

    The station filters run only for a stage that states a need, with station filters on;
    when the registry was not read they pass everyone, marked unchecked.
    """
    needs = facts.card.needs
    if not (rules.station_filters and needs is not None and needs.states_anything):
        return SKIP
    if facts.registry is None:
        return UNREAD
    return agents_lacking(needs, facts.registry, pool.in_set, pool.stations, PROOF_RANK[rules.min_proof])


def _policy(facts: Facts, pool: Pool, rules: Rules, now: datetime) -> PolicyAnswers | None:
    """Facts.policy, read once for the filter and the record; None: policy off."""
    return policy_answers(pool.in_set, facts.policy) if facts.policy is not None else None


def _unhealthy(facts: Facts, pool: Pool, rules: Rules, now: datetime) -> frozenset[str]:
    """The load shape (Facts.roster, or Facts.load with `all`): in-set agents not healthy."""
    return pool.unhealthy


def _full(facts: Facts, pool: Pool, rules: Rules, now: datetime) -> frozenset[str]:
    """The load shape: in-set agents with no less in hand than their capacity."""
    return pool.full


def _holding(facts: Facts, pool: Pool, rules: Rules, now: datetime) -> frozenset[str]:
    """Facts.holds.holding: agents with a live hold on another card."""
    return facts.holds.holding


class RecentLapses(NamedTuple):
    lapses: Mapping[str, tuple[datetime, ...]]  # by agent id
    since: datetime  # a lapse at or before this has aged out
    shut_out_at: int  # this many lapses in the window shut the agent out


def _recent_lapses(facts: Facts, pool: Pool, rules: Rules, now: datetime) -> RecentLapses:
    """Facts.holds.lapses, and the no-show window and count of the rules."""
    return RecentLapses(
        facts.holds.lapses, now - timedelta(seconds=rules.no_show_window_s), rules.no_show_count
    )


def _passed_over(facts: Facts, pool: Pool, rules: Rules, now: datetime) -> frozenset[str]:
    """Facts.ladder.passed_over: agents whose hold on this card lapsed on its current ladder."""
    return facts.ladder.passed_over


# --- The filters, in the order they run ---------------------------------------------------------


def roster(pool: Pool, in_set: frozenset[str]) -> Verdicts:
    """In the candidate set: an enabled bridge row, or (with `all`) reporting its load.

    Every candidate passes; an agent outside the set goes through this filter alone.
    """
    return ()


ROSTER = declare(
    Filter(
        "roster",
        ("not-on-roster",),
        10,
        frozenset({Tag.IDENTITY}),
        _candidate_set,
        roster,
        words=("not on the roster",),
    )
)


def capability(pool: Pool, objections: dict[str, Verdict]) -> Verdicts:
    """SuperPipeline finds the stage's capability on the agent (no `capability_mismatch`)."""
    return CAPABILITY.rejecting(_objected_for(CAPABILITY_MISMATCH, objections))


CAPABILITY = declare(
    Filter(
        "capability",
        ("capability-missing",),
        20,
        frozenset({Tag.CAPABILITY}),
        _eligibility,
        capability,
        words=("lacks the capability",),
    )
)


def grant(pool: Pool, objections: dict[str, Verdict]) -> Verdicts:
    """The card's dispatch grant covers the agent (no `grant_denied`)."""
    return GRANT.rejecting(_objected_for(GRANT_DENIED, objections))


GRANT = declare(
    Filter("grant", ("grant-denied",), 30, frozenset(), _eligibility, grant, words=("has no grant",))
)


def claimable(pool: Pool, objections: dict[str, Verdict]) -> Verdicts:
    """SuperPipeline would let it claim, for every reason without a filter of its own.

    Missing from the eligibility read, ineligible with no reason, or any other reason,
    including one a later SuperPipeline adds: not claimable.
    """
    unjudged = pool.in_set.difference(pool.verdicts)
    refused = (
        agent_id
        for agent_id, verdict in objections.items()
        if not verdict.reasons or not NAMED_ELIGIBILITY_REASONS.issuperset(verdict.reasons)
    )
    return CLAIMABLE.rejecting((*unjudged, *refused))


CLAIMABLE = declare(
    Filter(
        "claimable",
        ("not-claimable",),
        40,
        frozenset(),
        _eligibility,
        claimable,
        words=("could not claim the card",),
    )
)


def isolation(pool: Pool, lacking: Mapping[Lacking, list[str]]) -> Verdicts:
    """The station is isolated at least as strongly as the stage asks."""
    return _station_rejections(ISOLATION, ((lacks.isolation, ids) for lacks, ids in lacking.items()))


ISOLATION = declare(
    Filter(
        "isolation",
        ("isolation-too-weak",),
        50,
        frozenset({Tag.STATION}),
        _station_lacking,
        isolation,
        words=("its station's isolation is too weak",),
    )
)


def model(pool: Pool, lacking: Mapping[Lacking, list[str]]) -> Verdicts:
    """The station runs one of the models the stage asks for."""
    return _station_rejections(MODEL, ((lacks.model, ids) for lacks, ids in lacking.items()))


MODEL = declare(
    Filter(
        "model",
        ("model-mismatch",),
        60,
        frozenset({Tag.STATION}),
        _station_lacking,
        model,
        words=("its station lacks the model",),
    )
)


def tools(pool: Pool, lacking: Mapping[Lacking, list[str]]) -> Verdicts:
    """The station has every tool the stage asks for."""
    return _station_rejections(TOOLS, ((lacks.tools, ids) for lacks, ids in lacking.items()))


TOOLS = declare(
    Filter(
        "tools",
        ("tool-missing",),
        70,
        frozenset({Tag.STATION}),
        _station_lacking,
        tools,
        words=("its station lacks a tool",),
    )
)


def credentials(pool: Pool, lacking: Mapping[Lacking, list[str]]) -> Verdicts:
    """The station reaches every credential name the stage asks for."""
    return _station_rejections(CREDENTIALS, ((lacks.credentials, ids) for lacks, ids in lacking.items()))


CREDENTIALS = declare(
    Filter(
        "credentials",
        ("credential-missing",),
        80,
        frozenset({Tag.STATION}),
        _station_lacking,
        credentials,
        words=("its station lacks a credential",),
    )
)


def policy(pool: Pool, answers: PolicyAnswers | None) -> Verdicts:
    """The workspace's dispatch policy lets the agent take this work; it fails closed.

    Off: everyone passes. Unanswered, or no principal to ask about: passes only when the
    last answer said the workspace has no policy. An agent SuperPipeline refuses on the
    grant is never asked, so its policy is unchecked.
    """
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
            unasked = NO_PRINCIPAL if pool.principal(agent_id) is None else POLICY_UNREAD
            refused.setdefault(unasked, []).append(agent_id)
    return [
        (POLICY.unchecked, unchecked),
        *((FilterResult(POLICY.name, False, why), agent_ids) for why, agent_ids in refused.items()),
    ]


POLICY = declare(
    Filter(
        "policy",
        (POLICY_DENIED, POLICY_UNREAD, NO_PRINCIPAL),
        90,
        frozenset({Tag.POLICY}),
        _policy,
        policy,
        words=(
            "the dispatch policy denied it",
            "the dispatch policy could not be read",
            "no principal for the dispatch policy to judge",
        ),
    )
)


def health(pool: Pool, unhealthy: frozenset[str]) -> Verdicts:
    """Healthy by its load shape: ready to take a card held for it."""
    return HEALTH.rejecting(unhealthy)


HEALTH = declare(
    Filter(
        "health",
        ("unhealthy",),
        100,
        frozenset({Tag.HEALTH, Tag.UNRELIABLE}),
        _unhealthy,
        health,
        words=("unhealthy",),
    )
)


def capacity(pool: Pool, objections: dict[str, Verdict]) -> Verdicts:
    """Under its board's concurrency (no `concurrency_reached`)."""
    return CAPACITY.rejecting(_objected_for(CONCURRENCY_REACHED, objections))


CAPACITY = declare(
    Filter(
        "capacity",
        ("at-capacity",),
        110,
        frozenset({Tag.LOAD, Tag.NO_ROOM, Tag.PULL_MAY_CLAIM}),
        _eligibility,
        capacity,
        words=("at capacity",),
    )
)


def idle(pool: Pool, full: frozenset[str]) -> Verdicts:
    """Less in hand than its capacity, anywhere in the workspace."""
    return IDLE.rejecting(full)


IDLE = declare(
    Filter(
        "idle",
        ("not-idle",),
        120,
        frozenset({Tag.LOAD, Tag.NO_ROOM, Tag.PULL_MAY_CLAIM}),
        _full,
        idle,
        words=("not idle",),
    )
)


def held(pool: Pool, holding: frozenset[str]) -> Verdicts:
    """Holds no other card now: one live hold per agent."""
    return HELD.rejecting(pool.in_set & holding)


HELD = declare(
    Filter(
        "held",
        ("holding-another",),
        130,
        frozenset({Tag.LOAD, Tag.HOLD, Tag.PULL_MAY_CLAIM}),
        _holding,
        held,
        words=("holding another card",),
    )
)


def no_show(pool: Pool, recent: RecentLapses) -> Verdicts:
    """Fewer than two unclaimed lapses, on any cards, in the window before now.

    A lapse exactly the window old has aged out.
    """
    since, shut_out_at, in_set = recent.since, recent.shut_out_at, pool.in_set
    return NO_SHOW.rejecting(
        agent_id
        for agent_id, lapses in recent.lapses.items()
        if agent_id in in_set and sum(1 for lapsed_at in lapses if lapsed_at > since) >= shut_out_at
    )


NO_SHOW = declare(
    Filter(
        "noShow",
        ("recently-no-show",),
        140,
        frozenset({Tag.UNRELIABLE, Tag.PULL_MAY_CLAIM}),
        _recent_lapses,
        no_show,
        words=("a recent no-show",),
    )
)


def passed_over(pool: Pool, passed: frozenset[str]) -> Verdicts:
    """Its hold on this card has not already lapsed on the card's current ladder (by identity)."""
    return PASSED_OVER.rejecting(pool.in_set & passed)


PASSED_OVER = declare(
    Filter(
        "passedOver",
        ("passed-over",),
        150,
        frozenset({Tag.PULL_MAY_CLAIM}),
        _passed_over,
        passed_over,
        words=("already passed over on this card's ladder",),
    )
)


# --- What the filters share ---------------------------------------------------------------


def _objected_for(reason: str, objections: dict[str, Verdict]) -> Iterable[str]:
    return (agent_id for agent_id, verdict in objections.items() if reason in verdict.reasons)


def _reasons(pool: Pool, agent_id: str) -> tuple[str, ...]:
    verdict = pool.verdicts.get(agent_id)
    return verdict.reasons if verdict is not None else ()


def _station_rejections(declared: Filter, lacked: Iterable[tuple[tuple[str, ...], list[str]]]) -> Verdicts:
    return [
        (FilterResult(declared.name, False, declared.reason, missing), agent_ids)
        for missing, agent_ids in lacked
        if missing
    ]
