"""How one sweep orders every board's ready cards, so a busy board does not starve a quiet one."""

from __future__ import annotations

from datetime import datetime
from itertools import zip_longest
from typing import Iterable

from .facts import Card

ROUND_ROBIN = "round-robin"
BOARD_ORDER = "board-order"
FAIRNESS = (ROUND_ROBIN, BOARD_ORDER)


def order_cards(ready: Iterable[tuple[str, Card]], fairness: str = ROUND_ROBIN) -> list[tuple[str, Card]]:
    """The sweep's cards in the order to place them.

    Each board's queue is SuperPipeline's own claim order: higher priority first, then the
    longest-waiting (oldest ready), then card id. So a hold never carries an old low-priority
    card past a newer urgent one that pull would have taken first. Across boards priority is
    not compared: `round-robin` takes one card from each board a round (each board's most
    urgent left), the longest-waiting first within a round; `board-order` takes every card of
    one board before the next, boards in the order they first appear.
    """
    if fairness not in FAIRNESS:
        raise ValueError(f"fairness must be one of {FAIRNESS}")
    queues: dict[str, list[Card]] = {}
    for board_id, card in ready:
        queues.setdefault(board_id, []).append(card)
    for queue in queues.values():
        queue.sort(key=_claim_order)
    boards = [[(board_id, card) for card in queue] for board_id, queue in queues.items()]
    if fairness == BOARD_ORDER:
        return [entry for board in boards for entry in board]
    ordered: list[tuple[str, Card]] = []
    for round_ in zip_longest(*boards):
        ordered.extend(sorted((entry for entry in round_ if entry is not None), key=_round_key))
    return ordered


def _claim_order(card: Card) -> tuple[int, datetime, str]:
    return (-card.priority, card.ready_at, card.card_id)


def _round_key(entry: tuple[str, Card]) -> tuple[datetime, str, str]:
    board_id, card = entry
    return (card.ready_at, board_id, card.card_id)
