"""Every public client method, against a recording suite: the only writes are the four
allowed requests, and no credential or token ever reaches a log line or an error."""

from __future__ import annotations

import inspect
import logging
from dataclasses import fields
from datetime import datetime, timezone
from types import SimpleNamespace

import pytest
import requests

from placement.facts import Requires
from superdispatch.clients import (
    Accounts,
    AgentPod,
    ClientError,
    Clients,
    SuperPipeline,
    SuperWitness,
    build_clients,
)
from superdispatch.clients.receivers import Receiver
from tests.conftest import log_formatter

from . import bodies
from .conftest import CREDENTIAL, TokenMint
from .server import Reply

SECRET = CREDENTIAL.split(":", 1)[1]
ALLOWED_WRITES = {
    ("POST", "/accounts/api/token/service"),
    ("POST", "/accounts/api/policy/decide"),
    ("PUT", "/sp/v1/boards/brd_1/cards/card_1042/reservation"),
    ("PUT", "/sp/v1/boards/brd_1/scheduling"),
}
READS = {
    ("GET", "/sp/v1/boards/brd_1"): bodies.board(),
    ("GET", "/sp/v1/boards/brd_1/cards/card_1042/eligibility"): bodies.eligibility(),
    ("GET", "/sp/v1/agents/load"): bodies.load(),
    ("GET", "/pod/api/bridge/boards/brd_1/roster"): bodies.roster(),
    ("GET", "/pod/api/catalog/stations"): bodies.stations(),
    ("GET", "/witness/v1/runs"): bodies.runs([bodies.run()]),
}


def settings(url: str, witness: bool = True) -> SimpleNamespace:
    return SimpleNamespace(
        superpipeline_url=f"{url}/sp",
        org_plane_url=f"{url}/accounts",
        org_plane_service_credential=CREDENTIAL,
        agentpod_url=f"{url}/pod",
        agentpod_audience="",
        superwitness_url=f"{url}/witness" if witness else "",
        superwitness_audience="",
    )


def arguments(method, url: str) -> dict:
    """Arguments for a client method, by parameter name; a parameter nobody named fails the
    test, so a new method is called here as soon as it exists."""
    known = {
        "board_id": "brd_1",
        "card_id": "card_1042",
        "agent_id": "agt_ada",
        "principal_id": "prn_ada",
        "stage_key": "review",
        "seconds": 60,
        "since": datetime(2026, 10, 14, tzinfo=timezone.utc),
        "capabilities": Requires(all=("code-review",)),
        "audience": f"{url}/sp",
    }
    args = {}
    for name, param in inspect.signature(method).parameters.items():
        if param.default is not inspect.Parameter.empty:
            continue
        if name not in known:
            pytest.fail(f"no test argument for {method.__qualname__}({name})")
        args[name] = known[name]
    return args


def call_every_public_method(clients: Clients, url: str) -> tuple[set[str], list]:
    """Call each public method of each client once; return their names and what they raised."""
    called, raised = set(), []
    for client in (getattr(clients, f.name) for f in fields(clients)):
        for name, method in inspect.getmembers(client, inspect.ismethod):
            if name.startswith("_"):
                continue
            called.add(f"{type(client).__name__}.{name}")
            try:
                method(**arguments(method, url))
            except ClientError as err:
                raised.append(err)
    return called, raised


def serve_the_contract(suite) -> None:
    suite.route("POST", "/accounts/api/token/service", TokenMint())
    suite.route("POST", "/accounts/api/policy/decide", Reply(200, bodies.verdict()))
    suite.route("PUT", "/sp/v1/boards/brd_1/cards/card_1042/reservation", Reply(200, bodies.reservation()))
    suite.route("PUT", "/sp/v1/boards/brd_1/scheduling", Reply(200, {"placementWindowSeconds": 10}))
    for (method, path), body in READS.items():
        suite.route(method, path, Reply(200, body))


def test_clients_send_no_write_but_the_four_allowed(suite):
    serve_the_contract(suite)
    clients = build_clients(settings(suite.url))
    called, raised = call_every_public_method(clients, suite.url)

    sent = {(r.method, r.path) for r in suite.requests}
    assert {s for s in sent if s[0] != "GET"} == ALLOWED_WRITES
    assert {s for s in sent if s[0] == "GET"} == set(READS)
    assert raised == []
    assert {
        "SuperPipeline.board",
        "SuperPipeline.reserve",
        "SuperPipeline.set_placement_window",
        "AgentPod.roster",
        "AgentPod.stations",
        "SuperWitness.runs",
        "Accounts.decide",
        "Accounts.token",
    } <= called


def test_build_clients_shares_one_session_and_leaves_superwitness_out_when_unset(suite):
    serve_the_contract(suite)
    session = requests.Session()
    clients = build_clients(settings(suite.url, witness=False), session=session)
    assert clients.superwitness is None
    clients.superpipeline.board("brd_1")
    clients.agentpod.roster("brd_1")
    sessions = {
        c._http.transport.session for c in (clients.accounts, clients.superpipeline, clients.agentpod)
    }
    assert sessions == {session}
    minted = [r.body["audience"] for r in suite.hits("POST", "/accounts/api/token/service")]
    assert minted == [f"{suite.url}/sp", f"{suite.url}/pod"]  # audience defaults to the URL


def sleepless_clients(url: str, naps: list) -> Clients:
    """The clients build_clients makes, but with backoff sleeps recorded instead of slept."""
    accounts = Accounts(f"{url}/accounts", CREDENTIAL, sleep=naps.append)
    return Clients(
        accounts=accounts,
        superpipeline=SuperPipeline(f"{url}/sp", accounts, sleep=naps.append),
        agentpod=AgentPod(f"{url}/pod", f"{url}/pod", accounts, sleep=naps.append),
        superwitness=SuperWitness(f"{url}/witness", f"{url}/witness", accounts, sleep=naps.append),
    )


def test_no_log_line_or_error_names_the_credential_or_a_token(suite, caplog, naps):
    token_echo = {"error": {"code": "bad-token", "message": "tok-SECRET-1 " + SECRET}}
    serve_the_contract(suite)
    for method, path in READS:
        suite.route(
            method,
            path,
            Reply(401, token_echo),
            Reply(503),
            Reply(200, {"oops": "tok-SECRET-1"}),
            Reply(200, raw=b"tok-SECRET-1"),
        )
    suite.route("PUT", "/sp/v1/boards/brd_1/cards/card_1042/reservation", Reply(401, token_echo))
    suite.route("PUT", "/sp/v1/boards/brd_1/scheduling", Reply(200, {"tok-SECRET-1": SECRET}))
    suite.route("POST", "/accounts/api/policy/decide", Reply(403, token_echo))
    clients = sleepless_clients(suite.url, naps)
    seen: list[str] = [repr(clients)]
    with caplog.at_level(logging.DEBUG):
        for _ in range(3):
            called, raised = call_every_public_method(clients, suite.url)
            seen += [f"{err} {err!r} {err.detail}" for err in raised]
        suite.route(
            "POST",
            "/accounts/api/token/service",
            Reply(200, {"access_token": "tok-SECRET-9", "token_type": "Basic", "expires_in": 300}),
        )
        clients.accounts.forget(f"{suite.url}/sp")
        with pytest.raises(ClientError) as caught:
            clients.superpipeline.board("brd_1")
        seen.append(str(caught.value))
        seen.append(repr(clients.superpipeline.reserve("brd_1", "card_1042", "agt_ada", 60)))
    seen += [record.getMessage() for record in caplog.records]
    # Both log formats write each line whole: the JSON one with every field a record carries.
    seen += [log_formatter(name).format(record) for record in caplog.records for name in ("plain", "json")]
    assert len(seen) > 20 and naps  # failures of every kind were met, outages included
    leaks = [line for line in seen if SECRET in line or "tok-SECRET" in line]
    assert leaks == []


# The operator's own receivers (superdispatch/clients/receivers.py) post too: each decision
# and settlement to the events receiver, each new suggestion to the chat webhook. They are not
# the suite, so they stand apart from the suite's two writes above, and only the outbox's
# worker calls them.
RECEIVER_WRITES = {("POST", "/events"), ("POST", "/chat")}


def test_the_receivers_post_nothing_but_their_one_post_each(suite):
    suite.route("POST", "/events", Reply(202, {"ok": True}))
    suite.route("POST", "/chat", Reply(200, {"ok": True}))
    called = set()
    for receiver in (
        Receiver("events", f"{suite.url}/events", secret="s" * 16),
        Receiver("chat", f"{suite.url}/chat"),
    ):
        for name, method in inspect.getmembers(receiver, inspect.ismethod):
            if name.startswith("_"):
                continue
            called.add(name)
            known = {"delivery_id": "evt_0123456789abcdef01234567", "body": b'{"text":"hi"}'}
            method(**{p: known[p] for p in inspect.signature(method).parameters})
    assert called == {"post"}
    assert {(r.method, r.path) for r in suite.requests} == RECEIVER_WRITES
