"""The rollups' writes: a board's stale hours worked out afresh from its decisions
(records.store.rollups counts them; records.models.rollups says what a row holds)."""

from __future__ import annotations

from datetime import datetime, timezone

from django.db import connection, transaction

from records.models import AgentHour, BoardHour, Decision, StaleHour
from records.store import rollups

CHUNK = 500  # boards worked out in one transaction
LOCK = 0x5D_0038  # PostgreSQL's advisory lock that one refresh at a time holds


def do_roll_up(now: datetime) -> int:
    """Work out again the rollups of every stale board's hour that ended by `now` (the hour
    `now` is in is read from the decisions); returns how many board-hours. Cheap when none is
    stale: one look at an index."""
    if not rollups.stale_before(now):
        return 0
    stale: dict[datetime, set[str]] = {}
    for board_id, hour in StaleHour.objects.filter(hour__lt=rollups.hour_of(now)).values_list(
        "board_id", "hour"
    ):
        stale.setdefault(hour, set()).add(board_id)
    done = 0
    for hour, boards in sorted(stale.items()):
        ordered = sorted(boards)
        for i in range(0, len(ordered), CHUNK):
            done += do_roll_up_hour(hour, ordered[i : i + CHUNK])
    return done


@transaction.atomic
def do_roll_up_hour(hour: datetime, boards: list[str]) -> int:
    """One hour of these boards worked out afresh, in one transaction.

    The stale marks go first: a decision written meanwhile marks its hour again (on PostgreSQL
    its trigger waits on this transaction's delete of the mark, or this delete waits on it),
    so it is counted now or on the next refresh, never lost. One refresh at a time: SQLite's
    one writer, PostgreSQL's advisory lock."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [LOCK])
    marks = StaleHour.objects.filter(hour=hour, board_id__in=boards)
    taken = sorted(marks.values_list("board_id", flat=True))
    if not taken:
        return 0  # another refresh worked them out first
    marks.delete()
    BoardHour.objects.filter(hour=hour, board_id__in=taken).delete()
    AgentHour.objects.filter(hour=hour, board_id__in=taken).delete()
    decisions = Decision.objects.filter(
        created_at__gte=hour, created_at__lt=hour + rollups.HOUR, board_id__in=taken
    )
    BoardHour.objects.bulk_create(
        [BoardHour(hour=row.pop("t"), **row) for row in rollups.board_rows(decisions)], batch_size=1000
    )
    AgentHour.objects.bulk_create(
        [AgentHour(hour=row.pop("t"), **row) for row in rollups.agent_rows(decisions)], batch_size=1000
    )
    return len(taken)


def after_sweep(sender=None, now: datetime | None = None, **_) -> None:
    """Listens for `records.store.signals.sweep_finished`: the hours a sweep left stale are
    worked out once they have ended."""
    do_roll_up(now or datetime.now(timezone.utc))
