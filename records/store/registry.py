"""AgentPod's capability registry as the loop last read it, kept in the store for every process.

The loop remembers each pass's read (None when it could not read it) through
`records.store.actions.sweeps.do_remember_registry`; supply proposals read it back. Stations are kept as
JSON in the registry's own shape.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from placement.facts import RegistryFact, Station
from records.models import RegistryRead

KEY = "registry"
_LISTS = ("models", "tools", "credentials")


def last_registry() -> tuple[tuple[Station, ...] | None, datetime | None]:
    """The stations as last read (None: unread, or never read) and when that read was."""
    row = RegistryRead.objects.filter(key=KEY).first()
    if row is None:
        return None, None
    if row.stations is None:
        return None, row.read_at
    return tuple(station_from_json(s) for s in row.stations), row.read_at


def station_json(station: Station) -> dict[str, Any]:
    out: dict[str, Any] = {
        "stationId": station.station_id,
        "runtime": station.runtime,
        "harness": station.harness,
        "occupant": station.occupant,
        "isolation": _fact_json(station.isolation) if station.isolation else None,
    }
    for name in _LISTS:
        out[name] = [_fact_json(fact) for fact in getattr(station, name)]
    return out


def station_from_json(data: dict[str, Any]) -> Station:
    isolation = data.get("isolation")
    return Station(
        station_id=data["stationId"],
        runtime=data.get("runtime"),
        harness=data.get("harness"),
        occupant=data.get("occupant"),
        isolation=_fact(isolation) if isolation else None,
        **{name: tuple(_fact(f) for f in data.get(name) or ()) for name in _LISTS},
    )


def _fact_json(fact: RegistryFact) -> dict[str, str]:
    return {"value": fact.value, "proof": fact.proof}


def _fact(data: dict[str, str]) -> RegistryFact:
    return RegistryFact(value=data["value"], proof=data["proof"])
