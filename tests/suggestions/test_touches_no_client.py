"""The computation reads our own store and nothing else: any client call at all fails it."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest
import requests

import superdispatch.clients
from placement.facts import RegistryFact, Station
from records.models import Suggestion
from records.store.actions.sweeps import do_remember_registry as remember_registry
from records.suggestions import sync, sync_if_due
from superdispatch.clients import AgentPod, SuperPipeline
from tests.conftest import at
from tests.support.factories import make_decision


def client_classes() -> list[type]:
    """Every class defined in a module of superdispatch/clients/."""
    found = []
    for info in pkgutil.iter_modules(superdispatch.clients.__path__):
        module = importlib.import_module(f"superdispatch.clients.{info.name}")
        found += [
            cls for _, cls in inspect.getmembers(module, inspect.isclass) if cls.__module__ == module.__name__
        ]
    return found


@pytest.fixture
def clients_forbidden(monkeypatch):
    called = []
    patched = 0
    for cls in client_classes():
        for name, member in vars(cls).items():
            if name.startswith("_") or not callable(member) or isinstance(member, type):
                continue

            def forbidden(*args, _where=f"{cls.__qualname__}.{name}", **kwargs):
                called.append(_where)
                raise AssertionError(f"the suggestions called {_where}")

            monkeypatch.setattr(cls, name, forbidden)
            patched += 1
    monkeypatch.setattr(requests.Session, "request", lambda *a, **k: called.append("requests"))
    assert patched >= 10  # the four clients' reads and writes, and the HTTP base
    return called


def test_a_sync_that_finds_every_kind_calls_no_client_method(clients_forbidden):
    remember_registry(
        (
            Station(
                "stn_8",
                isolation=RegistryFact("container", "probed"),
                tools=(RegistryFact("git", "probed"),),
                models=(RegistryFact("m-large", "probed"),),
            ),
        ),
        at(0),
    )
    short = {"agent": "agt_ada", "station": "stn_1", "lacking": {"model": ["m-large"]}}
    far = {"agent": "agt_bob", "station": "stn_2", "lacking": {"isolation": ["container"], "tools": ["git"]}}
    full = {"agent": "agt_cyd", "failing": {"capacity": "at-capacity"}}
    for i in range(2):
        make_decision(
            card=f"card_{i}", reason="none-eligible", created_at=at(i * 60), candidates=[short, far]
        )
        make_decision(
            stage="build", card=f"card_{i}", reason="one-candidate", created_at=at(i * 60), candidates=[full]
        )
    sync(at(600))
    sync_if_due(at(700))
    assert clients_forbidden == []
    assert {"change-model", "move-to-host", "raise-capacity", "lane-single-point"} <= set(
        Suggestion.objects.values_list("kind", flat=True)
    )


def test_the_guard_fails_on_any_client_call(clients_forbidden):
    with pytest.raises(AssertionError):
        AgentPod.stations(object())
    with pytest.raises(AssertionError):
        SuperPipeline.reserve(object(), "brd_a", "card_1", "agt_ada", 60)
    assert clients_forbidden == ["AgentPod.stations", "SuperPipeline.reserve"]
