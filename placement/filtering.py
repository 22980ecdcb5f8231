"""The filter framework: what a filter is, how one is declared, and how they are run.

A filter is one `Filter` declaration (the declarations themselves are in `filters.py`): its
name as recorded, the reason codes it rejects with, where it runs in the order, its tags, what
it reads of the facts, and its function. Everything else is derived from the declarations
(`tables()`): the run order, the reason-code table, the station filters, the tagged sets
`why_nobody`, learned routing and the suggestions read, and the admin's reason filter. The
package imports `filters.py` as it loads, so `tables()` always sees every declaration.

An agent outside the candidate set goes through the identity filter alone. Every other
candidate goes through all of them, so its record lists each thing that was wrong, not just
the first.

Each filter's read runs once per card, before any filter; a read several filters share (by
identity) runs once. Its function is given the card's pool of agents and what it read, and
returns its verdicts on the candidates it does not simply pass, each with the agents it is
given to. Working over the whole pool at once keeps a thousand candidates cheap: most
filters are a set operation, and most give one verdict to many agents.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from types import MappingProxyType
from typing import Any, Callable, Container, Iterable, Mapping, NamedTuple

from .candidates import Pool
from .facts import Facts
from .registry import Registry
from .rules import Rules


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
    PULL_MAY_CLAIM = (
        "pull-may-claim"  # bars a hold alone: under pull the agent may claim the card all the same
    )


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
    words: tuple[str, ...] = ()  # each reason code as a person says it after the agent's name, in order
    passed: FilterResult = field(init=False)
    rejected: FilterResult = field(init=False)  # with its first reason code
    unchecked: FilterResult = field(init=False)

    def __post_init__(self) -> None:
        if not self.reasons:
            raise ValueError(f"filter {self.name} declares no reason code")
        object.__setattr__(self, "reasons", tuple(self.reasons))
        object.__setattr__(self, "words", tuple(self.words))
        if self.words and len(self.words) != len(self.reasons):
            raise ValueError(
                f"filter {self.name} gives words for {len(self.words)} of its "
                f"{len(self.reasons)} reason codes"
            )
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

_tables: Tables | None = None


# A name is recorded as is and a code is matched inside SQL text and admin addresses: keep
# both plain.
_NAME = re.compile(r"[a-z][A-Za-z0-9]*")
_CODE = re.compile(r"[a-z][a-z0-9:-]*")


def _check(declared: Filter) -> None:
    if not _NAME.fullmatch(declared.name):
        raise ValueError(f"filter name {declared.name!r} is not camelCase letters and digits")
    for code in declared.reasons:
        if not _CODE.fullmatch(code):
            raise ValueError(f"filter {declared.name}: reason code {code!r} is not lowercase kebab-case")


def _forget_tables() -> None:
    """Every table derived from the declarations is worked out again when next asked for."""
    global _tables
    _tables = None


_REGISTRY: Registry[Filter] = Registry("filter", lambda f: f.name, check=_check, changed=_forget_tables)
_declared = _REGISTRY.items
declare, withdraw, declared = _REGISTRY.declare, _REGISTRY.withdraw, _REGISTRY.declared


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
        self.codes: Mapping[str, Filter] = MappingProxyType({code: f for f in in_order for code in f.reasons})
        # Each code as a person says it (the decision's explanation); a code without words is itself.
        self.words: Mapping[str, str] = MappingProxyType(
            {code: said for f in in_order for code, said in zip(f.reasons, f.words)}
        )
        self.tagged: Mapping[Tag, tuple[Filter, ...]] = MappingProxyType(
            {tag: tuple(f for f in in_order if tag in f.tags) for tag in Tag}
        )
        self._names = {tag: frozenset(f.name for f in tagged) for tag, tagged in self.tagged.items()}
        self._codes = {
            tag: tuple(code for f in tagged for code in f.reasons) for tag, tagged in self.tagged.items()
        }
        self.station_filters = tuple(f.name for f in self.tagged[Tag.STATION])
        self.identity = self.tagged[Tag.IDENTITY][0]
        self.off_the_set = (self.identity.rejected,)
        reads: dict[Read, int] = {}
        for f in in_order:
            reads.setdefault(f.reads, len(reads))
        self.reads = tuple(reads)  # each distinct read once, in the order filters first need it
        self.read_at = tuple(reads[f.reads] for f in in_order)
        self._read_index = {f: reads[f.reads] for f in in_order}
        self._shapes: dict[tuple[object, ...], Shape] = {}

    def names(self, tag: Tag) -> frozenset[str]:
        """The names of the filters with this tag."""
        return self._names[tag]

    def codes_of(self, tag: Tag) -> tuple[str, ...]:
        """Every reason code of the filters with this tag, in the order they run."""
        return self._codes[tag]

    def shape(self, marks: tuple[object, ...]) -> Shape:
        """The filters that run when the reads are marked so (SKIP, UNREAD or None), remembered."""
        shape = self._shapes.get(marks)
        if shape is None:
            passing: list[FilterResult] = []
            checks: list[tuple[int, Check, int]] = []
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
    orders: dict[int, str] = {}
    codes: dict[str, str] = {}
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


def busy_only(filters: Iterable[FilterResult]) -> bool:
    """Whether every filter failed is a load filter: the agent is busy and nothing else, so it
    passes once the work in hand is done."""
    return fails_only(filters, tables().names(Tag.LOAD))


def fails_only(filters: Iterable[FilterResult], names: Container[str]) -> bool:
    """Whether every filter failed is one of `names`."""
    for result in filters:  # a loop, not all() over a generator: the what-if asks it of every candidate
        if not result.passed and result.filter not in names:
            return False
    return True


def __getattr__(name: str) -> Any:
    # The derived tables by their names, always as the declarations stand now. Read them as
    # `filtering.REASON_CODES` (or through `tables()`), so a filter declared later is seen.
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

    verdicts: dict[str, tuple[FilterResult, ...]]  # the in-set agents
    eligible: list[str]


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
    groups: dict[int, list[Any]] = {}  # by the id of a group of agents: the group and its bits
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
    # Every in-set agent no filter singled out passed them all; only the rest are visited.
    verdicts = dict.fromkeys(in_set, passing)
    alike: dict[int, tuple[FilterResult, ...]] = {0: passing}
    alike_of = alike.get
    rejected: set[str] = set()
    reject = rejected.add
    for agent_id, bits in gathered.items():
        if agent_id in verdicts:
            results = alike_of(bits)
            if results is None:
                results = alike[bits] = _with_verdicts(passing, given, bits)
            verdicts[agent_id] = results
            if bits & failing:
                reject(agent_id)
    return Filtered(verdicts, list(in_set.difference(rejected)))


def _with_verdicts(
    passing: tuple[FilterResult, ...], given: list[tuple[int, FilterResult]], bits: int
) -> tuple[FilterResult, ...]:
    results = list(passing)
    while bits:
        place, result = given[(bits & -bits).bit_length() - 1]  # the lowest bit left
        results[place] = result
        bits &= bits - 1
    return tuple(results)
