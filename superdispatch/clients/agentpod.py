"""AgentPod (the hub): the board's roster and the stations' capability registry. Read only."""
from __future__ import annotations

import time
from typing import Any, Callable

import requests

from placement.facts import ISOLATION_ORDER, PROOF_ORDER, RegistryFact, RosterRow, Station

from . import shape
from .http import BACKOFF, DEFAULT_TIMEOUT, READ_RETRIES, Http, Refused, TokenSource, segment

ROSTER_ROUTE = "/api/bridge/boards/{boardId}/roster"
STATIONS_ROUTE = "/api/catalog/stations"
# Every call this client makes, as a metric names it: method and path template.
ROUTES = (f"GET {ROSTER_ROUTE}", f"GET {STATIONS_ROUTE}")


class AgentPod:
    """AgentPod's roster and registry reads, with tokens for the hub's audience."""

    def __init__(self, base_url: str, audience: str, accounts: TokenSource, *,
                 session: requests.Session | None = None,
                 timeout: tuple[float, float] = DEFAULT_TIMEOUT, retries: int = READ_RETRIES,
                 backoff: tuple[float, ...] = BACKOFF,
                 sleep: Callable[[float], None] = time.sleep):
        self._http = Http("agentpod", base_url, session=session, tokens=accounts,
                          audience=audience, timeout=timeout, retries=retries,
                          backoff=backoff, sleep=sleep)

    def roster(self, board_id: str) -> tuple[RosterRow, ...]:
        """The board's bridge rows. Slow in production (the hub probes every station)."""
        path = f"/api/bridge/boards/{segment(board_id)}/roster"
        return self._http.call("GET", path, _roster, read=True, route=ROSTER_ROUTE)

    def stations(self) -> tuple[Station, ...] | None:
        """The capability registry, or None when the hub has none (it answers 404). Any other
        failure raises, so a refused or unreachable registry is told apart from an absent one."""
        try:
            return self._http.call("GET", STATIONS_ROUTE, _stations, read=True,
                                   expected=frozenset({404}))
        except Refused as err:
            if err.status == 404:
                return None
            raise


def _roster(body: Any) -> tuple[RosterRow, ...]:
    body = shape.mapping(body, "roster")
    return shape.required_items(body, "agents", "roster", _row)


def _row(value: Any, where: str) -> RosterRow:
    row = shape.mapping(value, where)
    return RosterRow(agent_id=shape.text(row, "agentId", where),
                     principal_id=shape.opt_text(row, "principalId", where),
                     station_id=shape.opt_text(row, "stationId", where),
                     enabled=shape.boolean(row, "enabled", where),
                     ready=shape.boolean(row, "ready", where),
                     busy=shape.boolean(row, "busy", where),
                     last_took_work_at=shape.opt_time(row, "lastTookWorkAt", where),
                     key=shape.text(row, "key", where))


def _stations(body: Any) -> tuple[Station, ...]:
    body = shape.mapping(body, "registry")
    return shape.required_items(body, "stations", "registry", _station)


def _station(value: Any, where: str) -> Station:
    station = shape.mapping(value, where)
    isolation = station.get("isolation")
    return Station(
        station_id=shape.text(station, "stationId", where),
        runtime=shape.opt_text(station, "runtime", where),
        harness=shape.opt_text(station, "harness", where),
        occupant=shape.opt_text(station, "occupant", where),
        isolation=None if isolation is None else _isolation(isolation, f"{where}.isolation"),
        models=shape.items(station, "models", where, _fact("id")),
        tools=shape.items(station, "tools", where, _fact("id")),
        credentials=shape.items(station, "credentials", where, _fact("name")),
    )


def _isolation(value: Any, where: str) -> RegistryFact:
    value = shape.mapping(value, where)
    return RegistryFact(value=shape.one_of(value, "value", where, ISOLATION_ORDER),
                        proof=shape.one_of(value, "proof", where, PROOF_ORDER))


def _fact(key: str) -> Callable[[Any, str], RegistryFact]:
    """A reader of `{<key>: ..., "proof": ...}` list items."""
    def read(value: Any, where: str) -> RegistryFact:
        value = shape.mapping(value, where)
        return RegistryFact(value=shape.text(value, key, where),
                            proof=shape.one_of(value, "proof", where, PROOF_ORDER))

    return read
