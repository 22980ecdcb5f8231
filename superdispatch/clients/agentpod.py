"""AgentPod (the hub): the board's roster and the stations' capability registry. Read only."""

from __future__ import annotations

from typing import Literal

import msgspec

from placement.facts import ISOLATION_ORDER, PROOF_ORDER, RegistryFact, RosterRow, Station

from . import shape
from .http import Product, Refused, segment
from .shape import Answer, Text, Time

ROSTER_ROUTE = "/api/bridge/boards/{boardId}/roster"
STATIONS_ROUTE = "/api/catalog/stations"
# Every call this client makes, as a metric names it: method and path template.
ROUTES = (f"GET {ROSTER_ROUTE}", f"GET {STATIONS_ROUTE}")


class AgentPod(Product):
    """AgentPod's roster and registry reads, with tokens for the hub's audience."""

    name = "agentpod"

    def roster(self, board_id: str) -> tuple[RosterRow, ...]:
        """The board's bridge rows. Slow in production (the hub probes every station)."""
        path = f"/api/bridge/boards/{segment(board_id)}/roster"
        return self._http.call("GET", path, _roster, read=True, route=ROSTER_ROUTE)

    def stations(self) -> tuple[Station, ...] | None:
        """The capability registry, or None when the hub has none (it answers 404). Any other
        failure raises, so a refused or unreachable registry is told apart from an absent one."""
        try:
            return self._http.call("GET", STATIONS_ROUTE, _stations, read=True, expected=frozenset({404}))
        except Refused as err:
            if err.status == 404:
                return None
            raise


class _Row(msgspec.Struct, rename="camel", gc=False, kw_only=True):
    key: Text
    agent_id: Text
    principal_id: Text | None = None
    station_id: Text | None = None
    enabled: bool
    ready: bool
    busy: bool
    last_took_work_at: Time | None = None


class _Roster(Answer):
    agents: tuple[_Row, ...]


_ROSTER = shape.decoder(_Roster)


def _roster(content: bytes) -> tuple[RosterRow, ...]:
    return tuple(
        RosterRow(
            agent_id=r.agent_id,
            principal_id=r.principal_id,
            station_id=r.station_id,
            enabled=r.enabled,
            ready=r.ready,
            busy=r.busy,
            last_took_work_at=shape.opt_utc(r.last_took_work_at),
            key=r.key,
        )
        for r in shape.decode(_ROSTER, content, "roster").agents
    )


Proof = Literal[PROOF_ORDER]  # type: ignore[valid-type]


class _Isolation(msgspec.Struct, gc=False):
    value: Literal[ISOLATION_ORDER]  # type: ignore[valid-type]
    proof: Proof


class _Thing(msgspec.Struct, gc=False):
    """A model or tool a station has: its id, and how that is known."""

    id: Text
    proof: Proof


class _Credential(msgspec.Struct, gc=False):
    name: Text
    proof: Proof


class _Station(msgspec.Struct, rename="camel", gc=False, kw_only=True):
    station_id: Text
    runtime: Text | None = None
    harness: Text | None = None
    occupant: Text | None = None
    isolation: _Isolation | None = None
    models: tuple[_Thing, ...] | None = None
    tools: tuple[_Thing, ...] | None = None
    credentials: tuple[_Credential, ...] | None = None


class _Registry(Answer):
    stations: tuple[_Station, ...]


_REGISTRY = shape.decoder(_Registry)


def _stations(content: bytes) -> tuple[Station, ...]:
    return tuple(map(_station, shape.decode(_REGISTRY, content, "registry").stations))


def _station(station: _Station) -> Station:
    isolation = station.isolation
    return Station(
        station_id=station.station_id,
        runtime=station.runtime,
        harness=station.harness,
        occupant=station.occupant,
        isolation=None if isolation is None else RegistryFact(isolation.value, isolation.proof),
        models=tuple(RegistryFact(m.id, m.proof) for m in station.models or ()),
        tools=tuple(RegistryFact(t.id, t.proof) for t in station.tools or ()),
        credentials=tuple(RegistryFact(c.name, c.proof) for c in station.credentials or ()),
    )
