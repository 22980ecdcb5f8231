"""What the stand-in for SuperPipeline keeps: boards and their cards, the workspace's agents, the
holds it granted and the claims made, and the capability rule a stage asks agents to meet."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from .scenario import StageSpec


@dataclass(frozen=True)
class Reservation:
    agent_id: str
    reserved_until: datetime


@dataclass(frozen=True)
class Grant:
    """One hold SuperPipeline granted: what a test or bench checks SuperDispatch's records by."""

    card_id: str
    agent_id: str
    at: datetime
    reserved_until: datetime


@dataclass
class Card:
    id: str
    seq: int  # creation order, the last tie-break between equally old cards
    board_id: str
    title: str
    stage_key: str
    state: str
    priority: int
    ready_at: datetime
    created_at: datetime
    updated_at: datetime
    claimed_at: datetime | None = None
    delegate_agent_id: str | None = None
    archived_at: datetime | None = None
    reservation: Reservation | None = None  # kept after it lapses, until a claim or move
    attempt_count: int = 0
    grants: frozenset[str] | None = None  # the agents its own grant admits; None: no grant of its own


@dataclass
class Board:
    id: str
    tenant_id: str
    name: str
    stages: tuple[StageSpec, ...]
    placement_window_seconds: int = 0
    cards: dict[str, Card] = field(default_factory=dict)  # on the board and not finished
    finished: dict[str, Card] = field(default_factory=dict)  # completed or archived, still shown

    def stage(self, key: str) -> StageSpec | None:
        return next((s for s in self.stages if s.key == key), None)

    def stage_after(self, key: str) -> StageSpec | None:
        keys = [s.key for s in self.stages]
        index = keys.index(key)
        return self.stages[index + 1] if index + 1 < len(self.stages) else None


@dataclass
class WorkspaceAgent:
    id: str
    principal_id: str | None
    capabilities: frozenset[str]
    grants: frozenset[str] | None  # boards it may claim on; None: every board
    concurrency: int  # cards it may work at once on one board
    capacity: int | None
    last_claim_at: datetime | None = None
    last_heartbeat_at: datetime | None = None


@dataclass(frozen=True)
class Claim:
    card: Card
    agent_id: str
    reserved: bool  # claimed under its own live hold
    wait_seconds: float  # from readyAt to the claim


def stage_requires(stage: StageSpec) -> dict:
    """The capability a stage asks for: `requires` when it says anything, else its owner."""
    requires = stage.requires
    if requires and (requires["all"] or requires["any"]):
        return {"all": list(requires["all"]), "any": list(requires["any"])}
    return {"all": [stage.owner], "any": []}


def has_capability(capabilities: frozenset[str], requires: dict) -> bool:
    return all(c in capabilities for c in requires["all"]) and (
        not requires["any"] or any(c in capabilities for c in requires["any"])
    )
