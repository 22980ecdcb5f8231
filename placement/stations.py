"""What a station lacks of a stage's needs, by AgentPod's capability registry.

A fact counts only when its proof is at least the minimum. A station the registry does
not list, or no station at all, has nothing, so it lacks every stated need. Each answer
is in the stage's words: what it asked for and the station does not have.
"""
from __future__ import annotations

from typing import Iterable

from .facts import ISOLATION_ORDER, PROOF_ORDER, RegistryFact, Station, StationNeeds

PROOF_RANK = {proof: rank for rank, proof in enumerate(PROOF_ORDER)}
ISOLATION_RANK = {level: rank for rank, level in enumerate(ISOLATION_ORDER)}


def _counted(facts: Iterable[RegistryFact], min_rank: int) -> set[str]:
    return {fact.value for fact in facts if PROOF_RANK.get(fact.proof, -1) >= min_rank}


def isolation_lacking(needs: StationNeeds, station: Station | None, min_rank: int) -> tuple[str, ...]:
    """The isolation asked for, when the station's counted isolation is weaker (or unknown)."""
    wanted = needs.isolation
    if not wanted:
        return ()
    fact = station.isolation if station is not None else None
    if (
        fact is not None
        and PROOF_RANK.get(fact.proof, -1) >= min_rank
        and ISOLATION_RANK.get(fact.value, -1) >= ISOLATION_RANK.get(wanted, len(ISOLATION_ORDER))
    ):
        return ()
    return (wanted,)


def models_lacking(needs: StationNeeds, station: Station | None, min_rank: int) -> tuple[str, ...]:
    """Every model asked for, when the station counts none of them (any one is enough)."""
    if not needs.models:
        return ()
    if station is not None and not _counted(station.models, min_rank).isdisjoint(needs.models):
        return ()
    return needs.models


def tools_lacking(needs: StationNeeds, station: Station | None, min_rank: int) -> tuple[str, ...]:
    """The tools asked for that the station does not count."""
    return _each_lacking(needs.tools, station.tools if station is not None else (), min_rank)


def credentials_lacking(needs: StationNeeds, station: Station | None, min_rank: int) -> tuple[str, ...]:
    """The credential names asked for that the station does not count."""
    return _each_lacking(needs.credentials, station.credentials if station is not None else (), min_rank)


def _each_lacking(wanted: tuple[str, ...], facts: Iterable[RegistryFact], min_rank: int) -> tuple[str, ...]:
    if not wanted:
        return ()
    have = _counted(facts, min_rank)
    return tuple(name for name in wanted if name not in have)
