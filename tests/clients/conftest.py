"""Fixtures: one real local server standing in for the suite, and clients pointed at it."""

from __future__ import annotations

import pytest

from superdispatch.clients import Accounts, AgentPod, SuperPipeline, SuperWitness

from .server import Reply, Request, SuiteServer

CREDENTIAL = "svc_0123456789abcdef0123:credential-SECRET-7f3a"
HUB_AUDIENCE = "http://hub.example"
WITNESS_AUDIENCE = "http://witness.example"
TIMEOUT = (1.0, 1.0)


class TokenMint:
    """Accounts' token route: checks the credential and mints a new token per request."""

    def __init__(self, expires_in: float = 300):
        self.expires_in = expires_in
        self.issued: dict[str, str] = {}  # token → audience

    def __call__(self, request: Request) -> Reply:
        if request.headers.get("authorization") != f"Bearer {CREDENTIAL}":
            return Reply(401, {"error": {"code": "unauthorized", "message": "bad credential"}})
        token = f"tok-SECRET-{len(self.issued) + 1}"
        self.issued[token] = request.body["audience"]
        return Reply(200, {"access_token": token, "token_type": "Bearer", "expires_in": self.expires_in})

    def audience_of(self, request: Request) -> str | None:
        """The audience of the token a product request carried, if we minted it."""
        bearer = request.headers.get("authorization", "").removeprefix("Bearer ")
        return self.issued.get(bearer)


@pytest.fixture
def suite():
    server = SuiteServer().start()
    yield server
    server.stop()


@pytest.fixture
def mint(suite) -> TokenMint:
    mint = TokenMint()
    suite.route("POST", "/api/token/service", mint)
    return mint


@pytest.fixture
def naps() -> list[float]:
    """The backoff sleeps a client asked for, so no test really waits."""
    return []


@pytest.fixture
def accounts(suite, mint, naps) -> Accounts:
    return Accounts(suite.url, CREDENTIAL, timeout=TIMEOUT, sleep=naps.append)


@pytest.fixture
def pipeline(suite, accounts, naps) -> SuperPipeline:
    return SuperPipeline(suite.url, accounts, timeout=TIMEOUT, sleep=naps.append)


@pytest.fixture
def pod(suite, accounts, naps) -> AgentPod:
    return AgentPod(suite.url, HUB_AUDIENCE, accounts, timeout=TIMEOUT, sleep=naps.append)


@pytest.fixture
def witness(suite, accounts, naps) -> SuperWitness:
    return SuperWitness(suite.url, WITNESS_AUDIENCE, accounts, timeout=TIMEOUT, sleep=naps.append)
