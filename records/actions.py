"""Every write to SuperDispatch's store goes through a named function here.

Views, admin actions, commands and tasks all call these, so a rule lives in one place.
"""
from __future__ import annotations

from datetime import datetime

from django.db import transaction

from records.models import Board, Suggestion

# Called after a board is opted in or out, once the row is committed. The loop installs
# its hook (set the placement window, look at the board) here; until then nothing runs.
board_hooks: list = []


@transaction.atomic
def do_opt_in(board_id: str, now: datetime) -> Board:
    """Add a board to every sweep, or enable it again; the row is created on first opt-in."""
    board, created = Board.objects.select_for_update().get_or_create(
        board_id=board_id, defaults={"enabled": True, "created_at": now, "updated_at": now})
    if not created and not board.enabled:
        board.enabled = True
        board.updated_at = now
        board.window_retry_at = None
        board.save(update_fields=["enabled", "updated_at", "window_retry_at"])
    _after_commit(board_id, True)
    return board


@transaction.atomic
def do_opt_out(board_id: str, now: datetime) -> Board | None:
    """Take a board out of the sweeps; its row and decisions stay."""
    board = Board.objects.select_for_update().filter(board_id=board_id).first()
    if board is None:
        return None
    if board.enabled:
        board.enabled = False
        board.updated_at = now
        board.window_retry_at = None
        board.save(update_fields=["enabled", "updated_at", "window_retry_at"])
    _after_commit(board_id, False)
    return board


def _after_commit(board_id: str, enabled: bool) -> None:
    for hook in board_hooks:
        transaction.on_commit(lambda hook=hook: hook(board_id, enabled))


def do_dismiss_suggestion(suggestion: Suggestion, now: datetime) -> Suggestion:
    """Dismiss a suggestion; dismissing again changes nothing."""
    updated = Suggestion.objects.filter(pk=suggestion.pk, dismissed_at__isnull=True).update(
        dismissed_at=now)
    if updated:
        suggestion.dismissed_at = now
    else:
        suggestion.refresh_from_db(fields=["dismissed_at"])
    return suggestion
