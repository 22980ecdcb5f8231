"""What a station lacks of a stage's needs, by AgentPod's capability registry.

A fact counts only when its proof is at least the minimum. A station the registry does
not list, or no station at all, has nothing, so it lacks every stated need. What it lacks
is said in the stage's words: what the stage asked for that the station does not have.
"""

from __future__ import annotations

from typing import AbstractSet, Iterable, Mapping, NamedTuple

from .facts import ISOLATION_ORDER, PROOF_ORDER, RegistryFact, Station, StationNeeds
from .memo import IdentityMemo

PROOF_RANK = {proof: rank for rank, proof in enumerate(PROOF_ORDER)}
ISOLATION_RANK = {level: rank for rank, level in enumerate(ISOLATION_ORDER)}
ISOLATED = 1  # the bit of the stated isolation; each model, tool and credential asked for has its own


class Lacking(NamedTuple):
    """What one station lacks, need by need; an empty tuple is a need met (or not stated)."""

    isolation: tuple[str, ...]
    model: tuple[str, ...]  # every model asked for, when it counts none of them
    tools: tuple[str, ...]
    credentials: tuple[str, ...]


class NeedBits(NamedTuple):
    """One bit for each thing the stage asks for, by kind, so a station's answer is one int."""

    models: dict[str, int]
    tools: dict[str, int]
    credentials: dict[str, int]


def lacking_by_agent(
    needs: StationNeeds,
    registry: Iterable[Station],
    station_of: Mapping[str, str | None],
    min_rank: int,
) -> dict[str, Lacking]:
    """The agents whose station lacks anything the stage asks for, and what it lacks."""
    grouped = agents_lacking(needs, registry, station_of.keys(), station_of, min_rank)
    return {agent_id: lacks for lacks, agent_ids in grouped.items() for agent_id in agent_ids}


def agents_lacking(
    needs: StationNeeds,
    registry: Iterable[Station],
    agent_ids: AbstractSet[str],
    station_of: Mapping[str, str | None],
    min_rank: int,
) -> dict[Lacking, list[str]]:
    """Those of `agent_ids` whose station lacks anything, grouped by what they lack, so a filter
    judges each group once. An agent missing from `station_of` has no station: with
    `candidates=all` that is every agent off the roster at no station, taken as one group."""
    stations = station_answers(needs, registry, min_rank)
    by_station, unlisted = stations.lacking, stations.unlisted
    grouped: dict[Lacking, list[str]] = {}
    stationed = station_of.keys() & agent_ids
    for agent_id in stationed:
        lacks = by_station.get(station_of[agent_id], unlisted)  # type: ignore[arg-type]
        if lacks is not None:
            lacking = grouped.get(lacks)
            if lacking is None:
                lacking = grouped[lacks] = []
            lacking.append(agent_id)
    if unlisted is not None and len(stationed) < len(agent_ids):
        grouped.setdefault(unlisted, []).extend(agent_ids - stationed)
    return grouped


class StationAnswers(NamedTuple):
    """What each station of a registry lacks of one stage's needs; None for one that meets them all."""

    # By station id, every station the registry lists; shared: never change it.
    lacking: dict[str, Lacking | None]
    unlisted: Lacking | None  # a station the registry does not list, or no station at all


_remembered: IdentityMemo[StationAnswers] = IdentityMemo(16)  # a pass: one registry, a few needs
_occupants: IdentityMemo[dict[str, str]] = IdentityMemo(4)


def occupied_stations(registry: tuple[Station, ...]) -> dict[str, str]:
    """The station each occupant occupies, the lowest station id of two, once per registry tuple.

    An agent with no bridge row has no other station. Read it, never change it: it is shared.
    """
    if type(registry) is not tuple:
        return _occupied(registry)
    return _occupants.get(registry, (), lambda: _occupied(registry))


def _occupied(registry: Iterable[Station]) -> dict[str, str]:
    occupied: dict[str, str] = {}
    for station in registry:
        occupant = station.occupant
        if occupant is not None:
            kept = occupied.get(occupant)
            if kept is None or station.station_id < kept:
                occupied[occupant] = station.station_id
    return occupied


def station_answers(needs: StationNeeds, registry: Iterable[Station], min_rank: int) -> StationAnswers:
    """What each station lacks, worked out once per registry tuple however many cards read it."""
    if not isinstance(registry, tuple):
        return _station_answers(needs, registry, min_rank)
    return _remembered.get(registry, (needs, min_rank), lambda: _station_answers(needs, registry, min_rank))


def _station_answers(needs: StationNeeds, registry: Iterable[Station], min_rank: int) -> StationAnswers:
    # A station listed twice has what either listing gives it. Stations that meet the same
    # needs share one `Lacking`, so what the filters make of it can be shared too.
    counted = frozenset(proof for proof, rank in PROOF_RANK.items() if rank >= min_rank)
    bits = _need_bits(needs)
    met: dict[str, int] = {}
    for station in registry:
        met[station.station_id] = met.get(station.station_id, 0) | _met(needs, bits, station, counted)
    shared: dict[int, Lacking | None] = {}
    for mask in met.values():
        if mask not in shared:
            shared[mask] = _lacking(needs, bits, mask)
    return StationAnswers(
        {station_id: shared[mask] for station_id, mask in met.items()},
        _lacking(needs, bits, 0),
    )


def _need_bits(needs: StationNeeds) -> NeedBits:
    asked = (needs.models, needs.tools, needs.credentials)
    bit = ISOLATED
    by_kind = []
    for values in asked:
        bit_of = {}
        for value in values:
            if value not in bit_of:
                bit <<= 1
                bit_of[value] = bit
        by_kind.append(bit_of)
    return NeedBits(*by_kind)


def _met(needs: StationNeeds, bits: NeedBits, station: Station, counted: frozenset[str]) -> int:
    """The bits of every need the station's counted facts meet."""
    mask = ISOLATED if _isolated_enough(needs.isolation, station.isolation, counted) else 0
    for facts, bit_of in (
        (station.models, bits.models),
        (station.tools, bits.tools),
        (station.credentials, bits.credentials),
    ):
        for fact in facts:
            if fact.proof in counted:
                mask |= bit_of.get(fact.value, 0)
    return mask


def _lacking(needs: StationNeeds, bits: NeedBits, mask: int) -> Lacking | None:
    """What a station that meets the needs in `mask` lacks; None when it meets every stated need."""
    lacks = Lacking(
        isolation=(needs.isolation,) if needs.isolation and not mask & ISOLATED else (),
        model=needs.models if needs.models and not any(mask & bits.models[m] for m in needs.models) else (),
        tools=tuple(tool for tool in needs.tools if not mask & bits.tools[tool]),
        credentials=tuple(name for name in needs.credentials if not mask & bits.credentials[name]),
    )
    # A stage that states nothing is met by no station in particular, so nobody is left out.
    return None if needs.states_anything and not any(lacks) else lacks


def _isolated_enough(wanted: str | None, fact: RegistryFact | None, counted: frozenset[str]) -> bool:
    # A level nobody defined cannot be met; a station's unknown level meets nothing.
    return (
        bool(wanted)
        and fact is not None
        and fact.proof in counted
        and ISOLATION_RANK.get(fact.value, -1) >= ISOLATION_RANK.get(wanted, len(ISOLATION_ORDER))  # type: ignore
    )
