"""Who is considered for a card, who of them is in the candidate set, and what each read says."""
from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Callable, NamedTuple, Sequence, TypeVar

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


@dataclass(frozen=True, slots=True)
class Pool:
    """The considered agents of one card, indexed by agent id."""

    ids: tuple[str, ...]  # every considered agent, in agent id order
    in_set: frozenset[str]
    rows: dict[str, RosterRow]  # bridge rows on the board
    verdicts: dict[str, Verdict]  # SuperPipeline's eligibility read
    objections: dict[str, Verdict]  # in-set verdicts that are not a plain "eligible"
    loads: dict[str, LoadShape]  # every in-set agent's load shape
    unhealthy: frozenset[str]  # in-set agents whose load shape is not healthy
    full: frozenset[str]  # in-set agents whose load shape is not idle
    principals: dict[str, str]  # in the set or on the roster: the bridge row's, else the eligibility read's, else the load read's
    stations: dict[str, str]  # from the bridge row, else the registry station it occupies
    kinds: str  # by position in `ids`: OWN_RECORD for the agents above, else off the set, capable or not
    roll: list[str | None]  # by position in `ids`: every agent's principal as its record gives it

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
        incapable = sum(1 for agent_id, verdict in self.objections.items()
                        if agent_id in rows and CAPABILITY_MISMATCH in verdict.reasons)
        return len(self.in_set.intersection(rows)) - incapable


class Reported(NamedTuple):
    """What a read shared by every card of a pass (the roster, the agents' load) says of each agent."""

    rows: dict[str, Any]  # one row per agent
    loads: dict[str, LoadShape]  # the roster's enabled rows; every agent reporting its load
    unhealthy: frozenset[str]  # of those loads, the ones not healthy
    full: frozenset[str]  # of those loads, the ones not idle
    principals: dict[str, str]
    stations: dict[str, str]  # the roster's only


def pool_for(facts: Facts, rules: Rules, now: datetime) -> Pool:
    """Every agent in the eligibility read or on the roster, and the candidate set among them.

    The set is every enabled bridge row, and with `candidates=all` every considered agent
    with no bridge row that reports its load. A disabled row keeps its agent out either way.
    """
    roster = _shared(_rosters, facts.roster, (), lambda: _roster_reads(facts.roster))
    rows = roster.rows
    read = _shared(_judgements, facts.eligibility, (), lambda: _judged(facts.eligibility))
    verdicts = read.verdicts
    loads = dict(roster.loads)
    unhealthy, full = roster.unhealthy, roster.full
    principals: dict[str, str] = {}
    stations: dict[str, str] = {}
    if rules.candidates == "all" and facts.load is not None:
        reported = _shared(_load_reads, facts.load, (now,), lambda: _load_reads_of(facts.load, now))  # type: ignore
        direct = (reported.rows.keys() - rows.keys()) & verdicts.keys()
        loads.update({agent_id: reported.loads[agent_id] for agent_id in direct})
        unhealthy = unhealthy | (reported.unhealthy & direct)
        full = full | (reported.full & direct)
        principals = {agent_id: reported.principals[agent_id] for agent_id in direct
                      if agent_id in reported.principals}
        if direct and facts.registry:
            occupied = occupied_stations(facts.registry)
            stations = {agent_id: occupied[agent_id] for agent_id in direct if agent_id in occupied}
    # Of the thousands of agents the eligibility read judges, only those in the set or on the
    # roster are looked at one by one; the rest are `Candidates`' business.
    named = verdicts.keys() & (loads.keys() | rows.keys())
    principals.update({agent_id: verdicts[agent_id].principal_id for agent_id in named
                       if verdicts[agent_id].principal_id})
    principals.update(roster.principals)
    stations.update(roster.stations)
    # On the roster, but not in the read: rare. (Asked agent by agent of the roster: a set
    # difference with the read's keys would walk all of its thousands.)
    unjudged = {agent_id for agent_id in rows if agent_id not in verdicts}
    ids = tuple(sorted([*read.ids, *unjudged])) if unjudged else read.ids
    kinds, roll = _own_records(read, ids, loads.keys() | rows.keys() | stations.keys(), principals)
    return Pool(
        ids=ids,
        in_set=frozenset(loads),
        rows=rows,
        verdicts=verdicts,
        objections={
            agent_id: verdict for agent_id in sorted(loads.keys() & verdicts.keys())
            if (verdict := verdicts[agent_id]).reasons or not verdict.eligible
        },
        loads=loads,
        unhealthy=unhealthy,
        full=full,
        principals=principals,
        stations=stations,
        kinds=kinds,
        roll=roll,
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
    return _shared(_judgements, eligibility, (), lambda: _judged(eligibility)).verdicts  # type: ignore


def _judged(eligibility: Sequence[Verdict]) -> Judged:
    verdicts = _by_agent(eligibility, lambda verdict: (verdict.eligible, verdict.reasons))
    ids = tuple(sorted(verdicts))  # quick: the read comes in agent id order or near it
    return Judged(
        verdicts, ids,
        "".join([OFF_INCAPABLE if CAPABILITY_MISMATCH in verdicts[agent_id].reasons else OFF_CAPABLE
                 for agent_id in ids]),
        tuple([verdicts[agent_id].principal_id for agent_id in ids]),
    )


def _own_records(read: Judged, ids: tuple[str, ...], own: set[str],
                 principals: dict[str, str]) -> tuple[str, list[str | None]]:
    """The card's kinds and roll: the read's, but for the agents with records of their own,
    whose principal is the one their record gives. Those are a roster's worth, found by
    bisection, so a read of thousands is walked once (`_judged`), not once a card."""
    if ids is read.ids:
        kinds = bytearray(read.kinds, "ascii")
        roll = list(read.principals)
        mark = ord(OWN_RECORD)
        for agent_id in own:
            position = bisect_left(ids, agent_id)
            if position == len(ids) or ids[position] != agent_id:
                break  # not among the read's agents: the long way below places it
            kinds[position] = mark
            roll[position] = principals.get(agent_id)
        else:
            return kinds.decode("ascii"), roll
    # Roster agents the read does not judge take places of their own among its agents.
    of = read.verdicts.get
    kinds_of, roll = [], []
    for agent_id in ids:
        verdict = of(agent_id)
        if agent_id in own or verdict is None:
            kinds_of.append(OWN_RECORD)
            roll.append(principals.get(agent_id))
        else:
            kinds_of.append(OFF_INCAPABLE if CAPABILITY_MISMATCH in verdict.reasons else OFF_CAPABLE)
            roll.append(verdict.principal_id)
    return "".join(kinds_of), roll


# The loop hands every card of a board the very same roster, and every card of a pass the
# very same load read, so what they say of each agent is worked out once a pass.
_rosters: IdentityMemo[Reported] = IdentityMemo(1024)  # a pass: one roster per board
# Every card whose eligibility read was alike is handed the very same tuple (the client keeps
# its last few reads), so each read is indexed once however many cards and boards share it.
_judgements: IdentityMemo[Judged] = IdentityMemo(4)
_load_reads: IdentityMemo[Reported] = IdentityMemo(4)


def _shared(memo: IdentityMemo[Reported], read: Sequence, key: tuple, work: Callable[[], Reported]) -> Reported:
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


def _reported(rows: dict[str, Any], loads: dict[str, LoadShape], principals: dict[str, str],
              stations: dict[str, str]) -> Reported:
    return Reported(
        rows, loads,
        unhealthy=frozenset(agent_id for agent_id, load in loads.items() if not load.healthy),
        full=frozenset(agent_id for agent_id, load in loads.items() if not load.idle),
        principals=principals, stations=stations,
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
