"""Every write to SuperDispatch's store goes through a named function here.

Views, admin actions, commands and tasks all call these, so a rule lives in one place.
"""
from __future__ import annotations

from datetime import datetime

from django.db import connection, transaction
from django.db.models import Q

from records import serializers
from records.models import Board, Candidate, Decision, Suggestion

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


# --- Decisions: recorded before the hold is asked for, settled on a later pass ------------

@transaction.atomic
def do_record_decision(placed, now: datetime, learned: dict | None = None) -> Decision:
    """Write a placement decision and every candidate in one transaction."""
    record = placed.to_record()
    decision = Decision.objects.create(**serializers.decision_columns(record),
                                       ladder_ready_at=placed.card.ready_at, learned=learned,
                                       created_at=now)
    # Candidates that passed every filter share one verdicts tuple: encode each tuple once.
    encoded: dict[int, tuple[str, str]] = {}
    rows = []
    for position, (c, rec) in enumerate(zip(placed.candidates, record["candidates"])):
        key = id(c.filters)
        if key not in encoded:
            encoded[key] = serializers.encode_verdicts(rec["filters"])
        rows.append(serializers.candidate_row(decision.id, position, rec, in_set=c.in_set,
                                              eligible=c.eligible, verdicts=encoded[key]))
    _insert_candidates(rows)
    return decision


def _insert_candidates(rows: list[tuple]) -> None:
    """Write a decision's candidates: COPY on PostgreSQL, else one executemany.

    Plain rows, not models through `bulk_create`: a 200-candidate decision sits on the relay's
    path to the hold, and on PostgreSQL `bulk_create` binds each column as an array that
    psycopg quotes element by element in Python, several times the cost of the write itself.
    The columns are the model's own, in the order `serializers.candidate_row` gives values.
    """
    if not rows:
        return
    quote = connection.ops.quote_name
    table = quote(Candidate._meta.db_table)
    columns = ", ".join(quote(f.column) for f in serializers.CANDIDATE_STORED)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            with cursor.cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        else:
            marks = ", ".join(["%s"] * len(serializers.CANDIDATE_STORED))
            cursor.executemany(f"INSERT INTO {table} ({columns}) VALUES ({marks})", rows)


def do_record_hold(decision: Decision, reserved_until: datetime) -> None:
    decision.reserved_until = reserved_until
    Decision.objects.filter(pk=decision.pk).update(reserved_until=reserved_until)


def do_record_refusal(decision: Decision, code: str, now: datetime) -> None:
    """SuperPipeline refused the hold: nothing was held, and the decision settles at once."""
    decision.reservation_refused = code
    decision.outcome_status, decision.outcome_at = "not-reserved", now
    Decision.objects.filter(pk=decision.pk).update(
        reservation_refused=code, outcome_status="not-reserved", outcome_at=now)


def do_settle(decision_id: str, status: str, by: str | None, at: datetime) -> bool:
    """Record what became of a decision's card; a decision settles once."""
    return Decision.objects.filter(pk=decision_id, outcome_status__isnull=True).update(
        outcome_status=status, outcome_by=by, outcome_at=at) == 1


# --- Boards: the lease that keeps passes apart, and the placement window ----------------

def do_take_lease(board_id: str, owner: str, now: datetime, until: datetime) -> bool:
    """Lease a board for one pass; False when another pass holds it (compare-and-set)."""
    free = Q(lease_until__isnull=True) | Q(lease_until__lte=now) | Q(lease_owner=owner)
    return Board.objects.filter(free, board_id=board_id).update(
        lease_owner=owner, lease_until=until) == 1


def do_release_lease(board_id: str, owner: str) -> None:
    Board.objects.filter(board_id=board_id, lease_owner=owner).update(
        lease_owner="", lease_until=None)


def do_note_read(board_id: str, now: datetime, error: str = "") -> None:
    fields = {"last_read_error": error[:200]}
    if not error:
        fields["last_read_at"] = now
    Board.objects.filter(board_id=board_id).update(**fields)


def do_note_window(board_id: str, seconds: int | None, retry_at: datetime | None) -> None:
    """The window SuperPipeline accepted (None: refused) and when to ask again."""
    fields: dict = {"window_retry_at": retry_at}
    if seconds is not None:
        fields["window_seconds"] = seconds
    Board.objects.filter(board_id=board_id).update(**fields)
