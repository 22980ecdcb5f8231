"""A board's writes: opted in and out (and announced), its lease, its read and its window."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from django.db import connection, transaction

from access.actions import do_record
from access.audit import SERVICE, Actor
from common.times import Moment, moment
from records.models import Board
from records.store import prepared
from records.store.signals import board_changed

# An announced change whose task has not started by then is taken as lost (with the broker, or
# with a process that died before sending it): the next change is announced again. Until then
# the sweep sets the board's window and passes it anyway.
CHANGE_PENDING_AT_MOST = timedelta(minutes=2)


@transaction.atomic
def do_opt_in(board_id: str, now: Moment, *, by: Actor = SERVICE) -> Board:
    """Add a board to every sweep, or enable it again; the row is created on first opt-in.
    Enabling an enabled board writes, records and announces nothing. A clock for `now` is read
    once the board's row is locked, so the audit trail's times follow the commits."""
    board = Board.objects.select_for_update().filter(board_id=board_id).first()
    if board is None:
        at = moment(now)
        board, created = Board.objects.select_for_update().get_or_create(
            board_id=board_id,
            defaults={
                "enabled": True,
                "created_at": at,
                "updated_at": at,
                "change_pending_until": at + CHANGE_PENDING_AT_MOST,
            },
        )
        if created:
            do_record(by, "board.opt-in", board_id, None, {"enabled": True}, at)
            _announce(board)
            return board
    if not board.enabled:
        _set_enabled(board, True, moment(now), by)
    return board


@transaction.atomic
def do_opt_out(board_id: str, now: Moment, *, by: Actor = SERVICE) -> Board | None:
    """Take a board out of the sweeps; its row and decisions stay. Disabling a disabled board
    writes, records and announces nothing. A clock for `now` is read once the row is locked."""
    board = Board.objects.select_for_update().filter(board_id=board_id).first()
    if board is None:
        return None
    if board.enabled:
        _set_enabled(board, False, moment(now), by)
    return board


def do_take_board_change(board_id: str) -> None:
    """The task acting on a board's changes has started (it reads the board after this), or
    was never sent: the next change is announced again."""
    Board.objects.filter(board_id=board_id).update(change_pending_until=None)


def _set_enabled(board: Board, enabled: bool, now: datetime, by: Actor) -> None:
    """Turn a board on or off, in the audit trail; a change asks for its placement window
    afresh. It is announced unless a change announced before is still waiting for its task,
    which reads the board as it is when it starts, and so acts on this change too."""
    board.enabled = enabled
    board.updated_at = now
    board.window_retry_at = None
    fields = ["enabled", "updated_at", "window_retry_at"]
    announce = board.change_pending_until is None or board.change_pending_until <= now
    if announce:
        board.change_pending_until = now + CHANGE_PENDING_AT_MOST
        fields.append("change_pending_until")
    board.save(update_fields=fields)
    do_record(
        by,
        "board.opt-in" if enabled else "board.opt-out",
        board.board_id,
        {"enabled": not enabled},
        {"enabled": enabled},
        now,
    )
    if announce:
        _announce(board)


def _announce(board: Board) -> None:
    board_id, enabled = board.board_id, board.enabled
    transaction.on_commit(lambda: board_changed.send_robust(Board, board_id=board_id, enabled=enabled))


# --- The lease that keeps passes apart, the board's last read, and its placement window ----

# A pass takes and lets go each board's lease and notes its read, three writes a board, in
# plain SQL prepared once a connection: through the ORM each cost more of the sweep's CPU than
# the store spent on it (docs/performance.md).
_BOARDS = Board._meta.db_table


def do_take_lease(board_id: str, owner: str, now: datetime, until: datetime) -> bool:
    """Lease a board for one pass; False when another pass holds it (compare-and-set)."""
    adapt = connection.ops.adapt_datetimefield_value
    with prepared.cursor() as cursor:
        cursor.execute(
            f"UPDATE {_BOARDS} SET lease_owner = %s, lease_until = %s WHERE board_id = %s "
            "AND (lease_until IS NULL OR lease_until <= %s OR lease_owner = %s)",
            [owner, adapt(until), board_id, adapt(now), owner],
        )
        return cursor.rowcount == 1


def do_release_lease(board_id: str, owner: str, waiting: tuple[int, int] | None = None) -> None:
    """Let the board go. `waiting`: what `do_note_waiting` notes, (on load, on holds), written
    in the same statement, as a pass over the whole board lets it go: one write a board, not
    two. A pass whose lease another has taken since notes nothing; that one notes its own."""
    with prepared.cursor() as cursor:
        if waiting is None:
            cursor.execute(
                f"UPDATE {_BOARDS} SET lease_owner = '', lease_until = NULL "
                "WHERE board_id = %s AND lease_owner = %s",
                [board_id, owner],
            )
        else:
            cursor.execute(
                f"UPDATE {_BOARDS} SET lease_owner = '', lease_until = NULL, "
                "waiting_on_load = %s, waiting_on_holds = %s "
                "WHERE board_id = %s AND lease_owner = %s",
                [*waiting, board_id, owner],
            )


def do_note_read(board_id: str, now: datetime, error: str = "") -> None:
    """The board's last read: when it was read, or why it could not be (its time kept)."""
    with prepared.cursor() as cursor:
        if error:
            cursor.execute(
                f"UPDATE {_BOARDS} SET last_read_error = %s WHERE board_id = %s", [error[:200], board_id]
            )
        else:
            cursor.execute(
                f"UPDATE {_BOARDS} SET last_read_error = '', last_read_at = %s WHERE board_id = %s",
                [connection.ops.adapt_datetimefield_value(now), board_id],
            )


def do_note_waiting(board_id: str, on_load: int, on_holds: int) -> None:
    """How many of the board's ready cards its last whole pass left waiting unrecorded, and
    why (`waiting-on-load`, `waiting-on-holds`). Written only when the counts changed, so a
    board whose cards wait alike sweep after sweep costs a read, not a write."""
    (
        Board.objects.filter(board_id=board_id)
        .exclude(waiting_on_load=on_load, waiting_on_holds=on_holds)
        .update(waiting_on_load=on_load, waiting_on_holds=on_holds)
    )


def do_note_window(
    board_id: str,
    seconds: int | None,
    retry_at: datetime | None,
    now: datetime | None = None,
    *,
    by: Actor = SERVICE,
) -> None:
    """The window SuperPipeline accepted (None: refused) and when to ask again. A window
    that changed is in the audit trail, by whoever opted the board in or out (the loop itself when
    a sweep sets it again)."""
    fields: dict = {"window_retry_at": retry_at}
    if seconds is None:
        Board.objects.filter(board_id=board_id).update(**fields)
        return
    fields["window_seconds"] = seconds
    with transaction.atomic():
        before = (
            Board.objects.select_for_update()
            .filter(board_id=board_id)
            .values_list("window_seconds", flat=True)
            .first()
        )
        if Board.objects.filter(board_id=board_id).update(**fields) and before != seconds:
            do_record(
                by,
                "board.window",
                board_id,
                {"windowSeconds": before},
                {"windowSeconds": seconds},
                now or datetime.now(timezone.utc),
            )
