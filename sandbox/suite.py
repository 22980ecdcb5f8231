"""The whole suite in memory: one model per product, one lock, one entry point for requests."""

from __future__ import annotations

import random
import secrets
import threading
import time
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlsplit

from .accounts import Accounts
from .agentpod import AgentPod
from .clock import Clock, VirtualClock
from .pipeline import Pipeline
from .relay import Relay, Target
from .replies import bare_error
from .routes import dispatch
from .scenario import Scenario, load_scenario
from .witness import Witness

PRODUCTS = ("superpipeline", "accounts", "agentpod", "superwitness")
# How a whole product can fail (`Toggles.faults`): every route answers 503; every answer takes
# `Toggles.slow_seconds`, past a client's read timeout; every answer is a proxy's HTML page
# with a 200; every token is refused with a 401.
FAULTS = ("down", "slow", "garbage", "401")


class TimedOut(Exception):
    """No answer within the caller's timeout (the `slow` fault); the time has passed."""


@dataclass
class ProductUrls:
    """Where each product answers; a token's audience is the product's URL unless set apart."""

    superpipeline: str = "http://superpipeline.sandbox"
    accounts: str = "http://accounts.sandbox"
    agentpod: str = "http://agentpod.sandbox"
    superwitness: str = "http://superwitness.sandbox"
    agentpod_audience: str | None = None
    superwitness_audience: str | None = None

    def audience(self, product: str) -> str:
        explicit = getattr(self, f"{product}_audience", None)
        return explicit or getattr(self, product)

    def audiences(self) -> list[str]:
        return [self.audience(p) for p in PRODUCTS]

    def product_at(self, base: str) -> str | None:
        """The product answering at a base URL (`scheme://host:port`)."""
        wanted = base.rstrip("/").lower()
        return next((p for p in PRODUCTS if getattr(self, p).rstrip("/").lower() == wanted), None)


@dataclass
class Toggles:
    """Failures a test can switch on, each answering as the real product would."""

    reservation_verb: bool = True  # False: a SuperPipeline without the hold (404)
    agents_load_verb: bool = True  # False: a SuperPipeline without `GET /v1/agents/load` (404)
    station_registry: bool = True  # False: an AgentPod without the registry (404)
    accounts_up: bool = True  # False: every Accounts route answers 503
    superwitness_up: bool = True  # False: every SuperWitness route answers 503
    # board -> "500" | "404" | "garbage" | "shape"
    board_failures: dict[str, str] = field(default_factory=dict)
    # board -> seconds each read of it takes: a virtual clock is moved on that far, the wall
    # clock is waited out (outside the suite's lock, so the other products keep answering).
    slow: dict[str, float] = field(default_factory=dict)
    # product -> one of FAULTS: the whole product fails that way, on every route.
    faults: dict[str, str] = field(default_factory=dict)
    slow_seconds: float = 8.0  # how long a product under the `slow` fault takes to answer
    # A hold's PUT that times out: "made" holds the card and answers too late, "lost" times
    # out before anything is done; "" answers as usual.
    hold_timeout: str = ""


@dataclass(frozen=True)
class DispatchConfig:
    """What SuperDispatch is configured with to talk to this suite."""

    superpipeline_url: str
    org_plane_url: str
    agentpod_url: str
    agentpod_audience: str
    superwitness_url: str
    superwitness_audience: str
    credential: str
    relay_secret: str

    def as_env(self) -> dict[str, str]:
        """The same, as the environment variables the settings read."""
        return {
            "SUPERPIPELINE_URL": self.superpipeline_url,
            "ORG_PLANE_URL": self.org_plane_url,
            "AGENTPOD_URL": self.agentpod_url,
            "AGENTPOD_AUDIENCE": self.agentpod_audience,
            "SUPERWITNESS_URL": self.superwitness_url,
            "SUPERWITNESS_AUDIENCE": self.superwitness_audience,
            "ORG_PLANE_SERVICE_CREDENTIAL": self.credential,
            "TREATY_RELAY_DELIVERY_SECRET": self.relay_secret,
        }


class Suite:
    """SuperPipeline, AgentPod, Accounts, SuperWitness and the relay, over one scenario and clock."""

    def __init__(
        self,
        scenario: Scenario,
        clock: Clock | None = None,
        urls: ProductUrls | None = None,
        relay_target: Target = None,
        credential: str | None = None,
        relay_secret: str | None = None,
    ) -> None:
        """`credential` and `relay_secret`: the ones SuperDispatch is already configured with (else new)."""
        self.scenario = scenario
        self.clock: Clock = clock or VirtualClock(scenario.start)
        self.urls = urls or ProductUrls()
        self.toggles = Toggles()
        self.lock = threading.RLock()
        self.relay = Relay(relay_secret or secrets.token_hex(32), self.clock, relay_target)
        self.pipeline = Pipeline(self.clock, scenario.tenant_id, self.relay.publish)
        self.accounts = Accounts(self.clock, self.urls.audiences, scenario.policy)
        self.credential = self.accounts.add_credential(scenario.credential_scopes, credential)
        self.agentpod = AgentPod(self.pipeline, scenario.stations)
        credential_id = self.credential.partition(":")[0]
        self.agentpod.roster_readers.add(credential_id)
        self.agentpod.catalog_readers.add(credential_id)
        self.witness = Witness()
        self._build(scenario)

    @classmethod
    def from_scenario(cls, scenario: Scenario | str, clock: Clock | None = None, **kwargs) -> Suite:
        """A suite for a Scenario, a shipped scenario's name, or a scenario file's path."""
        return cls(scenario if isinstance(scenario, Scenario) else load_scenario(scenario), clock, **kwargs)

    def _build(self, scenario: Scenario) -> None:
        for board in scenario.boards:
            self.pipeline.add_board(board)
        for agent in scenario.agents:
            self.pipeline.add_agent(agent)
            self.agentpod.add_agent(agent.id, agent.station_id, agent.ready)
            for membership in agent.memberships:
                if membership.bridge:
                    self.agentpod.add_row(membership.board_id, membership.key, agent.id, membership.enabled)
        for board in scenario.boards:
            rng = random.Random(f"{scenario.seed}:initial:{board.id}")
            for _ in range(board.initial_cards):
                self.pipeline.add_card(board.id, priority=board.draw_priority(rng))

    def handle(
        self,
        method: str,
        url: str,
        query: dict[str, list[str]] | None = None,
        headers: dict[str, str] | None = None,
        body: bytes = b"",
        timeout: float | None = None,
    ) -> tuple[int, dict[str, str], bytes]:
        """Answer one request addressed to a product's URL (`<base><path>`, query in either place).

        `timeout`: how long the caller waits for an answer (an in-process transport's read
        timeout); a product under the `slow` fault that would take longer raises TimedOut once
        that much time has passed. Over HTTP the caller's socket times out instead."""
        split = urlsplit(url)
        product = self.urls.product_at(f"{split.scheme}://{split.netloc}")
        if product is None:
            return bare_error(404, "no product answers at this address").encoded()
        merged = parse_qs(split.query, keep_blank_values=True)
        for name, values in (query or {}).items():
            merged.setdefault(name, []).extend(values)
        if self.toggles.faults.get(product) == "slow":
            if timeout is not None and self.toggles.slow_seconds > timeout:
                self.wait(timeout)
                raise TimedOut(f"{product} did not answer within {timeout} s")
            self.wait(self.toggles.slow_seconds)
        delay = self._slowness(product, method, split.path)
        if delay:
            self.wait(delay)
        hold = (
            product == "superpipeline"
            and method.upper() == "PUT"
            and split.path.rstrip("/").endswith("/reservation")
        )
        if hold and self.toggles.hold_timeout == "lost":
            self._answer_late(product, timeout)
            return bare_error(504, "the hold was never made").encoded()  # nobody waits for it
        with self.lock:
            reply = dispatch(
                self, product, method, split.path or "/", merged, dict(headers or {}), body or b""
            )
        if hold and self.toggles.hold_timeout == "made":
            self._answer_late(product, timeout)
        return reply.encoded()

    def _answer_late(self, product: str, timeout: float | None) -> None:
        """Answer past the caller's timeout: TimedOut once it has passed (in-process), or the
        `slow` fault's delay before answering (over HTTP the caller's socket gives up first).
        Over HTTP the delay is wall time on any clock: a virtual clock moved on would answer
        at once, and the caller would never time out."""
        if timeout is not None:
            self.wait(timeout)
            raise TimedOut(f"{product} did not answer within {timeout} s")
        time.sleep(self.toggles.slow_seconds)

    def _slowness(self, product: str, method: str, path: str) -> float:
        """How long a board read takes under the `slow` toggle (0: no longer than usual)."""
        parts = path.strip("/").split("/")
        if (
            product != "superpipeline"
            or method.upper() != "GET"
            or len(parts) != 3
            or parts[:2] != ["v1", "boards"]
        ):
            return 0.0
        return float(self.toggles.slow.get(parts[2], 0.0))

    def wait(self, seconds: float) -> None:
        """Let time pass: a virtual clock moves on at once, the wall clock is slept."""
        advance = getattr(self.clock, "advance", None)
        if advance is not None:
            advance(seconds)
        else:
            time.sleep(seconds)

    def dispatch_config(self) -> DispatchConfig:
        """The URLs, audiences, credential and relay secret to configure SuperDispatch with."""
        return DispatchConfig(
            superpipeline_url=self.urls.superpipeline,
            org_plane_url=self.urls.accounts,
            agentpod_url=self.urls.agentpod,
            agentpod_audience=self.urls.audience("agentpod"),
            superwitness_url=self.urls.superwitness,
            superwitness_audience=self.urls.audience("superwitness"),
            credential=self.credential,
            relay_secret=self.relay.secret,
        )
