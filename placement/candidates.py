"""Who is considered for a card, who of them is in the candidate set, and what each read says."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Callable, Hashable, NamedTuple, Sequence, TypeVar

from .facts import AgentLoad, Facts, RosterRow, Verdict
from .load import LoadShape, direct_load, roster_load
from .memo import IdentityMemo
from .rules import Rules
from .stations import occupied_stations

CAPABILITY_MISMATCH = "capability_mismatch"  # SuperPipeline's word for capability-missing

# What each agent's position in a card's `kinds` says of it (the decision's `Candidates`).
OWN_RECORD = "."  # a record of its own: in the candidate set, on the roster, or at a station
OFF_CAPABLE = "c"  # off the candidate set and nothing more, with the stage's capability
OFF_INCAPABLE = "x"  # ... and without it

Row = TypeVar("Row", RosterRow, Verdict, AgentLoad)
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Pool:
    """The considered agents of one card, indexed by agent id."""

    ids: tuple[str, ...]  # every considered agent, in agent id order
    in_set: frozenset[str]
    disabled: tuple[str, ...]  # on the roster, their rows disabled: off the set, with records of their own
    rows: dict[str, RosterRow]  # bridge rows on the board
    verdicts: dict[str, Verdict]  # SuperPipeline's eligibility read
    objections: dict[str, Verdict]  # in-set verdicts that are not a plain "eligible"
    loads: dict[str, LoadShape]  # every in-set agent's load shape
    unhealthy: frozenset[str]  # in-set agents whose load shape is not healthy
    full: frozenset[str]  # in-set agents whose load shape is not idle
    # In the set or on the roster: the bridge row's, else the eligibility read's, else the load read's.
    principals: dict[str, str]
    stations: dict[str, str]  # from the bridge row, else the registry station it occupies
    judged: Judged  # the eligibility read's index, which speaks for every agent off the set and the roster

    def principal(self, agent_id: str) -> str | None:
        return self.principals.get(agent_id)

    @property
    def rostered_capable(self) -> int:
        """Agents on the board's roster, in the set, that have the stage's capability.

        With fewer than two there is no choice to make: pull gives the card to the one there
        is (`one-candidate`), whatever other capabilities the roster holds, or the lane has
        nobody to pull it from the roster (`empty-lane`).
        """
        rows = self.rows
        incapable = sum(
            1
            for agent_id, verdict in self.objections.items()
            if agent_id in rows and CAPABILITY_MISMATCH in verdict.reasons
        )
        return len(self.in_set.intersection(rows)) - incapable


class Reported(NamedTuple):
    """What a read shared by every card of a pass (the roster, the agents' load) says of each agent."""

    rows: dict[str, Any]  # one row per agent
    loads: dict[str, LoadShape]  # the roster's enabled rows; every agent reporting its load
    unhealthy: frozenset[str]  # of those loads, the ones not healthy
    full: frozenset[str]  # of those loads, the ones not idle
    principals: dict[str, str]
    stations: dict[str, str]  # the roster's only
    unnamed: tuple[str, ...]  # agents whose row names no principal: the eligibility read's may
    disabled: tuple[str, ...]  # agents whose row is disabled


def pool_for(facts: Facts, rules: Rules, now: datetime) -> Pool:
    """Every agent in the eligibility read or on the roster, and the candidate set among them.

    The set is every enabled bridge row, and with `candidates=all` every considered agent
    with no bridge row that reports its load. A disabled row keeps its agent out either way.

    Of the thousands of agents the eligibility read judges, only those in the set or on the
    roster are looked at one by one; the rest are `Candidates`' business. A rostered agent's
    principal is its row's, else the read's; any other's is the read's, else its load row's.
    """
    roster = _shared(_rosters, facts.roster, (), lambda: _roster_reads(facts.roster))
    read = _shared(_judgements, facts.eligibility, (), lambda: _judged(facts.eligibility))
    rows, verdicts = roster.rows, read.verdicts
    loads, unhealthy, full, stations = roster.loads, roster.unhealthy, roster.full, roster.stations
    principals = dict(roster.principals)
    for agent_id in roster.unnamed:
        verdict = verdicts.get(agent_id)
        if verdict is not None and verdict.principal_id:
            principals[agent_id] = verdict.principal_id
    if rules.candidates == "all" and facts.load is not None:
        reported = _shared(_load_reads, facts.load, (now,), lambda: _load_reads_of(facts.load, now))  # type: ignore
        direct = (reported.rows.keys() - rows.keys()) & verdicts.keys()
        if direct:
            loads = {**loads, **{agent_id: reported.loads[agent_id] for agent_id in direct}}
            unhealthy = unhealthy | (reported.unhealthy & direct)
            full = full | (reported.full & direct)
            reported_principal = reported.principals.get
            for agent_id in direct:
                principal_id = verdicts[agent_id].principal_id or reported_principal(agent_id)
                if principal_id:
                    principals[agent_id] = principal_id
            if facts.registry:
                occupied = occupied_stations(facts.registry)
                stations = {
                    **{agent_id: occupied[agent_id] for agent_id in direct & occupied.keys()},
                    **stations,
                }
    in_set = frozenset(loads)
    # On the roster, but not in the read: rare. (Asked agent by agent of the roster: a set
    # difference with the read's keys would walk all of its thousands.)
    unjudged = [agent_id for agent_id in rows if agent_id not in verdicts]
    return Pool(
        ids=tuple(sorted([*read.ids, *unjudged])) if unjudged else read.ids,
        in_set=in_set,
        disabled=roster.disabled,
        rows=rows,
        verdicts=verdicts,
        objections={
            agent_id: verdict
            for agent_id in in_set
            if (verdict := verdicts.get(agent_id)) is not None and (verdict.reasons or not verdict.eligible)
        },
        loads=loads,
        unhealthy=unhealthy,
        full=full,
        principals=principals,
        stations=stations,
        judged=read,
    )


class Judged(NamedTuple):
    """What one eligibility read says of each agent it judges, whatever the card's board."""

    verdicts: dict[str, Verdict]  # by agent id
    ids: tuple[str, ...]  # in agent id order
    kinds: str  # by position: each agent as if it had no record of its own (capable or not)
    principals: tuple[str | None, ...]  # by position: the read's principal of each


def verdicts_by_agent(eligibility: Sequence[Verdict]) -> dict[str, Verdict]:
    """The read's verdicts by agent id, as a decision reads them (of two for one agent, the
    same one wins); worked out once for a read handed to several cards, and shared with the
    decision made from it."""
    return _shared(_judgements, eligibility, (), lambda: _judged(eligibility)).verdicts


def _judged(eligibility: Sequence[Verdict]) -> Judged:
    verdicts = _by_agent(eligibility, lambda verdict: (verdict.eligible, verdict.reasons))
    ids = tuple(sorted(verdicts))  # quick: the read comes in agent id order or near it
    return Judged(
        verdicts,
        ids,
        "".join([off_set_kind(verdicts[agent_id]) for agent_id in ids]),
        tuple([verdicts[agent_id].principal_id for agent_id in ids]),
    )


def off_set_kind(verdict: Verdict) -> str:
    """What an agent without a record of its own is, by the read's verdict on it."""
    return OFF_INCAPABLE if CAPABILITY_MISMATCH in verdict.reasons else OFF_CAPABLE


# The loop hands every card of a board the very same roster, and every card of a pass the
# very same load read, so what they say of each agent is worked out once a pass.
_rosters: IdentityMemo[Reported] = IdentityMemo(1024)  # a pass: one roster per board
# Every card whose eligibility read was alike is handed the very same tuple (the client keeps
# its last few reads), so each read is indexed once however many cards and boards share it.
_judgements: IdentityMemo[Judged] = IdentityMemo(4)
_load_reads: IdentityMemo[Reported] = IdentityMemo(4)


def _shared(
    memo: IdentityMemo[T], read: Sequence[Any], key: tuple[Hashable, ...], work: Callable[[], T]
) -> T:
    return memo.get(read, key, work) if type(read) is tuple else work()


def _roster_reads(roster: Sequence[RosterRow]) -> Reported:
    rows = _by_agent(roster, lambda row: (row.enabled, row.key))  # a disabled duplicate wins
    return _reported(
        rows,
        {agent_id: roster_load(row) for agent_id, row in rows.items() if row.enabled},
        principals={agent_id: row.principal_id for agent_id, row in rows.items() if row.principal_id},
        stations={agent_id: row.station_id for agent_id, row in rows.items() if row.station_id},
    )


def _load_reads_of(load: Sequence[AgentLoad], now: datetime) -> Reported:
    rows = _by_agent(load, lambda row: -row.in_flight)
    return _reported(
        rows,
        {agent_id: direct_load(row, now) for agent_id, row in rows.items()},
        principals={agent_id: row.principal_id for agent_id, row in rows.items() if row.principal_id},
        stations={},
    )


def _reported(
    rows: dict[str, Any], loads: dict[str, LoadShape], principals: dict[str, str], stations: dict[str, str]
) -> Reported:
    return Reported(
        rows,
        loads,
        unhealthy=frozenset(agent_id for agent_id, load in loads.items() if not load.healthy),
        full=frozenset(agent_id for agent_id, load in loads.items() if not load.idle),
        principals=principals,
        stations=stations,
        unnamed=tuple(agent_id for agent_id in rows if agent_id not in principals),
        disabled=tuple(agent_id for agent_id in rows if agent_id not in loads),
    )


def _by_agent(rows: Sequence[Row], rank: Callable[[Row], Any]) -> dict[str, Row]:
    """Rows by agent id; of two rows for one agent the lower `rank` wins, whatever the order."""
    indexed = {row.agent_id: row for row in rows}
    if len(indexed) == len(rows):
        return indexed
    indexed = {}
    for row in rows:
        kept = indexed.get(row.agent_id)
        if kept is None or rank(row) < rank(kept):
            indexed[row.agent_id] = row
    return indexed
