"""Each board's placement window on SuperPipeline: set on opt-in, zero on opt-out, retried."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.db.models import Q

from access.audit import SERVICE, Actor
from placement import Rules
from records.models import Board
from records.store.actions.boards import do_note_window
from superdispatch.clients import ClientError
from superdispatch.loop import arms
from superdispatch.loop.board_windows import board_window
from superdispatch.loop.context import Loop

log = logging.getLogger("superdispatch.loop")
RETRY_AFTER = timedelta(minutes=5)


def wanted_window(board: Board, loop: Loop, now: datetime, rules: Rules | None = None) -> int:
    """The configured window on an opted-in board, or, for a formula that sets each board's
    window, the board's own (`board_windows.py`); none on a board opted out, nor on one that
    runs pull, which keeps pull off a card for no hold. `rules`: what the board runs now
    (`loop/arms.py`), the deployment's when not given."""
    if not board.enabled:
        return 0
    if rules is None:
        rules = arms.running(loop, [board.board_id], now).get(board.board_id, arms.deployment(loop)).rules
    if rules.pull_arm:
        return 0
    if rules.declared_formula.sets_windows:
        return board_window(loop, board.board_id, now)
    return loop.cfg.placement_window_seconds


def set_window(
    loop: Loop, board: Board, now: datetime, by: Actor = SERVICE, seconds: int | None = None
) -> bool:
    """Ask SuperPipeline for the board's window; a refusal is retried after five minutes.
    `by` is who opted the board in or out, for the audit trail."""
    if seconds is None:
        seconds = wanted_window(board, loop, now)
    try:
        accepted = loop.clients.superpipeline.set_placement_window(board.board_id, seconds)
    except ClientError as err:
        log.warning(
            "loop: %s placement window refused, retrying in 5 minutes: %s",
            board.board_id,
            err.code,
            extra={"board": board.board_id},
        )
        do_note_window(board.board_id, None, now + RETRY_AFTER)
        return False
    do_note_window(board.board_id, accepted, None, now, by=by)
    log.info("loop: %s placement window %ds", board.board_id, accepted, extra={"board": board.board_id})
    return True


def ensure_windows(loop: Loop, now: datetime) -> None:
    """Set every window that differs from what is wanted and is due for another try. A board
    that runs other than the deployment (its own formula, an experiment's arm) is weighed by
    what it runs; at a switch of arm its window follows within a sweep."""
    running = arms.running(loop, None, now)
    own = Board.objects.filter(board_id__in=list(running)) if running else Board.objects.none()
    rest = Board.objects.exclude(board_id__in=list(running)) if running else Board.objects.all()
    due = Q(window_retry_at__isnull=True) | Q(window_retry_at__lte=now)
    for board in own.filter(due):
        _ensure_window(loop, board, now, running[board.board_id].rules)
    if loop.rules.declared_formula.sets_windows:
        _ensure_board_windows(loop, now, rest.filter(due))
        return
    wanted = loop.cfg.placement_window_seconds
    differs = (Q(enabled=True) & (Q(window_seconds__isnull=True) | ~Q(window_seconds=wanted))) | (
        Q(enabled=False) & Q(window_seconds__isnull=False) & ~Q(window_seconds=0)
    )
    for board in rest.filter(differs & due):
        set_window(loop, board, now, seconds=wanted_window(board, loop, now, loop.rules))


def _ensure_board_windows(loop: Loop, now: datetime, boards) -> None:
    """Each board's own window, for a formula that sets it: every board opted in is weighed."""
    for board in boards.filter(Q(enabled=True) | (Q(window_seconds__isnull=False) & ~Q(window_seconds=0))):
        _ensure_window(loop, board, now, loop.rules)


def _ensure_window(loop: Loop, board: Board, now: datetime, rules: Rules) -> None:
    seconds = wanted_window(board, loop, now, rules)
    if board.window_seconds != seconds:
        set_window(loop, board, now, seconds=seconds)
