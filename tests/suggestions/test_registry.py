"""The registry as last read: what the loop remembers is what supply proposals read."""

from __future__ import annotations

from placement.facts import RegistryFact, Station
from records.store.actions.sweeps import do_remember_registry as remember_registry
from records.store.registry import last_registry
from tests.conftest import at

STATION = Station(
    station_id="stn_1",
    runtime="rt_1",
    harness="codex",
    occupant="agt_ada",
    isolation=RegistryFact("container", "probed"),
    models=(RegistryFact("m-large", "declared"),),
    tools=(RegistryFact("git", "installed"), RegistryFact("jq", "declared")),
    credentials=(RegistryFact("GITHUB_TOKEN", "declared"),),
)


def test_nothing_remembered_reads_as_unread():
    assert last_registry() == (None, None)


def test_stations_remembered_read_back_as_the_same_stations(db):
    remember_registry((STATION, Station(station_id="stn_2")), at(0))
    assert last_registry() == ((STATION, Station(station_id="stn_2")), at(0))


def test_a_pass_that_could_not_read_the_registry_leaves_it_unread(db):
    remember_registry((STATION,), at(0))
    remember_registry(None, at(30))
    assert last_registry() == (None, at(30))
