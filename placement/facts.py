"""The facts one placement decision is made from.

The loop gathers these from the suite and SuperDispatch's own store; placement reads
nothing else. Every type is frozen, so a decision can be replayed from recorded facts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Mapping, NamedTuple, Protocol

ISOLATION_ORDER = ("host", "container", "sandbox")
PROOF_ORDER = ("declared", "installed", "probed")


@dataclass(frozen=True)
class Requires:
    """The capability a stage asks for: every one of `all`, and one of `any` when given."""

    all: tuple[str, ...] = ()
    any: tuple[str, ...] = ()


@dataclass(frozen=True)
class StationNeeds:
    """A stage's `placement`: what a station must have to work it."""

    isolation: str | None = None
    models: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    credentials: tuple[str, ...] = ()

    @property
    def states_anything(self) -> bool:
        return bool(self.isolation or self.models or self.tools or self.credentials)


@dataclass(frozen=True)
class Card:
    """A ready card. Its ladder is identified by (card_id, stage_key, ready_at)."""

    board_id: str
    card_id: str
    stage_key: str
    requires: Requires
    needs: StationNeeds | None
    ready_at: datetime
    priority: int = 0


@dataclass(frozen=True)
class RosterRow:
    """One bridge row of AgentPod's roster for the board."""

    agent_id: str
    principal_id: str | None
    station_id: str | None
    enabled: bool
    ready: bool
    busy: bool
    last_took_work_at: datetime | None
    key: str = ""


class Verdict(Protocol):
    """SuperPipeline's eligibility verdict on one agent of the workspace for the card: what
    placement reads of it.

    Every card's read brings one for each agent of the workspace, thousands of them, so
    placement takes any value with these fields as it comes: the client hands on the ones
    its decoder made, rather than copy each into an `AgentVerdict` first (that copy took
    longer than the whole decode)."""

    @property
    def agent_id(self) -> str: ...

    @property
    def principal_id(self) -> str | None: ...

    @property
    def eligible(self) -> bool: ...

    @property
    def reasons(self) -> tuple[str, ...]: ...


class AgentVerdict(NamedTuple):
    """A `Verdict` made in Python (replayed facts, tests, benches).

    A named tuple, not a frozen dataclass like its neighbours: thousands are made a card,
    and a tuple is made several times faster."""

    agent_id: str
    principal_id: str | None
    eligible: bool
    reasons: tuple[str, ...] = ()


@dataclass(frozen=True)
class AgentLoad:
    """One row of SuperPipeline's `GET /v1/agents/load` (read only with candidates=all)."""

    agent_id: str
    principal_id: str | None
    in_flight: int
    capacity: int | None
    last_heartbeat_at: datetime | None


@dataclass(frozen=True)
class RegistryFact:
    """One fact of AgentPod's capability registry, with how it is known."""

    value: str
    proof: str  # declared < installed < probed


@dataclass(frozen=True)
class Station:
    """One station of AgentPod's capability registry."""

    station_id: str
    runtime: str | None = None
    harness: str | None = None
    occupant: str | None = None
    isolation: RegistryFact | None = None
    models: tuple[RegistryFact, ...] = ()
    tools: tuple[RegistryFact, ...] = ()
    credentials: tuple[RegistryFact, ...] = ()


@dataclass(frozen=True)
class Run:
    """A finished SuperWitness run at the board stage, by its executor principal."""

    principal_id: str
    succeeded: bool
    ended_at: datetime
    mark: float | None = None  # the newest verdict's pass mark; None when it gave none


@dataclass(frozen=True)
class PolicyVerdict:
    """Accounts' dispatch-policy answer for one agent, plus our own count for a limit."""

    allow: bool
    reasons: tuple[str, ...] = ()
    policy_version: str | None = None
    limit_max_runs: int | None = None
    limit_window_hours: float | None = None
    holds_in_window: int = 0  # holds SuperDispatch made for the agent within the limit's window


@dataclass(frozen=True)
class PolicyFacts:
    """What the dispatch policy said this pass (present only with SUPERDISPATCH_POLICY=on)."""

    verdicts: Mapping[str, PolicyVerdict]  # by agent id; an agent absent here was unread
    last_answer_no_policy: bool = False


@dataclass(frozen=True)
class HoldLog:
    """SuperDispatch's own holds as of `now`, live, lapsed and settled, that the filters and scoring read."""

    holding: frozenset[str] = frozenset()  # agents with a live hold on another card
    lapses: Mapping[str, tuple[datetime, ...]] = field(default_factory=dict)  # unclaimed lapses
    settled: Mapping[str, tuple[int, int]] = field(default_factory=dict)  # (claimed, settled) here


@dataclass(frozen=True)
class Timing:
    """How soon agents claim and how long they work, as our own settled holds and their runs
    show, and when each agent's current run began. Read only for a formula that needs it
    (`formulas.Need.TIMING`)."""

    claim_latency_s: Mapping[str, float] = field(default_factory=dict)  # typical hold-to-claim
    run_s: Mapping[str, tuple[float, ...]] = field(default_factory=dict)  # recent claim-to-run-end
    working_since: Mapping[str, datetime] = field(default_factory=dict)  # its current run's start
    # p95 hold-to-claim, for agents with enough settled holds (read for a formula that sizes holds)
    claim_p95_s: Mapping[str, float] = field(default_factory=dict)
    # typical readyAt-to-claim where nobody held the card (read for a formula that may step aside)
    pull_claim_s: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Ladder:
    """The card's current ladder: holds made so far and who they lapsed on, by identity."""

    step: int = 0  # holds already made on this ladder
    passed_over: frozenset[str] = frozenset()
    open: bool = False  # open to any match: held again only on a new ladder


@dataclass(frozen=True)
class Facts:
    """Everything one decision reads. `None` marks a source that was not read."""

    card: Card
    roster: tuple[RosterRow, ...]
    eligibility: tuple[Verdict, ...]
    load: tuple[AgentLoad, ...] | None = None  # read only with candidates=all
    registry: tuple[Station, ...] | None = None  # None: unread (or station filters off)
    runs: Mapping[str, tuple[Run, ...]] | None = (
        None  # SuperWitness's, at the stage, by principal; None: unread
    )
    policy: PolicyFacts | None = None  # None: policy off
    holds: HoldLog = field(default_factory=HoldLog)
    ladder: Ladder = field(default_factory=Ladder)
    timing: Timing | None = None  # None: unread (the default formula needs none of it)
    # The board's placement window as set, for a formula that sets it per board; None: the rules'.
    window_s: int | None = None
