"""Settle what became of each card SuperDispatch decided on, from one read of its board."""
from __future__ import annotations

import logging
from datetime import datetime
from typing import NamedTuple

from records import actions, history
from records.models import Decision
from superdispatch.clients import BoardCard, BoardRead

log = logging.getLogger("superdispatch.loop")


class Outcome(NamedTuple):
    status: str
    by: str | None
    at: datetime


def outcome(decision: Decision, card: BoardCard | None, now: datetime) -> Outcome | None:
    """What became of a decision's card, or None while it is still undecided.

    Judged from the card's own times, not from when this pass happens to run:
    - a claim in the decision's ladder settles it by whoever claimed, even after the hold
      lapsed (a winner that claims late is `claimed`, not a no-show);
    - a hold that lapsed before the card left its ladder unclaimed is `expired`;
    - a card that left its ladder (moved, archived, gone) while held, or while nobody was
      held, was moved by a person: `superseded`;
    - otherwise the card still waits: a live hold, or a decision that held nobody.
    """
    ladder_start = decision.ladder_ready_at or decision.created_at
    if card is not None and card.claimed_at is not None and card.claimed_at >= ladder_start:
        by = card.delegate_agent_id
        status = "claimed" if by is not None and by == decision.chosen else "claimed-by-other"
        return Outcome(status, by, card.claimed_at)
    left_at = _left_ladder_at(decision, card, now)
    lapsed = decision.reserved_until
    if lapsed is not None and lapsed <= (left_at or now):
        return Outcome("expired", None, lapsed)
    if left_at is not None:
        return Outcome("superseded", None, left_at)
    return None


def _left_ladder_at(decision: Decision, card: BoardCard | None, now: datetime) -> datetime | None:
    """When the card left the decision's ladder without a claim, or None if it has not."""
    if card is None:
        return now  # gone from the board; when, the board no longer says
    if card.archived_at is not None:
        return card.archived_at
    if card.stage_key != decision.stage_key or card.ready_at != decision.ladder_ready_at:
        return card.ready_at  # a new ladder began when it became ready again
    return None


def settle_board(read: BoardRead, now: datetime) -> int:
    """Settle every unsettled decision on the board; returns how many settled."""
    settled = 0
    for decision in history.unsettled_on_board(read.board_id):
        result = outcome(decision, read.card(decision.card_id), now)
        if result is None or not actions.do_settle(decision.id, *result):
            continue
        settled += 1
        by = f" by {result.by}" if result.by else ""
        fields = {"board": decision.board_id, "card": decision.card_id, "decision": decision.id}
        if result.by:
            fields["agent"] = result.by
        log.info("loop: %s %s %s settled %s%s", decision.board_id, decision.card_id,
                 decision.id, result.status, by, extra=fields)
    return settled
