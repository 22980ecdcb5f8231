"""AgentPod: the board's roster and the stations' registry, with the hub's audience."""

from __future__ import annotations

from datetime import datetime

import pytest

from placement.facts import RegistryFact, RosterRow, Station
from superdispatch.clients import BadShape, Refused, Unavailable

from . import bodies
from .conftest import HUB_AUDIENCE
from .server import Reply

ROSTER = "/api/bridge/boards/brd_1/roster"
STATIONS = "/api/catalog/stations"


def test_roster_rows_are_read_with_a_token_for_the_hub_audience(suite, mint, pod):
    suite.route("GET", ROSTER, Reply(200, bodies.roster()))
    assert pod.roster("brd_1") == (
        RosterRow(
            agent_id="agt_ada",
            principal_id="prn_ada",
            station_id="station_1",
            enabled=True,
            ready=True,
            busy=False,
            last_took_work_at=datetime.fromisoformat("2026-11-13T09:00:00+00:00"),
            key="codex-mac",
        ),
        RosterRow(
            agent_id="agt_bo",
            principal_id=None,
            station_id=None,
            enabled=False,
            ready=False,
            busy=True,
            last_took_work_at=None,
            key="claude-box",
        ),
    )
    assert mint.audience_of(suite.hits("GET", ROSTER)[0]) == HUB_AUDIENCE


@pytest.mark.parametrize(
    "change",
    [
        {"enabled": "true"},
        {"busy": None},
        {"agentId": None},
        {"lastTookWorkAt": 12},
    ],
)
def test_roster_row_of_the_wrong_shape_is_bad_shape(suite, pod, change):
    body = bodies.roster()
    body["agents"][0].update(change)
    suite.route("GET", ROSTER, Reply(200, body))
    with pytest.raises(BadShape):
        pod.roster("brd_1")


def test_stations_are_read_with_their_proofs(suite, pod):
    suite.route("GET", STATIONS, Reply(200, bodies.stations()))
    assert pod.stations() == (
        Station(
            station_id="station_1",
            runtime="rt_1",
            harness="codex",
            occupant="agt_ada",
            isolation=RegistryFact("container", "probed"),
            models=(RegistryFact("m-large", "declared"),),
            tools=(RegistryFact("git", "installed"),),
            credentials=(RegistryFact("GITHUB_TOKEN", "declared"),),
        ),
        Station(station_id="station_2"),
    )


def test_hub_without_the_registry_answers_none(suite, pod):
    suite.route("GET", STATIONS, Reply(404))
    assert pod.stations() is None


def test_registry_refused_is_told_apart_from_absent(suite, pod):
    suite.route("GET", STATIONS, Reply(403, {"error": {"code": "not-a-catalog-reader"}}))
    with pytest.raises(Refused) as caught:
        pod.stations()
    assert caught.value.code == "not-a-catalog-reader"


def test_registry_outage_raises_unavailable(suite, pod):
    suite.route("GET", STATIONS, Reply(502))
    with pytest.raises(Unavailable):
        pod.stations()


@pytest.mark.parametrize(
    "change",
    [
        {"isolation": {"value": "vm", "proof": "probed"}},
        {"isolation": {"value": "container", "proof": "rumoured"}},
        {"models": [{"id": "m-large"}]},
        {"credentials": [{"id": "GITHUB_TOKEN", "proof": "declared"}]},
        {"tools": "git"},
    ],
)
def test_station_of_the_wrong_shape_is_bad_shape(suite, pod, change):
    body = bodies.stations()
    body["stations"][0].update(change)
    suite.route("GET", STATIONS, Reply(200, body))
    with pytest.raises(BadShape):
        pod.stations()


def test_a_bad_shape_names_product_route_and_path_but_never_the_value_found(suite, pod):
    body = bodies.stations()
    body["stations"][1]["isolation"] = {"value": "tok-SECRET-in-a-field", "proof": "probed"}
    suite.route("GET", STATIONS, Reply(200, body))
    with pytest.raises(BadShape) as caught:
        pod.stations()
    said = f"{caught.value} {caught.value!r} {caught.value.detail}"
    assert str(caught.value).startswith(
        "agentpod GET /api/catalog/stations: bad-shape (registry.stations[1].isolation.value: "
    )
    assert "SECRET" not in said
