"""Who is considered for a card, who of them is in the candidate set, and what each read says."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Callable, Iterable, Sequence, TypeVar

from .facts import AgentLoad, AgentVerdict, Facts, RosterRow
from .load import LoadShape, direct_load, roster_load
from .rules import Rules

CAPABILITY_MISMATCH = "capability_mismatch"  # SuperPipeline's word for capability-missing

Row = TypeVar("Row", RosterRow, AgentVerdict, AgentLoad)


@dataclass(frozen=True, slots=True)
class Pool:
    """The considered agents of one card, indexed by agent id."""

    ids: tuple[str, ...]  # every considered agent, in agent id order
    in_set: frozenset[str]
    rows: dict[str, RosterRow]  # bridge rows on the board
    verdicts: dict[str, AgentVerdict]  # SuperPipeline's eligibility read
    objections: dict[str, AgentVerdict]  # in-set verdicts that are not a plain "eligible"
    loads: dict[str, LoadShape]  # every in-set agent's load shape
    principals: dict[str, str]  # from the bridge row, else the eligibility read, else the load read
    stations: dict[str, str]  # from the bridge row, else the registry station it occupies

    def principal(self, agent_id: str) -> str | None:
        return self.principals.get(agent_id)

    @property
    def rostered_capable(self) -> int:
        """Agents on the board's roster, in the set, that have the stage's capability.

        With fewer than two there is no choice to make: pull gives the card to the one there
        is (`one-candidate`), whatever other capabilities the roster holds.
        """
        return sum(
            1 for agent_id in self.in_set
            if agent_id in self.rows and CAPABILITY_MISMATCH not in self._reasons(agent_id)
        )

    def _reasons(self, agent_id: str) -> tuple[str, ...]:
        verdict = self.objections.get(agent_id)
        return verdict.reasons if verdict is not None else ()


def pool_for(facts: Facts, rules: Rules, now: datetime) -> Pool:
    """Every agent in the eligibility read or on the roster, and the candidate set among them.

    The set is every enabled bridge row, and with `candidates=all` every considered agent
    with no bridge row that reports its load. A disabled row keeps its agent out either way.
    """
    rows = _by_agent(facts.roster, lambda row: (row.enabled, row.key))  # a disabled duplicate wins
    verdicts = _by_agent(facts.eligibility, lambda verdict: (verdict.eligible, verdict.reasons))
    direct: dict[str, AgentLoad] = {}
    if rules.candidates == "all" and facts.load is not None:
        loaded = _by_agent(facts.load, lambda load: -load.in_flight)
        direct = {agent_id: loaded[agent_id] for agent_id in (loaded.keys() - rows.keys()) & verdicts.keys()}
    loads = {agent_id: roster_load(row) for agent_id, row in rows.items() if row.enabled}
    loads.update({agent_id: direct_load(row, now) for agent_id, row in direct.items()})
    principals = {agent_id: row.principal_id for agent_id, row in direct.items() if row.principal_id}
    principals.update({agent_id: v.principal_id for agent_id, v in verdicts.items() if v.principal_id})
    principals.update({agent_id: row.principal_id for agent_id, row in rows.items() if row.principal_id})
    stations = _occupied(facts, direct.keys()) if direct else {}
    stations.update({agent_id: row.station_id for agent_id, row in rows.items() if row.station_id})
    return Pool(
        ids=tuple(sorted(rows.keys() | verdicts.keys())),
        in_set=frozenset(loads),
        rows=rows,
        verdicts=verdicts,
        objections={
            agent_id: verdict for agent_id, verdict in verdicts.items()
            if (verdict.reasons or not verdict.eligible) and agent_id in loads
        },
        loads=loads,
        principals=principals,
        stations=stations,
    )


def _occupied(facts: Facts, agent_ids: Iterable[str]) -> dict[str, str]:
    """The registry station each agent occupies: an agent with no bridge row has no other."""
    if not facts.registry:
        return {}
    wanted = set(agent_ids)
    occupied: dict[str, str] = {}
    for station in sorted(facts.registry, key=lambda s: s.station_id):  # the same in any order
        if station.occupant in wanted and station.occupant not in occupied:
            occupied[station.occupant] = station.station_id
    return occupied


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
