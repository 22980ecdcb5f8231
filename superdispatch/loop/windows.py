"""Each board's placement window on SuperPipeline: set on opt-in, zero on opt-out, retried."""
from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.db.models import Q

from access.audit import SERVICE, Actor
from records.models import Board
from records.store import actions
from superdispatch.clients import ClientError
from superdispatch.loop.context import Loop

log = logging.getLogger("superdispatch.loop")
RETRY_AFTER = timedelta(minutes=5)


def wanted_window(board: Board, loop: Loop) -> int:
    return loop.cfg.placement_window_seconds if board.enabled else 0


def set_window(loop: Loop, board: Board, now: datetime, by: Actor = SERVICE) -> bool:
    """Ask SuperPipeline for the board's window; a refusal is retried after five minutes.
    `by` is who opted the board in or out, for the audit trail."""
    seconds = wanted_window(board, loop)
    try:
        accepted = loop.clients.superpipeline.set_placement_window(board.board_id, seconds)
    except ClientError as err:
        log.warning("loop: %s placement window refused, retrying in 5 minutes: %s",
                    board.board_id, err.code, extra={"board": board.board_id})
        actions.do_note_window(board.board_id, None, now + RETRY_AFTER)
        return False
    actions.do_note_window(board.board_id, accepted, None, now, by=by)
    log.info("loop: %s placement window %ds", board.board_id, accepted,
             extra={"board": board.board_id})
    return True


def ensure_windows(loop: Loop, now: datetime) -> None:
    """Set every window that differs from what is wanted and is due for another try."""
    wanted = loop.cfg.placement_window_seconds
    differs = (Q(enabled=True) & (Q(window_seconds__isnull=True) | ~Q(window_seconds=wanted))) | (
        Q(enabled=False) & Q(window_seconds__isnull=False) & ~Q(window_seconds=0))
    due = Q(window_retry_at__isnull=True) | Q(window_retry_at__lte=now)
    for board in Board.objects.filter(differs & due):
        set_window(loop, board, now)
