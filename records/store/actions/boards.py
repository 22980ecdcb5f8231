"""A board's writes: opted in and out (and announced), its lease, its read and its window."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

from django.db import transaction
from django.db.models import Q

from access.actions import do_record
from access.audit import SERVICE, Actor
from common.times import Moment, moment
from records.models import Board
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
            board_id=board_id, defaults={"enabled": True, "created_at": at, "updated_at": at,
                                         "change_pending_until": at + CHANGE_PENDING_AT_MOST})
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
    do_record(by, "board.opt-in" if enabled else "board.opt-out", board.board_id,
              {"enabled": not enabled}, {"enabled": enabled}, now)
    if announce:
        _announce(board)


def _announce(board: Board) -> None:
    board_id, enabled = board.board_id, board.enabled
    transaction.on_commit(lambda: board_changed.send_robust(Board, board_id=board_id,
                                                            enabled=enabled))


# --- The lease that keeps passes apart, the board's last read, and its placement window ----

def do_take_lease(board_id: str, owner: str, now: datetime, until: datetime) -> bool:
    """Lease a board for one pass; False when another pass holds it (compare-and-set)."""
    free = Q(lease_until__isnull=True) | Q(lease_until__lte=now) | Q(lease_owner=owner)
    return Board.objects.filter(free, board_id=board_id).update(
        lease_owner=owner, lease_until=until) == 1


def do_release_lease(board_id: str, owner: str, waiting: tuple[int, int] | None = None) -> None:
    """Let the board go. `waiting`: what `do_note_waiting` notes, (on load, on holds), written
    in the same statement, as a pass over the whole board lets it go: one write a board, not
    two. A pass whose lease another has taken since notes nothing; that one notes its own."""
    counts = {} if waiting is None else {"waiting_on_load": waiting[0], "waiting_on_holds": waiting[1]}
    Board.objects.filter(board_id=board_id, lease_owner=owner).update(
        lease_owner="", lease_until=None, **counts)


def do_note_read(board_id: str, now: datetime, error: str = "") -> None:
    fields = {"last_read_error": error[:200]}
    if not error:
        fields["last_read_at"] = now
    Board.objects.filter(board_id=board_id).update(**fields)


def do_note_waiting(board_id: str, on_load: int, on_holds: int) -> None:
    """How many of the board's ready cards its last whole pass left waiting unrecorded, and
    why (`waiting-on-load`, `waiting-on-holds`). Written only when the counts changed, so a
    board whose cards wait alike sweep after sweep costs a read, not a write."""
    (Board.objects.filter(board_id=board_id)
     .exclude(waiting_on_load=on_load, waiting_on_holds=on_holds)
     .update(waiting_on_load=on_load, waiting_on_holds=on_holds))


def do_note_window(board_id: str, seconds: int | None, retry_at: datetime | None,
                   now: datetime | None = None, *, by: Actor = SERVICE) -> None:
    """The window SuperPipeline accepted (None: refused) and when to ask again. A window
    that changed is in the audit trail, by whoever opted the board in or out (the loop itself when
    a sweep sets it again)."""
    fields: dict = {"window_retry_at": retry_at}
    if seconds is None:
        Board.objects.filter(board_id=board_id).update(**fields)
        return
    fields["window_seconds"] = seconds
    with transaction.atomic():
        before = (Board.objects.select_for_update().filter(board_id=board_id)
                  .values_list("window_seconds", flat=True).first())
        if Board.objects.filter(board_id=board_id).update(**fields) and before != seconds:
            do_record(by, "board.window", board_id, {"windowSeconds": before},
                      {"windowSeconds": seconds}, now or datetime.now(timezone.utc))
