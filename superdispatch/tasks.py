"""Celery tasks: thin wrappers that pass ids to the loop. State lives in our own tables."""
from __future__ import annotations

import logging

from celery import shared_task
from django.utils import timezone

from records import actions
from records.models import Board
from superdispatch.loop import Loop, look_at_board, place_one, sweep
from superdispatch.loop.windows import set_window

log = logging.getLogger("superdispatch.loop")
_loop: Loop | None = None

# A board leased by another pass is tried again shortly, for about ten seconds at most:
# a card.ready must be placed within its placement window or pull takes the card.
LEASED_RETRY_S = 0.25
LEASED_RETRIES = 40


def loop() -> Loop:
    """One loop per worker process, so clients keep their sessions and cached tokens."""
    global _loop
    if _loop is None:
        _loop = Loop.from_settings()
    return _loop


@shared_task(name="superdispatch.sweep", ignore_result=True)
def sweep_task() -> None:
    summary = sweep(loop())
    if summary.backoff_until is not None and not summary.boards:
        return
    log.info("loop: sweep: %s", summary.line())


@shared_task(bind=True, name="superdispatch.place_card", ignore_result=True,
             max_retries=LEASED_RETRIES)
def place_card_task(self, board_id: str, card_id: str) -> None:
    if place_one(loop(), board_id, card_id).skipped:
        raise self.retry(countdown=LEASED_RETRY_S)


@shared_task(bind=True, name="superdispatch.look_at_board", ignore_result=True,
             max_retries=LEASED_RETRIES)
def look_at_board_task(self, board_id: str) -> None:
    if look_at_board(loop(), board_id).skipped:
        raise self.retry(countdown=LEASED_RETRY_S)


@shared_task(name="superdispatch.board_changed", ignore_result=True)
def board_changed_task(board_id: str) -> None:
    """After an opt-in or opt-out: set the placement window, and look at an opted-in board."""
    board = Board.objects.filter(board_id=board_id).first()
    if board is None:
        return
    the_loop = loop()
    set_window(the_loop, board, the_loop.clock())
    if board.enabled:
        look_at_board_task.delay(board_id)


@shared_task(name="superdispatch.prune_deliveries", ignore_result=True)
def prune_deliveries_task() -> None:
    """Forget relay delivery ids older than a redelivery is recognised for (a day)."""
    actions.do_prune_deliveries(timezone.now() - actions.DELIVERIES_KEPT)
