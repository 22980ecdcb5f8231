"""What a station lacks of a stage's needs, by AgentPod's capability registry.

A fact counts only when its proof is at least the minimum. A station the registry does
not list, or no station at all, has nothing, so it lacks every stated need. What it lacks
is said in the stage's words: what the stage asked for that the station does not have.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Iterable, Mapping, NamedTuple

from .facts import ISOLATION_ORDER, PROOF_ORDER, RegistryFact, Station, StationNeeds

PROOF_RANK = {proof: rank for rank, proof in enumerate(PROOF_ORDER)}
ISOLATION_RANK = {level: rank for rank, level in enumerate(ISOLATION_ORDER)}

Need = tuple[str, str]  # (filter, what the stage asks for), e.g. ("tools", "git")


class Lacking(NamedTuple):
    """What one station lacks, need by need; an empty tuple is a need met (or not stated)."""

    isolation: tuple[str, ...]
    model: tuple[str, ...]  # every model asked for, when it counts none of them
    tools: tuple[str, ...]
    credentials: tuple[str, ...]


def lacking_by_agent(
    needs: StationNeeds, registry: Iterable[Station], station_of: Mapping[str, str | None], min_rank: int,
) -> dict[str, Lacking]:
    """The agents whose station lacks anything the stage asks for, and what it lacks."""
    holders = _holders(needs, registry, set(station_of.values()), min_rank)
    meet_all = _meeting_every_need(needs, holders)
    lacks_of: dict[str | None, Lacking] = {}  # by station: agents sharing one (or none) share its answer
    found = {}
    for agent_id, station_id in station_of.items():
        if station_id in meet_all:
            continue
        lacks = lacks_of.get(station_id)
        if lacks is None:
            lacks = lacks_of[station_id] = Lacking(
                isolation=tuple(level for level in _stated(needs.isolation)
                                if station_id not in holders["isolation", level]),
                model=() if any(station_id in holders["model", m] for m in needs.models) else needs.models,
                tools=tuple(tool for tool in needs.tools if station_id not in holders["tools", tool]),
                credentials=tuple(name for name in needs.credentials
                                  if station_id not in holders["credentials", name]),
            )
        found[agent_id] = lacks
    return found


def _holders(needs: StationNeeds, registry: Iterable[Station], wanted: set[str | None],
             min_rank: int) -> defaultdict[Need, set[str]]:
    """For each thing the stage asks for, the wanted stations whose counted facts have it."""
    counted = {proof for proof, rank in PROOF_RANK.items() if rank >= min_rank}
    holders: defaultdict[Need, set[str]] = defaultdict(set)
    for station in registry:
        station_id = station.station_id
        if station_id not in wanted:
            continue
        if needs.isolation and _isolated_enough(needs.isolation, station.isolation, counted):
            holders["isolation", needs.isolation].add(station_id)
        for need, asked, facts in (("model", needs.models, station.models), ("tools", needs.tools, station.tools),
                                   ("credentials", needs.credentials, station.credentials)):
            if asked:
                for fact in facts:
                    if fact.value in asked and fact.proof in counted:
                        holders[need, fact.value].add(station_id)
    return holders


def _meeting_every_need(needs: StationNeeds, holders: Mapping[Need, set[str]]) -> set[str]:
    # A station meets the models when it has any one of them; every other need, each item.
    meeting = [holders["isolation", level] for level in _stated(needs.isolation)]
    if needs.models:
        meeting.append(set().union(*(holders["model", m] for m in needs.models)))
    meeting += [holders["tools", tool] for tool in needs.tools]
    meeting += [holders["credentials", name] for name in needs.credentials]
    return set.intersection(*meeting) if meeting else set()


def _stated(isolation: str | None) -> tuple[str, ...]:
    return (isolation,) if isolation else ()


def _isolated_enough(wanted: str, fact: RegistryFact | None, counted: set[str]) -> bool:
    # A level nobody defined cannot be met; a station's unknown level meets nothing.
    return (
        fact is not None
        and fact.proof in counted
        and ISOLATION_RANK.get(fact.value, -1) >= ISOLATION_RANK.get(wanted, len(ISOLATION_ORDER))
    )
