"""Who is considered for a card, who of them is in the candidate set, and what each read says."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Callable, Iterable, TypeVar

from .facts import AgentVerdict, Facts
from .load import DIRECT, ROSTER, LoadShape, direct_load, roster_load
from .rules import Rules

Row = TypeVar("Row")


@dataclass(frozen=True, slots=True)
class Agent:
    """One considered agent as the filters see it."""

    agent_id: str
    principal_id: str | None
    station_id: str | None
    source: str  # "roster" when it has a bridge row on the board, else "direct"
    in_set: bool
    verdict: AgentVerdict | None  # None: missing from the eligibility read
    load: LoadShape | None  # always set inside the candidate set


def considered(facts: Facts, rules: Rules, now: datetime) -> list[Agent]:
    """Every agent in the eligibility read or on the roster, by agent id.

    The candidate set is every enabled bridge row, and with `candidates=all` every agent
    with no bridge row on the board that reports its load. A disabled row keeps its agent
    out either way.
    """
    rows = _one_per_agent(facts.roster, lambda row: (row.enabled, row.key))
    verdicts = _one_per_agent(facts.eligibility, lambda v: (v.eligible, v.reasons))
    loads = _one_per_agent(facts.load or (), lambda load: -load.in_flight)
    direct_allowed = rules.candidates == "all" and facts.load is not None

    agents = []
    for agent_id in sorted(rows.keys() | verdicts.keys()):
        row = rows.get(agent_id)
        verdict = verdicts.get(agent_id)
        if row is not None:
            agents.append(Agent(
                agent_id=agent_id,
                principal_id=row.principal_id or (verdict and verdict.principal_id),
                station_id=row.station_id,
                source=ROSTER,
                in_set=row.enabled,
                verdict=verdict,
                load=roster_load(row) if row.enabled else None,
            ))
            continue
        load_row = loads.get(agent_id) if direct_allowed else None
        agents.append(Agent(
            agent_id=agent_id,
            principal_id=verdict.principal_id or (load_row and load_row.principal_id),
            station_id=None,
            source=DIRECT,
            in_set=load_row is not None,
            verdict=verdict,
            load=direct_load(load_row, now) if load_row is not None else None,
        ))
    return agents


def _one_per_agent(rows: Iterable[Row], rank: Callable[[Row], Any]) -> dict[str, Row]:
    """Rows by agent id; of two rows for one agent the lower `rank` wins, whatever the order."""
    kept: dict[str, Row] = {}
    for row in rows:
        held = kept.get(row.agent_id)  # type: ignore[attr-defined]
        if held is None or rank(row) < rank(held):
            kept[row.agent_id] = row  # type: ignore[attr-defined]
    return kept
