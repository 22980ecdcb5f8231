"""A board as SuperPipeline's read shows it: its stages and cards, which of them are ready,
and each ready card as placement reads it. The client makes these (`superpipeline.py`) from
the answer's wire types (`superpipeline_wire.py`); the loop reads them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import cached_property

import msgspec

from placement.facts import Card, Requires, StationNeeds

CAPABILITY_LANE = "capability"
READY_STATE = "submitted"


@dataclass(frozen=True)
class Reservation:
    """A hold on a card for one agent, until `reserved_until`."""

    agent_id: str
    reserved_until: datetime


@dataclass(frozen=True)
class Stage:
    key: str
    name: str
    order: int
    owner_kind: str  # capability | agent | human
    owner: str | None
    requires: Requires  # `requires` when set, else {"all": [owner], "any": []}
    needs: StationNeeds | None  # the stage's `placement`; None when it states none


class BoardCard(msgspec.Struct, frozen=True, gc=False):
    """A card as the board read shows it, with every field of the contract. A Struct, not a
    dataclass: a board read makes one for every card still on the board, hundreds a read on
    a board that keeps its finished cards, and a dataclass's `__init__` took longer than
    decoding them."""

    card_id: str
    title: str
    stage_key: str
    state: str
    delegate_agent_id: str | None
    priority: int
    ready_at: datetime
    claimed_at: datetime | None
    archived_at: datetime | None
    reservation: Reservation | None
    created_at: datetime
    updated_at: datetime
    attempt_count: int


@dataclass(frozen=True)
class BoardRead:
    """One read of a board: its stages and every card still on it."""

    board_id: str
    tenant_id: str
    name: str
    stages: tuple[Stage, ...]
    cards: tuple[BoardCard, ...]

    def stage(self, key: str) -> Stage | None:
        return next((s for s in self.stages if s.key == key), None)

    def card(self, card_id: str) -> BoardCard | None:
        """The card, or None when it has left the board (archived or deleted)."""
        return self._by_id.get(card_id)

    @cached_property
    def _by_id(self) -> dict[str, BoardCard]:
        # Settling asks for the card of each unsettled decision on the board: not a walk of
        # every card each time, on a board of hundreds.
        return {c.card_id: c for c in reversed(self.cards)}

    def is_ready(self, card: BoardCard, now: datetime) -> bool:
        """Submitted, in a capability lane, not archived, and with no live hold."""
        stage = self.stage(card.stage_key)
        return (
            card.state == READY_STATE
            and stage is not None
            and stage.owner_kind == CAPABILITY_LANE
            and card.archived_at is None
            and (card.reservation is None or card.reservation.reserved_until <= now)
        )

    def ready_cards(self, now: datetime) -> tuple[BoardCard, ...]:
        return tuple(c for c in self.cards if self.is_ready(c, now))

    def placement_card(self, card: BoardCard) -> Card:
        """The card as placement reads it, with its stage's requires and needs."""
        stage = self.stage(card.stage_key)
        if stage is None:
            raise ValueError(f"card {card.card_id} is in a stage this board does not have")
        return Card(
            board_id=self.board_id,
            card_id=card.card_id,
            stage_key=card.stage_key,
            requires=stage.requires,
            needs=stage.needs,
            ready_at=card.ready_at,
            priority=card.priority,
        )

    def placement_cards(self, now: datetime) -> tuple[Card, ...]:
        """Every ready card, in board order, as placement reads it."""
        return tuple(self.placement_card(c) for c in self.ready_cards(now))
