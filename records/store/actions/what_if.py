"""The dashboard's what-if, worked out ahead: after a sweep, in a task of its own
(superdispatch.tasks.what_if_ahead_task), the board whose rows are missing or the oldest, once
an hour old, is replayed afresh, so that the dashboard reads rows and never replays anything
(records.models.BoardWhatIf says what a row holds).

A board's replay costs about 2 ms of CPU a decision (bench/what_if_ahead.py), so each is
bounded: the newest `MOST_DECISIONS` of the week, one board a run. A run replays the whole
window, or nothing where nothing its rows were worked out from changed (`what_if.window_record`):
what the replay knows before a decision counts from the window's start, which moves with every
new decision, so no decision's replay can be kept from the run before (docs/performance.md,
The dashboard's what-if)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import NamedTuple

from django.db import connection, transaction
from django.db.models import Max

from placement import Rules
from records.models import BoardHour, BoardWhatIf
from records.store import rollups, what_if

WINDOW = timedelta(days=7)  # the decisions a board's what-if replays: the week before it is worked out
MOST_DECISIONS = 1000  # of those, the newest this many at most
EVERY = timedelta(hours=1)  # a board's what-if is worked out again at most this often
RECENT = timedelta(hours=2)  # the ended hours a sweep looks in for a board without rows
BOARDS_PER_RUN = 1  # the most boards one run works out, the longest waiting first
LOCK = 0x5D_0039  # PostgreSQL's advisory lock a board's write holds


def due(now: datetime) -> list[str]:
    """The boards with a decision in the window's ended hours (the rollups') whose what-if is
    missing or at least `EVERY` old, never worked out first, then the longest waiting."""
    boards = set(
        BoardHour.objects.filter(hour__gte=now - WINDOW, hour__lt=now)
        .values_list("board_id", flat=True)
        .distinct()
    )
    computed = dict(
        BoardWhatIf.objects.filter(board_id__in=boards)
        .values("board_id")
        .annotate(at=Max("computed_at"))
        .values_list("board_id", "at")
    )
    waiting = [b for b in boards if b not in computed or now - computed[b] >= EVERY]
    return sorted(waiting, key=lambda b: (b in computed, computed.get(b) or now, b))


def wanted(now: datetime) -> bool:
    """Whether a run has anything to do, asked after every sweep, so cheaply: a board's rows an
    hour old (due again, or gone quiet), or a board with a decision in the last ended hours
    and no rows yet. A board quiet in those hours and without rows (when the rows are new) is
    found by the next run any other board sends."""
    if BoardWhatIf.objects.filter(computed_at__lte=now - EVERY).exists():
        return True
    recent = BoardHour.objects.filter(hour__gte=rollups.hour_of(now) - RECENT, hour__lt=now)
    return recent.exclude(board_id__in=BoardWhatIf.objects.values("board_id")).exists()


def _gone(now: datetime):
    """The rows of boards with no decision left in the window."""
    return BoardWhatIf.objects.exclude(
        board_id__in=BoardHour.objects.filter(hour__gte=now - WINDOW, hour__lt=now).values("board_id")
    )


class Ahead(NamedTuple):
    """What a run did: the boards worked out, and those whose replay failed, with the error's name."""

    done: list[str]
    failed: dict[str, str]


def do_what_if_ahead(now: datetime, rules: Rules, most: int = BOARDS_PER_RUN) -> Ahead:
    """Work out afresh the what-if of at most `most` due boards, each over its newest
    `MOST_DECISIONS` of the window before `now`. A board whose replay fails is passed over for
    the next one due, so it never holds the others up. A board with no decision left in the
    window loses its rows."""
    gone = _gone(now)
    if gone.exists():
        gone.delete()
    done: list[str] = []
    failed: dict[str, str] = {}
    for board_id in due(now):
        if len(done) == most:
            break
        try:
            since = what_if.newest_since(board_id, now - WINDOW, now, MOST_DECISIONS)
            record = what_if.window_record(board_id, rules, since, now)
            # Nothing it is worked out from changed since the rows were: they stand, as a
            # replay would write them again.
            rows = (
                None if record == _record_of(board_id) else what_if.each_formula(board_id, rules, since, now)
            )
        except Exception as err:  # one board's record must not stop the others'
            failed[board_id] = type(err).__name__
            continue
        if _write(board_id, rows, since, now, record):
            done.append(board_id)
    return Ahead(done, failed)


def _record_of(board_id: str) -> str | None:
    """What the board's rows were worked out from (`what_if.window_record`), if it has rows."""
    return BoardWhatIf.objects.filter(board_id=board_id).values_list("record", flat=True).first()


@transaction.atomic
def _write(board_id: str, rows: list[dict] | None, since: datetime, now: datetime, record: str) -> bool:
    """A board's rows replaced in one transaction (`rows` None: kept, over the window given),
    unless another process wrote newer ones meanwhile. One writer at a time: SQLite's one
    writer, PostgreSQL's advisory lock."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [LOCK])
    old = BoardWhatIf.objects.filter(board_id=board_id)
    if old.filter(computed_at__gt=now - EVERY).exists():
        return False
    if rows is None:
        return old.filter(record=record).update(since=since, until=now, computed_at=now) > 0
    old.delete()
    BoardWhatIf.objects.bulk_create(
        [
            BoardWhatIf(
                board_id=board_id,
                position=position,
                since=since,
                until=now,
                computed_at=now,
                record=record,
                **row,
            )
            for position, row in enumerate(rows)
        ]
    )
    return True
