"""Every filter a candidate goes through, each declared once, and the framework that runs them.

A filter is one `Filter` declaration: its name as recorded, the reason codes it rejects
with, where it runs in the order, its tags, what it reads of the facts, and its function.
Everything else is derived from the declarations (`tables()`): the run order, the
reason-code table, the station filters, the load-only sets `why_nobody`, learned routing
and the suggestions read, and the admin's reason filter. Adding a filter is one
declaration, its function, and its read (plus the `Facts` field and the loop's read, if it
reads a fact nothing reads yet).

An agent outside the candidate set goes through the identity filter (`roster`) alone.
Every other candidate goes through all of them, so its record lists each thing that was
wrong, not just the first.

Each filter's read runs once per card, before any filter; a read several filters share (by
identity) runs once. Its function is given the card's pool of agents and what it read, and
returns its verdicts on the candidates it does not simply pass, each with the agents it is
given to. Working over the whole pool at once keeps a thousand candidates cheap: most
filters are a set operation, and most give one verdict to many agents.
"""
from __future__ import annotations

import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from types import MappingProxyType
from typing import Any, Callable, Iterable, Iterator, Mapping, NamedTuple

from .candidates import CAPABILITY_MISMATCH, Pool
from .facts import Facts, PolicyFacts, PolicyVerdict
from .rules import Rules
from .stations import PROOF_RANK, Lacking, agents_lacking

# SuperPipeline's eligibility reasons that have a filter of their own; any other is `not-claimable`.
GRANT_DENIED = "grant_denied"
CONCURRENCY_REACHED = "concurrency_reached"
NAMED_ELIGIBILITY_REASONS = frozenset({CAPABILITY_MISMATCH, GRANT_DENIED, CONCURRENCY_REACHED})

LIMIT_PREFIX = "limit:"


class Tag(StrEnum):
    """What a filter is, so each reader of the record can pick the filters it is about."""

    IDENTITY = "identity"  # who is in the candidate set: an agent outside it goes through this alone
    CAPABILITY = "capability"  # the agent has the capability the stage asks for
    STATION = "station"  # the agent's station has what the stage states it needs
    POLICY = "policy"  # the workspace's dispatch policy
    HEALTH = "health"  # ready to take a card; counts as load only while the agent has no room
    LOAD = "load"  # fails only for the work in hand, so it passes once that is done
    NO_ROOM = "no-room"  # a load filter that says the agent has no room for more work
    HOLD = "hold"  # a load filter that ends with a hold's window: the surest to pass by a later pass
    UNRELIABLE = "unreliable"  # turned away for how the agent has behaved: unwell, or letting holds lapse


class FilterResult(NamedTuple):
    """One filter's verdict on one candidate, as the decision records it."""

    filter: str
    passed: bool
    reason: str | None = None
    missing: tuple[str, ...] | None = None  # a station filter's: what the station lacks
    unchecked: bool = False  # passed unjudged: its fact was unread, or (policy) never asked for

    def to_record(self) -> dict[str, Any]:
        record: dict[str, Any] = {"filter": self.filter, "passed": self.passed}
        if self.reason is not None:
            record["reason"] = self.reason
        if self.missing is not None:
            record["missing"] = list(self.missing)
        if self.unchecked:
            record["unchecked"] = True
        return record


Verdicts = Iterable[tuple[FilterResult, Iterable[str]]]  # each verdict a filter gives, and to whom
Read = Callable[[Facts, Pool, Rules, datetime], Any]  # what a filter reads, once per card
Check = Callable[[Pool, Any], Verdicts]  # the filter: the pool and what it read, to its verdicts


class _Mark:
    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name


SKIP = _Mark("SKIP")  # a read's answer: the filter does not run for this card
UNREAD = _Mark("UNREAD")  # a read's answer: the fact could not be read; everyone passes, unchecked


@dataclass(frozen=True, slots=True, eq=False)
class Filter:
    """One filter, declared once. Its verdicts are made here once and shared by every decision."""

    name: str  # as recorded: each verdict's `filter`
    reasons: tuple[str, ...]  # the codes it rejects with; the first is the reason-code table's
    order: int  # where it runs: lower first
    tags: frozenset[Tag]
    reads: Read  # the fact it reads; a read that several filters share runs once per card
    check: Check
    passed: FilterResult = field(init=False)
    rejected: FilterResult = field(init=False)  # with its first reason code
    unchecked: FilterResult = field(init=False)

    def __post_init__(self) -> None:
        if not self.reasons:
            raise ValueError(f"filter {self.name} declares no reason code")
        object.__setattr__(self, "reasons", tuple(self.reasons))
        object.__setattr__(self, "tags", frozenset(Tag(tag) for tag in self.tags))
        object.__setattr__(self, "passed", FilterResult(self.name, True))
        object.__setattr__(self, "rejected", FilterResult(self.name, False, self.reasons[0]))
        object.__setattr__(self, "unchecked", FilterResult(self.name, True, unchecked=True))

    @property
    def reason(self) -> str:
        """The code it rejects with, as the reason-code table names it."""
        return self.reasons[0]

    def rejecting(self, agent_ids: Iterable[str]) -> Verdicts:
        """Its one verdict, rejecting these agents with its reason code."""
        return ((self.rejected, agent_ids),)

    def __repr__(self) -> str:
        return f"Filter({self.name!r})"


# --- The declarations, and what is derived from them ----------------------------------------

_declared: dict[str, Filter] = {}
_tables: Tables | None = None


# A name is recorded as is and a code is matched inside SQL text and admin addresses: keep
# both plain.
_NAME = re.compile(r"[a-z][A-Za-z0-9]*")
_CODE = re.compile(r"[a-z][a-z0-9:-]*")


def declare(declared: Filter) -> Filter:
    """Add a filter; every table derived from the declarations is worked out again."""
    global _tables
    if declared.name in _declared:
        raise ValueError(f"filter {declared.name} is already declared")
    if not _NAME.fullmatch(declared.name):
        raise ValueError(f"filter name {declared.name!r} is not camelCase letters and digits")
    for code in declared.reasons:
        if not _CODE.fullmatch(code):
            raise ValueError(f"filter {declared.name}: reason code {code!r} is not lowercase kebab-case")
    _declared[declared.name] = declared
    _tables = None
    return declared


def withdraw(declared: Filter) -> None:
    """Remove a declared filter (a test's own, when the test is done)."""
    global _tables
    if _declared.get(declared.name) is not declared:
        raise ValueError(f"filter {declared.name} is not declared")
    del _declared[declared.name]
    _tables = None


@contextmanager
def declared(*filters: Filter) -> Iterator[tuple[Filter, ...]]:
    """These filters declared for the length of the block, as if they were declared here."""
    added: list[Filter] = []
    try:
        for each in filters:
            added.append(declare(each))
        yield filters
    finally:
        for each in reversed(added):
            withdraw(each)


class Shape(NamedTuple):
    """Which filters run for a card and what a candidate every one of them passes is recorded with."""

    passing: tuple[FilterResult, ...]
    checks: tuple[tuple[int, Check, int], ...]  # each filter to call: its place, its check, its read's index


class Tables:
    """Everything derived from the declarations, worked out when they change and not before."""

    def __init__(self, declarations: Iterable[Filter]):
        in_order = tuple(sorted(declarations, key=lambda f: f.order))
        _check_declarations(in_order)
        self.in_order = in_order
        # The reason-code table: each filter and the code it rejects with, in the order they run.
        self.reason_codes: Mapping[str, str] = MappingProxyType({f.name: f.reason for f in in_order})
        # Every code any filter rejects with, and the filter that does.
        self.codes: Mapping[str, Filter] = MappingProxyType(
            {code: f for f in in_order for code in f.reasons})
        self.tagged: Mapping[Tag, tuple[Filter, ...]] = MappingProxyType(
            {tag: tuple(f for f in in_order if tag in f.tags) for tag in Tag})
        self._names = {tag: frozenset(f.name for f in tagged) for tag, tagged in self.tagged.items()}
        self._codes = {tag: tuple(code for f in tagged for code in f.reasons)
                       for tag, tagged in self.tagged.items()}
        self.station_filters = tuple(f.name for f in self.tagged[Tag.STATION])
        self.identity = self.tagged[Tag.IDENTITY][0]
        self.off_the_set = (self.identity.rejected,)
        reads: dict[Read, int] = {}
        for f in in_order:
            reads.setdefault(f.reads, len(reads))
        self.reads = tuple(reads)  # each distinct read once, in the order filters first need it
        self.read_at = tuple(reads[f.reads] for f in in_order)
        self._read_index = {f: reads[f.reads] for f in in_order}
        self._shapes: dict[tuple, Shape] = {}

    def names(self, tag: Tag) -> frozenset[str]:
        """The names of the filters with this tag."""
        return self._names[tag]

    def codes_of(self, tag: Tag) -> tuple[str, ...]:
        """Every reason code of the filters with this tag, in the order they run."""
        return self._codes[tag]

    def shape(self, marks: tuple) -> Shape:
        """The filters that run when the reads are marked so (SKIP, UNREAD or None), remembered."""
        shape = self._shapes.get(marks)
        if shape is None:
            passing, checks = [], []
            for f, at in zip(self.in_order, self.read_at):
                mark = marks[at]
                if mark is SKIP:
                    continue
                if mark is UNREAD:
                    passing.append(f.unchecked)
                else:
                    checks.append((len(passing), f.check, at))
                    passing.append(f.passed)
            shape = self._shapes[marks] = Shape(tuple(passing), tuple(checks))
        return shape

    def read_index(self, declared: Filter) -> int | None:
        return self._read_index.get(declared)


def _check_declarations(in_order: tuple[Filter, ...]) -> None:
    orders, codes = {}, {}
    for f in in_order:
        if f.order in orders:
            raise ValueError(f"filters {orders[f.order]} and {f.name} share order {f.order}")
        orders[f.order] = f.name
        for code in f.reasons:
            if code in codes:
                raise ValueError(f"filters {codes[code]} and {f.name} share reason code {code}")
            codes[code] = f.name
    identity = [f for f in in_order if Tag.IDENTITY in f.tags]
    if len(identity) != 1 or in_order[0] is not identity[0]:
        raise ValueError("exactly one filter is tagged identity, and it runs first")


def tables() -> Tables:
    """What the declarations give, worked out once until they change."""
    global _tables
    current = _tables
    if current is None:
        current = _tables = Tables(_declared.values())
    return current


def __getattr__(name: str) -> Any:
    # The derived tables by their names, always as the declarations stand now. Read them as
    # `filters.REASON_CODES` (or through `tables()`), so a filter declared later is seen.
    if name == "IN_ORDER":
        return tables().in_order
    if name == "REASON_CODES":
        return tables().reason_codes
    if name == "STATION_FILTERS":
        return tables().station_filters
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --- Running them -----------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Ground:
    """The filters that run for this card, and what each of them read."""

    passing: tuple[FilterResult, ...]  # the record of a candidate every filter simply passed
    checks: tuple[tuple[int, Check, int], ...]  # each filter to call: its place, check, read's index
    read: list[Any]  # what each distinct read gave, by its index
    off_the_set: tuple[FilterResult, ...]  # the record of an agent outside the candidate set
    tables: Tables

    def read_of(self, declared: Filter) -> Any:
        """What a filter read for this card; None when it was not declared, did not run or read nothing."""
        at = self.tables.read_index(declared)
        if at is None:
            return None
        value = self.read[at]
        return None if value is SKIP or value is UNREAD else value


def ground_for(facts: Facts, pool: Pool, rules: Rules, now: datetime) -> Ground:
    """Every filter's read for this card, each read once, and so which filters run.

    A filter whose read says SKIP does not run; one whose fact could not be read (UNREAD)
    passes everyone, marked unchecked.
    """
    t = tables()
    read = [each(facts, pool, rules, now) for each in t.reads]
    shape = t.shape(tuple(value if value is SKIP or value is UNREAD else None for value in read))
    return Ground(shape.passing, shape.checks, read, t.off_the_set, t)


class Filtered(NamedTuple):
    """Every in-set agent's verdicts in filter order, and who passed them all. An agent outside
    the candidate set has the identity filter's rejection alone (`Ground.off_the_set`)."""

    verdicts: dict[str, tuple[FilterResult, ...]]  # the in-set agents, in agent id order
    eligible: list[str]  # in agent id order


def run_filters(pool: Pool, ground: Ground) -> Filtered:
    """Run every filter in order over the candidate set; an agent outside it goes through the
    identity filter alone, and is not visited here (a workspace has thousands of them).

    Each verdict a filter gives is one bit, so an agent's verdicts are the bits it gathers,
    and agents singled out alike share one tuple of verdicts.
    """
    passing, in_set, read = ground.passing, pool.in_set, ground.read
    given: list[tuple[int, FilterResult]] = []  # each verdict given, with its filter's place
    failing = 0  # the bits of the verdicts that reject
    # The station filters give their verdicts to the very same groups of agents, so each
    # group gathers its bits before its agents do. Every group is kept, so no id is reused.
    groups: dict[int, list] = {}  # by the id of a group of agents: the group and its bits
    for place, check, at in ground.checks:
        for result, agent_ids in check(pool, read[at]):
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
    for agent_id in sorted(in_set):
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


# --- What the filters read --------------------------------------------------------------------

def _candidate_set(facts: Facts, pool: Pool, rules: Rules, now: datetime) -> frozenset[str]:
    """Facts.roster's enabled rows, and with `all` the agents Facts.load reports."""
    return pool.in_set


def _eligibility(facts: Facts, pool: Pool, rules: Rules, now: datetime) -> dict:
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
    """Facts.own.holding: agents with a live hold on another card."""
    return facts.own.holding


class RecentLapses(NamedTuple):
    lapses: Mapping[str, tuple[datetime, ...]]  # by agent id
    since: datetime  # a lapse at or before this has aged out
    count: int  # this many lapses in the window shut the agent out


def _recent_lapses(facts: Facts, pool: Pool, rules: Rules, now: datetime) -> RecentLapses:
    """Facts.own.lapses, and the no-show window and count of the rules."""
    return RecentLapses(facts.own.lapses, now - timedelta(seconds=rules.no_show_window_s), rules.no_show_count)


def _passed_over(facts: Facts, pool: Pool, rules: Rules, now: datetime) -> frozenset[str]:
    """Facts.ladder.passed_over: agents whose hold on this card lapsed on its current ladder."""
    return facts.ladder.passed_over


# --- The filters, in the order they run ---------------------------------------------------------

def roster(pool: Pool, in_set: frozenset[str]) -> Verdicts:
    """In the candidate set: an enabled bridge row, or (with `all`) reporting its load.

    Every candidate passes; an agent outside the set goes through this filter alone.
    """
    return ()


ROSTER = declare(Filter("roster", ("not-on-roster",), 10, {Tag.IDENTITY}, _candidate_set, roster))


def capability(pool: Pool, objections: dict) -> Verdicts:
    """SuperPipeline finds the stage's capability on the agent (no `capability_mismatch`)."""
    return CAPABILITY.rejecting(_objected_for(CAPABILITY_MISMATCH, objections))


CAPABILITY = declare(Filter("capability", ("capability-missing",), 20, {Tag.CAPABILITY}, _eligibility,
                            capability))


def grant(pool: Pool, objections: dict) -> Verdicts:
    """The card's dispatch grant covers the agent (no `grant_denied`)."""
    return GRANT.rejecting(_objected_for(GRANT_DENIED, objections))


GRANT = declare(Filter("grant", ("grant-denied",), 30, (), _eligibility, grant))


def claimable(pool: Pool, objections: dict) -> Verdicts:
    """SuperPipeline would let it claim, for every reason without a filter of its own.

    Missing from the eligibility read, ineligible with no reason, or any other reason,
    including one a later SuperPipeline adds: not claimable.
    """
    unjudged = [agent_id for agent_id in pool.in_set if agent_id not in pool.verdicts]
    refused = (
        agent_id for agent_id, verdict in objections.items()
        if not verdict.reasons or not NAMED_ELIGIBILITY_REASONS.issuperset(verdict.reasons)
    )
    return CLAIMABLE.rejecting((*unjudged, *refused))


CLAIMABLE = declare(Filter("claimable", ("not-claimable",), 40, (), _eligibility, claimable))


def isolation(pool: Pool, lacking: Mapping[Lacking, list[str]]) -> Verdicts:
    """The station is isolated at least as strongly as the stage asks."""
    return _station_rejections(ISOLATION, ((lacks.isolation, ids) for lacks, ids in lacking.items()))


ISOLATION = declare(Filter("isolation", ("isolation-too-weak",), 50, {Tag.STATION}, _station_lacking,
                           isolation))


def model(pool: Pool, lacking: Mapping[Lacking, list[str]]) -> Verdicts:
    """The station runs one of the models the stage asks for."""
    return _station_rejections(MODEL, ((lacks.model, ids) for lacks, ids in lacking.items()))


MODEL = declare(Filter("model", ("model-mismatch",), 60, {Tag.STATION}, _station_lacking, model))


def tools(pool: Pool, lacking: Mapping[Lacking, list[str]]) -> Verdicts:
    """The station has every tool the stage asks for."""
    return _station_rejections(TOOLS, ((lacks.tools, ids) for lacks, ids in lacking.items()))


TOOLS = declare(Filter("tools", ("tool-missing",), 70, {Tag.STATION}, _station_lacking, tools))


def credentials(pool: Pool, lacking: Mapping[Lacking, list[str]]) -> Verdicts:
    """The station reaches every credential name the stage asks for."""
    return _station_rejections(CREDENTIALS, ((lacks.credentials, ids) for lacks, ids in lacking.items()))


CREDENTIALS = declare(Filter("credentials", ("credential-missing",), 80, {Tag.STATION}, _station_lacking,
                             credentials))


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
    return [(POLICY.unchecked, unchecked),
            *((FilterResult(POLICY.name, False, why), agent_ids) for why, agent_ids in refused.items())]


POLICY_DENIED, POLICY_UNREAD, NO_PRINCIPAL = "policy-denied", "policy-unread", "no-principal"
# Besides these, a refusal by a limit is recorded with the limit's own reason (`limit:…`).
POLICY = declare(Filter("policy", (POLICY_DENIED, POLICY_UNREAD, NO_PRINCIPAL), 90, {Tag.POLICY}, _policy,
                        policy))


def health(pool: Pool, unhealthy: frozenset[str]) -> Verdicts:
    """Healthy by its load shape: ready to take a card held for it."""
    return HEALTH.rejecting(unhealthy)


HEALTH = declare(Filter("health", ("unhealthy",), 100, {Tag.HEALTH, Tag.UNRELIABLE}, _unhealthy, health))


def capacity(pool: Pool, objections: dict) -> Verdicts:
    """Under its board's concurrency (no `concurrency_reached`)."""
    return CAPACITY.rejecting(_objected_for(CONCURRENCY_REACHED, objections))


CAPACITY = declare(Filter("capacity", ("at-capacity",), 110, {Tag.LOAD, Tag.NO_ROOM}, _eligibility, capacity))


def idle(pool: Pool, full: frozenset[str]) -> Verdicts:
    """Less in hand than its capacity, anywhere in the workspace."""
    return IDLE.rejecting(full)


IDLE = declare(Filter("idle", ("not-idle",), 120, {Tag.LOAD, Tag.NO_ROOM}, _full, idle))


def held(pool: Pool, holding: frozenset[str]) -> Verdicts:
    """Holds no other card now: one live hold per agent."""
    return HELD.rejecting(pool.in_set & holding)


HELD = declare(Filter("held", ("holding-another",), 130, {Tag.LOAD, Tag.HOLD}, _holding, held))


def no_show(pool: Pool, recent: RecentLapses) -> Verdicts:
    """Fewer than two unclaimed lapses, on any cards, in the window before now.

    A lapse exactly the window old has aged out.
    """
    since, count, in_set = recent.since, recent.count, pool.in_set
    return NO_SHOW.rejecting(
        agent_id for agent_id, lapses in recent.lapses.items()
        if agent_id in in_set and sum(1 for lapsed_at in lapses if lapsed_at > since) >= count
    )


NO_SHOW = declare(Filter("noShow", ("recently-no-show",), 140, {Tag.UNRELIABLE}, _recent_lapses, no_show))


def passed_over(pool: Pool, passed: frozenset[str]) -> Verdicts:
    """Its hold on this card has not already lapsed on the card's current ladder (by identity)."""
    return PASSED_OVER.rejecting(pool.in_set & passed)


PASSED_OVER = declare(Filter("passedOver", ("passed-over",), 150, (), _passed_over, passed_over))


# --- What the filters share ---------------------------------------------------------------

def _objected_for(reason: str, objections: dict) -> Iterable[str]:
    return (agent_id for agent_id, verdict in objections.items() if reason in verdict.reasons)


def _reasons(pool: Pool, agent_id: str) -> tuple[str, ...]:
    verdict = pool.verdicts.get(agent_id)
    return verdict.reasons if verdict is not None else ()


def _station_rejections(declared: Filter, lacked: Iterable[tuple[tuple[str, ...], list[str]]]) -> Verdicts:
    return [(FilterResult(declared.name, False, declared.reason, missing), agent_ids)
            for missing, agent_ids in lacked if missing]


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
